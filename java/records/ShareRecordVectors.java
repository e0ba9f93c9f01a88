// Apache Kafka 4.3.1's own encoding and decoding of the share group (KIP-932) records, for tidelog's codec
// tests: the group coordinator's records 9-15 of `__consumer_offsets` (tests/groups/test_share_records.py)
// and the share coordinator's records of `__share_group_state` (tests/share/test_state_records.py).
//
//   java -cp "$(cat java/records/target/classpath.txt)" java/records/ShareRecordVectors.java group-vectors
//       builds representative records with Kafka's generated classes and prints, one line each,
//       "<name> <key hex> <value hex or ->" as Kafka's GroupCoordinatorRecordSerde serializes them.
//   ... ShareRecordVectors.java state-vectors
//       the same for the share coordinator's records, serialized by ShareCoordinatorRecordSerde.
//   ... ShareRecordVectors.java group-decode < lines      (or state-decode)
//       reads "<key hex> <value hex or ->" lines, deserializes each with the same serde and prints one
//       JSON line with every field Kafka read (defaults included) and Kafka's re-serialization of it:
//       {"type": 10, "key": {...}, "value": {...} | null, "keyHex": "...", "valueHex": "..." | null},
//       or {"error": "..."} when Kafka refuses the bytes.
//
// The classpath comes from java/records/pom.xml:
//   mvn -B -q -f java/records/pom.xml dependency:build-classpath -Dmdep.outputFile=target/classpath.txt

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupPartitionMetadataValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupCurrentMemberAssignmentKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupCurrentMemberAssignmentValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupMemberMetadataKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupMemberMetadataValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupStatePartitionMetadataKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupStatePartitionMetadataValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupTargetAssignmentMemberKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupTargetAssignmentMetadataKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupTargetAssignmentMetadataValue;
import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;
import org.apache.kafka.coordinator.share.generated.ShareSnapshotKey;
import org.apache.kafka.coordinator.share.generated.ShareSnapshotValue;
import org.apache.kafka.coordinator.share.generated.ShareUpdateKey;
import org.apache.kafka.coordinator.share.generated.ShareUpdateValue;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public final class ShareRecordVectors {
    private static final GroupCoordinatorRecordSerde GROUP_SERDE = new GroupCoordinatorRecordSerde();
    private static final ShareCoordinatorRecordSerde STATE_SERDE = new ShareCoordinatorRecordSerde();
    private static final HexFormat HEX = HexFormat.of();

    // The topic ids of the vectors (the Python tests use the same).
    static final Uuid TOPIC_A = uuid("0d5a3b2c-4e6f-4a1b-9c8d-7e6f5a4b3c2d");
    static final Uuid TOPIC_B = uuid("f1e2d3c4-b5a6-4978-8695-a4b3c2d1e0ff");

    public static void main(String[] args) throws Exception {
        String mode = args.length == 1 ? args[0] : "";
        switch (mode) {
            case "group-vectors" -> groupVectors();
            case "state-vectors" -> stateVectors();
            case "group-decode" -> decode(GROUP_SERDE);
            case "state-decode" -> decode(STATE_SERDE);
            default -> {
                System.err.println("usage: ShareRecordVectors group-vectors | state-vectors"
                    + " | group-decode | state-decode < lines of '<key hex> <value hex or ->'");
                System.exit(2);
            }
        }
    }

    static Uuid uuid(String s) {
        UUID u = UUID.fromString(s);
        return new Uuid(u.getMostSignificantBits(), u.getLeastSignificantBits());
    }

    static ApiMessageAndVersion v0(ApiMessage m) {
        return new ApiMessageAndVersion(m, (short) 0);
    }

    static List<Integer> ints(int... xs) {
        List<Integer> out = new ArrayList<>();
        for (int x : xs) out.add(x);
        return out;
    }

    static List<Integer> range(int from, int to) {
        List<Integer> out = new ArrayList<>();
        for (int i = from; i < to; i++) out.add(i);
        return out;
    }

    static byte[] bytes(int... xs) {
        byte[] out = new byte[xs.length];
        for (int i = 0; i < xs.length; i++) out[i] = (byte) xs[i];
        return out;
    }

    // ---- vectors ------------------------------------------------------------------------------

    static void emit(CoordinatorRecordSerde serde, String name, CoordinatorRecord record) {
        byte[] key = serde.serializeKey(record);
        byte[] value = serde.serializeValue(record);
        emit(name, key, value);
    }

    static void emit(String name, byte[] key, byte[] value) {
        System.out.println(name + " " + HEX.formatHex(key) + " " + (value == null ? "-" : HEX.formatHex(value)));
    }

    static void group(String name, CoordinatorRecord record) {
        emit(GROUP_SERDE, name, record);
    }

    static ShareGroupTargetAssignmentMemberValue.TopicPartition targetTp(Uuid topicId, List<Integer> partitions) {
        return new ShareGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(topicId).setPartitions(partitions);
    }

    static ShareGroupCurrentMemberAssignmentValue.TopicPartitions currentTp(Uuid topicId, List<Integer> partitions) {
        return new ShareGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(topicId).setPartitions(partitions);
    }

    static ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo tpInfo(Uuid topicId, String name, List<Integer> partitions) {
        return new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo()
            .setTopicId(topicId).setTopicName(name).setPartitions(partitions);
    }

    static ShareGroupStatePartitionMetadataValue.TopicInfo topicInfo(Uuid topicId, String name) {
        return new ShareGroupStatePartitionMetadataValue.TopicInfo().setTopicId(topicId).setTopicName(name);
    }

    static void groupVectors() {
        // 9 ShareGroupPartitionMetadata: written only by Kafka 4.0; 4.3.1 has no class for it (and its serde
        // refuses the type). Its key is the other group keys' layout under type 9, and Kafka 4.0's value
        // has ConsumerGroupPartitionMetadataValue's layout, so 4.3.1's classes print the bytes 4.0 wrote
        // (checked once against kafka-group-coordinator-4.0.0's ShareGroupPartitionMetadataKey/Value).
        byte[] pk = MessageUtil.toVersionPrefixedBytes((short) 9, new ShareGroupMetadataKey().setGroupId("grp"));
        emit("partition_metadata", pk, MessageUtil.toVersionPrefixedBytes((short) 0,
            new ConsumerGroupPartitionMetadataValue().setTopics(List.of(
                new ConsumerGroupPartitionMetadataValue.TopicMetadata()
                    .setTopicId(TOPIC_A).setTopicName("orders").setNumPartitions(3)))));
        emit("partition_metadata_tombstone", pk, null);

        // 10 ShareGroupMemberMetadata
        ShareGroupMemberMetadataKey mk = new ShareGroupMemberMetadataKey().setGroupId("grp").setMemberId("member-1");
        group("member", CoordinatorRecord.record(mk, v0(new ShareGroupMemberMetadataValue()
            .setRackId(null)
            .setClientId("client-1")
            .setClientHost("/10.0.0.1")
            .setSubscribedTopicNames(List.of("orders", "payments")))));
        group("member_rack", CoordinatorRecord.record(
            new ShareGroupMemberMetadataKey().setGroupId("grüppe-日本").setMemberId("m-ü"),
            v0(new ShareGroupMemberMetadataValue()
                .setRackId("rack-a")
                .setClientId("")
                .setClientHost("")
                .setSubscribedTopicNames(List.of()))));
        // Kafka's default rack id is "", not null: both are ordinary values.
        group("member_empty_rack", CoordinatorRecord.record(
            new ShareGroupMemberMetadataKey().setGroupId("").setMemberId(""),
            v0(new ShareGroupMemberMetadataValue()
                .setRackId("")
                .setClientId("c")
                .setClientHost("h")
                .setSubscribedTopicNames(List.of("t")))));
        List<String> manyTopics = new ArrayList<>();
        for (int i = 0; i < 130; i++) manyTopics.add("t" + i);
        group("member_long", CoordinatorRecord.record(mk, v0(new ShareGroupMemberMetadataValue()
            .setRackId("r".repeat(130))
            .setClientId("c".repeat(200))
            .setClientHost("h")
            .setSubscribedTopicNames(manyTopics))));
        group("member_tombstone", CoordinatorRecord.tombstone(mk));

        // 11 ShareGroupMetadata: MetadataHash is an ordinary field (4.1+), written even when 0.
        ShareGroupMetadataKey gk = new ShareGroupMetadataKey().setGroupId("grp");
        group("metadata", CoordinatorRecord.record(gk, v0(new ShareGroupMetadataValue().setEpoch(5).setMetadataHash(0))));
        group("metadata_hash", CoordinatorRecord.record(
            new ShareGroupMetadataKey().setGroupId("grüppe-日本"),
            v0(new ShareGroupMetadataValue().setEpoch(42).setMetadataHash(0x1234567890ABCDEFL))));
        group("metadata_extremes", CoordinatorRecord.record(
            new ShareGroupMetadataKey().setGroupId(""),
            v0(new ShareGroupMetadataValue().setEpoch(Integer.MIN_VALUE).setMetadataHash(Long.MIN_VALUE))));
        group("metadata_tombstone", CoordinatorRecord.tombstone(gk));

        // 12 ShareGroupTargetAssignmentMetadata
        ShareGroupTargetAssignmentMetadataKey tk = new ShareGroupTargetAssignmentMetadataKey().setGroupId("grp");
        group("target_metadata", CoordinatorRecord.record(tk,
            v0(new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(7))));
        group("target_metadata_timestamp", CoordinatorRecord.record(tk,
            v0(new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(8).setAssignmentTimestamp(1760000000000L))));
        group("target_metadata_extremes", CoordinatorRecord.record(tk,
            v0(new ShareGroupTargetAssignmentMetadataValue()
                .setAssignmentEpoch(Integer.MAX_VALUE).setAssignmentTimestamp(Long.MIN_VALUE))));
        group("target_metadata_tombstone", CoordinatorRecord.tombstone(tk));

        // 13 ShareGroupTargetAssignmentMember
        ShareGroupTargetAssignmentMemberKey tmk =
            new ShareGroupTargetAssignmentMemberKey().setGroupId("grp").setMemberId("member-1");
        group("target_member", CoordinatorRecord.record(tmk, v0(new ShareGroupTargetAssignmentMemberValue()
            .setTopicPartitions(List.of(
                targetTp(TOPIC_A, ints(0, 2, 4)),
                targetTp(TOPIC_B, ints()),
                targetTp(Uuid.ZERO_UUID, ints(Integer.MAX_VALUE, -1)))))));
        group("target_member_empty", CoordinatorRecord.record(tmk,
            v0(new ShareGroupTargetAssignmentMemberValue().setTopicPartitions(List.of()))));
        group("target_member_tombstone", CoordinatorRecord.tombstone(tmk));

        // 14 ShareGroupCurrentMemberAssignment
        ShareGroupCurrentMemberAssignmentKey ck =
            new ShareGroupCurrentMemberAssignmentKey().setGroupId("grp").setMemberId("member-1");
        group("current_assignment", CoordinatorRecord.record(ck, v0(new ShareGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(10)
            .setPreviousMemberEpoch(9)
            .setState((byte) 0)
            .setAssignedPartitions(List.of(currentTp(TOPIC_A, ints(0, 1)), currentTp(TOPIC_B, ints(7)))))));
        group("current_assignment_none", CoordinatorRecord.record(ck, v0(new ShareGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(0)
            .setPreviousMemberEpoch(0)
            .setState((byte) 127)
            .setAssignedPartitions(List.of()))));
        group("current_assignment_long", CoordinatorRecord.record(ck, v0(new ShareGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(Integer.MAX_VALUE)
            .setPreviousMemberEpoch(Integer.MIN_VALUE)
            .setState((byte) -128)
            .setAssignedPartitions(List.of(currentTp(TOPIC_A, range(0, 70)), currentTp(Uuid.ZERO_UUID, ints()))))));
        group("current_assignment_tombstone", CoordinatorRecord.tombstone(ck));

        // 15 ShareGroupStatePartitionMetadata
        ShareGroupStatePartitionMetadataKey sk = new ShareGroupStatePartitionMetadataKey().setGroupId("grp");
        group("state_partition_metadata", CoordinatorRecord.record(sk, v0(new ShareGroupStatePartitionMetadataValue()
            .setInitializingTopics(List.of(tpInfo(TOPIC_B, "payments", ints(3, 4))))
            .setInitializedTopics(List.of(tpInfo(TOPIC_A, "orders", ints(0, 1, 2)), tpInfo(Uuid.ZERO_UUID, "", ints())))
            .setDeletingTopics(List.of(topicInfo(uuid("00000000-0000-0000-0000-000000000001"), "gone-ü"))))));
        group("state_partition_metadata_empty", CoordinatorRecord.record(sk, v0(new ShareGroupStatePartitionMetadataValue()
            .setInitializingTopics(List.of())
            .setInitializedTopics(List.of())
            .setDeletingTopics(List.of()))));
        group("state_partition_metadata_long", CoordinatorRecord.record(sk, v0(new ShareGroupStatePartitionMetadataValue()
            .setInitializingTopics(List.of())
            .setInitializedTopics(List.of(tpInfo(TOPIC_A, "o".repeat(150), range(0, 70))))
            .setDeletingTopics(List.of(topicInfo(TOPIC_B, "x".repeat(127)), topicInfo(TOPIC_A, "y".repeat(128)))))));
        group("state_partition_metadata_tombstone", CoordinatorRecord.tombstone(sk));

        // Tagged fields a later Kafka might add (unknown to 4.3.1 too): a reader must skip them.
        ShareGroupMetadataValue um = new ShareGroupMetadataValue().setEpoch(6).setMetadataHash(99);
        um.unknownTaggedFields().add(new RawTaggedField(3, bytes(1, 2, 3)));
        group("unknown_tags_metadata", CoordinatorRecord.record(gk, v0(um)));
        ShareGroupTargetAssignmentMetadataValue ut =
            new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(9).setAssignmentTimestamp(1);
        ut.unknownTaggedFields().add(new RawTaggedField(200, new byte[0]));
        group("unknown_tags_target_metadata", CoordinatorRecord.record(tk, v0(ut)));
        ShareGroupMemberMetadataValue uv = new ShareGroupMemberMetadataValue()
            .setRackId(null).setClientId("c").setClientHost("h").setSubscribedTopicNames(List.of("t"));
        uv.unknownTaggedFields().add(new RawTaggedField(0, bytes(0xaa)));
        uv.unknownTaggedFields().add(new RawTaggedField(130, bytes(0xbb, 0xcc)));
        group("unknown_tags_member", CoordinatorRecord.record(mk, v0(uv)));
        ShareGroupTargetAssignmentMemberValue.TopicPartition utm = targetTp(TOPIC_A, ints(0));
        utm.unknownTaggedFields().add(new RawTaggedField(0, bytes(5, 5, 5)));
        ShareGroupTargetAssignmentMemberValue utmv = new ShareGroupTargetAssignmentMemberValue().setTopicPartitions(List.of(utm));
        utmv.unknownTaggedFields().add(new RawTaggedField(7, bytes(7)));
        group("unknown_tags_target_member", CoordinatorRecord.record(tmk, v0(utmv)));
        ShareGroupCurrentMemberAssignmentValue.TopicPartitions uctp = currentTp(TOPIC_B, ints(5));
        uctp.unknownTaggedFields().add(new RawTaggedField(1, bytes()));
        ShareGroupCurrentMemberAssignmentValue ucv = new ShareGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(4).setPreviousMemberEpoch(3).setState((byte) 0).setAssignedPartitions(List.of(uctp));
        ucv.unknownTaggedFields().add(new RawTaggedField(0, bytes(1)));
        group("unknown_tags_current_assignment", CoordinatorRecord.record(ck, v0(ucv)));
        ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo usi = tpInfo(TOPIC_A, "a", ints(1));
        usi.unknownTaggedFields().add(new RawTaggedField(2, bytes(2, 2)));
        ShareGroupStatePartitionMetadataValue.TopicInfo usd = topicInfo(TOPIC_B, "b");
        usd.unknownTaggedFields().add(new RawTaggedField(0, bytes(0)));
        ShareGroupStatePartitionMetadataValue usv = new ShareGroupStatePartitionMetadataValue()
            .setInitializingTopics(List.of(usi)).setInitializedTopics(List.of()).setDeletingTopics(List.of(usd));
        usv.unknownTaggedFields().add(new RawTaggedField(9, bytes(9, 9)));
        group("unknown_tags_state_partition_metadata", CoordinatorRecord.record(sk, v0(usv)));
    }

    static void state(String name, CoordinatorRecord record) {
        emit(STATE_SERDE, name, record);
    }

    static ShareSnapshotValue.StateBatch snapshotBatch(long first, long last, int state, int count) {
        return new ShareSnapshotValue.StateBatch()
            .setFirstOffset(first).setLastOffset(last).setDeliveryState((byte) state).setDeliveryCount((short) count);
    }

    static ShareUpdateValue.StateBatch updateBatch(long first, long last, int state, int count) {
        return new ShareUpdateValue.StateBatch()
            .setFirstOffset(first).setLastOffset(last).setDeliveryState((byte) state).setDeliveryCount((short) count);
    }

    static void stateVectors() {
        // 0 ShareSnapshot
        ShareSnapshotKey sk = new ShareSnapshotKey().setGroupId("grp").setTopicId(TOPIC_A).setPartition(3);
        state("snapshot", CoordinatorRecord.record(sk, v0(new ShareSnapshotValue()
            .setSnapshotEpoch(2)
            .setStateEpoch(1)
            .setLeaderEpoch(5)
            .setStartOffset(100)
            .setCreateTimestamp(1760000000000L)
            .setWriteTimestamp(1760000001234L)
            .setStateBatches(List.of(snapshotBatch(100, 109, 0, 1), snapshotBatch(110, 110, 2, 3), snapshotBatch(111, 120, 4, 5))))));
        state("snapshot_delivery_complete_count", CoordinatorRecord.record(sk, v0(new ShareSnapshotValue()
            .setSnapshotEpoch(3)
            .setStateEpoch(1)
            .setLeaderEpoch(5)
            .setStartOffset(200)
            .setDeliveryCompleteCount(7)
            .setCreateTimestamp(1760000000000L)
            .setWriteTimestamp(1760000005678L)
            .setStateBatches(List.of(snapshotBatch(203, 209, 2, 1))))));
        // 0 is not the default (-1): it is written.
        state("snapshot_delivery_complete_count_zero", CoordinatorRecord.record(sk, v0(new ShareSnapshotValue()
            .setSnapshotEpoch(0)
            .setStateEpoch(0)
            .setLeaderEpoch(0)
            .setStartOffset(0)
            .setDeliveryCompleteCount(0)
            .setCreateTimestamp(0)
            .setWriteTimestamp(0)
            .setStateBatches(List.of()))));
        state("snapshot_extremes", CoordinatorRecord.record(
            new ShareSnapshotKey().setGroupId("grüppe-日本").setTopicId(Uuid.ZERO_UUID).setPartition(Integer.MAX_VALUE),
            v0(new ShareSnapshotValue()
                .setSnapshotEpoch(Integer.MAX_VALUE)
                .setStateEpoch(Integer.MIN_VALUE)
                .setLeaderEpoch(-1)
                .setStartOffset(Long.MAX_VALUE)
                .setDeliveryCompleteCount(Integer.MIN_VALUE)
                .setCreateTimestamp(Long.MIN_VALUE)
                .setWriteTimestamp(-1)
                .setStateBatches(List.of(
                    snapshotBatch(Long.MIN_VALUE, Long.MAX_VALUE, -128, Short.MIN_VALUE),
                    snapshotBatch(-1, -1, 127, Short.MAX_VALUE))))));
        List<ShareSnapshotValue.StateBatch> many = new ArrayList<>();
        for (int i = 0; i < 70; i++) many.add(snapshotBatch(1000L * i, 1000L * i + 999, i % 5, i));
        state("snapshot_long", CoordinatorRecord.record(
            new ShareSnapshotKey().setGroupId("g".repeat(200)).setTopicId(TOPIC_B).setPartition(0),
            v0(new ShareSnapshotValue()
                .setSnapshotEpoch(70)
                .setStateEpoch(2)
                .setLeaderEpoch(9)
                .setStartOffset(0)
                .setDeliveryCompleteCount(300)
                .setCreateTimestamp(1)
                .setWriteTimestamp(2)
                .setStateBatches(many))));
        // Kafka writes every share-partition state tombstone with a ShareSnapshot key.
        state("snapshot_tombstone", CoordinatorRecord.tombstone(sk));

        // 1 ShareUpdate
        ShareUpdateKey uk = new ShareUpdateKey().setGroupId("grp").setTopicId(TOPIC_A).setPartition(3);
        state("update", CoordinatorRecord.record(uk, v0(new ShareUpdateValue()
            .setSnapshotEpoch(2)
            .setLeaderEpoch(5)
            .setStartOffset(110)
            .setStateBatches(List.of(updateBatch(110, 110, 2, 1), updateBatch(111, 115, 0, 2))))));
        // StartOffset -1: the start offset is not being updated.
        state("update_no_start_offset", CoordinatorRecord.record(uk, v0(new ShareUpdateValue()
            .setSnapshotEpoch(2)
            .setLeaderEpoch(5)
            .setStartOffset(-1)
            .setDeliveryCompleteCount(12)
            .setStateBatches(List.of(updateBatch(116, 116, 4, 6))))));
        state("update_empty", CoordinatorRecord.record(
            new ShareUpdateKey().setGroupId("").setTopicId(Uuid.ZERO_UUID).setPartition(-1),
            v0(new ShareUpdateValue()
                .setSnapshotEpoch(Integer.MIN_VALUE)
                .setLeaderEpoch(Integer.MAX_VALUE)
                .setStartOffset(Long.MIN_VALUE)
                .setDeliveryCompleteCount(Integer.MAX_VALUE)
                .setStateBatches(List.of()))));
        // Kafka never writes one (its tombstones use ShareSnapshot keys), but its serde reads it.
        state("update_tombstone", CoordinatorRecord.tombstone(uk));

        // Tagged fields a later Kafka might add (unknown to 4.3.1 too): a reader must skip them.
        ShareSnapshotValue.StateBatch usb = snapshotBatch(5, 6, 2, 1);
        usb.unknownTaggedFields().add(new RawTaggedField(0, bytes(1, 2)));
        ShareSnapshotValue usv = new ShareSnapshotValue()
            .setSnapshotEpoch(1).setStateEpoch(1).setLeaderEpoch(1).setStartOffset(5)
            .setDeliveryCompleteCount(1).setCreateTimestamp(10).setWriteTimestamp(20)
            .setStateBatches(List.of(usb));
        usv.unknownTaggedFields().add(new RawTaggedField(1, bytes(0xaa)));
        usv.unknownTaggedFields().add(new RawTaggedField(300, bytes()));
        state("unknown_tags_snapshot", CoordinatorRecord.record(sk, v0(usv)));
        ShareUpdateValue.StateBatch uub = updateBatch(7, 7, 4, 2);
        uub.unknownTaggedFields().add(new RawTaggedField(5, bytes(5)));
        ShareUpdateValue uuv = new ShareUpdateValue()
            .setSnapshotEpoch(1).setLeaderEpoch(1).setStartOffset(-1).setStateBatches(List.of(uub));
        uuv.unknownTaggedFields().add(new RawTaggedField(2, bytes(0, 0, 0, 0)));
        state("unknown_tags_update", CoordinatorRecord.record(uk, v0(uuv)));
    }

    // ---- decode -------------------------------------------------------------------------------

    static void decode(CoordinatorRecordSerde serde) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.strip();
            if (line.isEmpty()) continue;
            String[] parts = line.split(" ");
            StringBuilder out = new StringBuilder();
            try {
                byte[] key = HEX.parseHex(parts[0]);
                byte[] value = parts.length < 2 || parts[1].equals("-") ? null : HEX.parseHex(parts[1]);
                CoordinatorRecord record = serde.deserialize(ByteBuffer.wrap(key), value == null ? null : ByteBuffer.wrap(value));
                byte[] keyAgain = serde.serializeKey(record);
                byte[] valueAgain = serde.serializeValue(record);
                out.append("{\"type\":").append(record.key().apiKey());
                out.append(",\"key\":");
                key(out, record.key());
                out.append(",\"value\":");
                if (record.value() == null) {
                    out.append("null");
                } else {
                    if (record.value().version() != 0) throw new IllegalStateException("value version " + record.value().version());
                    value(out, record.value().message());
                }
                out.append(",\"keyHex\":");
                str(out, HEX.formatHex(keyAgain));
                out.append(",\"valueHex\":");
                if (valueAgain == null) out.append("null"); else str(out, HEX.formatHex(valueAgain));
                out.append("}");
            } catch (RuntimeException e) {
                out.setLength(0);
                out.append("{\"error\":");
                str(out, e.getClass().getSimpleName() + ": " + e.getMessage());
                out.append("}");
            }
            System.out.println(out);
        }
    }

    static void key(StringBuilder out, ApiMessage key) {
        if (key instanceof ShareGroupMemberMetadataKey k) {
            groupMember(out, k.groupId(), k.memberId());
        } else if (key instanceof ShareGroupMetadataKey k) {
            groupOnly(out, k.groupId());
        } else if (key instanceof ShareGroupTargetAssignmentMetadataKey k) {
            groupOnly(out, k.groupId());
        } else if (key instanceof ShareGroupTargetAssignmentMemberKey k) {
            groupMember(out, k.groupId(), k.memberId());
        } else if (key instanceof ShareGroupCurrentMemberAssignmentKey k) {
            groupMember(out, k.groupId(), k.memberId());
        } else if (key instanceof ShareGroupStatePartitionMetadataKey k) {
            groupOnly(out, k.groupId());
        } else if (key instanceof ShareSnapshotKey k) {
            sharePartition(out, k.groupId(), k.topicId(), k.partition());
        } else if (key instanceof ShareUpdateKey k) {
            sharePartition(out, k.groupId(), k.topicId(), k.partition());
        } else {
            // a record of another kind: the tests never send one
            throw new IllegalStateException("not a share group record key: " + key.getClass().getSimpleName());
        }
    }

    static void groupOnly(StringBuilder out, String groupId) {
        out.append("{\"groupId\":"); str(out, groupId); out.append("}");
    }

    static void groupMember(StringBuilder out, String groupId, String memberId) {
        out.append("{\"groupId\":"); str(out, groupId);
        out.append(",\"memberId\":"); str(out, memberId); out.append("}");
    }

    static void sharePartition(StringBuilder out, String groupId, Uuid topicId, int partition) {
        out.append("{\"groupId\":"); str(out, groupId);
        out.append(",\"topicId\":"); topicId(out, topicId);
        out.append(",\"partition\":").append(partition).append("}");
    }

    static void value(StringBuilder out, ApiMessage value) {
        if (value instanceof ShareGroupMemberMetadataValue v) {
            out.append("{\"rackId\":"); str(out, v.rackId());
            out.append(",\"clientId\":"); str(out, v.clientId());
            out.append(",\"clientHost\":"); str(out, v.clientHost());
            out.append(",\"subscribedTopicNames\":"); strs(out, v.subscribedTopicNames());
            out.append("}");
        } else if (value instanceof ShareGroupMetadataValue v) {
            out.append("{\"epoch\":").append(v.epoch()).append(",\"metadataHash\":").append(v.metadataHash()).append("}");
        } else if (value instanceof ShareGroupTargetAssignmentMetadataValue v) {
            out.append("{\"assignmentEpoch\":").append(v.assignmentEpoch());
            out.append(",\"assignmentTimestamp\":").append(v.assignmentTimestamp()).append("}");
        } else if (value instanceof ShareGroupTargetAssignmentMemberValue v) {
            out.append("{\"topicPartitions\":[");
            for (int i = 0; i < v.topicPartitions().size(); i++) {
                ShareGroupTargetAssignmentMemberValue.TopicPartition tp = v.topicPartitions().get(i);
                if (i > 0) out.append(",");
                out.append("{\"topicId\":"); topicId(out, tp.topicId());
                out.append(",\"partitions\":"); ints(out, tp.partitions()); out.append("}");
            }
            out.append("]}");
        } else if (value instanceof ShareGroupCurrentMemberAssignmentValue v) {
            out.append("{\"memberEpoch\":").append(v.memberEpoch());
            out.append(",\"previousMemberEpoch\":").append(v.previousMemberEpoch());
            out.append(",\"state\":").append(v.state());
            out.append(",\"assignedPartitions\":[");
            for (int i = 0; i < v.assignedPartitions().size(); i++) {
                ShareGroupCurrentMemberAssignmentValue.TopicPartitions tp = v.assignedPartitions().get(i);
                if (i > 0) out.append(",");
                out.append("{\"topicId\":"); topicId(out, tp.topicId());
                out.append(",\"partitions\":"); ints(out, tp.partitions()); out.append("}");
            }
            out.append("]}");
        } else if (value instanceof ShareGroupStatePartitionMetadataValue v) {
            out.append("{\"initializingTopics\":"); topicPartitionsInfos(out, v.initializingTopics());
            out.append(",\"initializedTopics\":"); topicPartitionsInfos(out, v.initializedTopics());
            out.append(",\"deletingTopics\":[");
            for (int i = 0; i < v.deletingTopics().size(); i++) {
                ShareGroupStatePartitionMetadataValue.TopicInfo t = v.deletingTopics().get(i);
                if (i > 0) out.append(",");
                out.append("{\"topicId\":"); topicId(out, t.topicId());
                out.append(",\"topicName\":"); str(out, t.topicName()); out.append("}");
            }
            out.append("]}");
        } else if (value instanceof ShareSnapshotValue v) {
            out.append("{\"snapshotEpoch\":").append(v.snapshotEpoch());
            out.append(",\"stateEpoch\":").append(v.stateEpoch());
            out.append(",\"leaderEpoch\":").append(v.leaderEpoch());
            out.append(",\"startOffset\":").append(v.startOffset());
            out.append(",\"deliveryCompleteCount\":").append(v.deliveryCompleteCount());
            out.append(",\"createTimestamp\":").append(v.createTimestamp());
            out.append(",\"writeTimestamp\":").append(v.writeTimestamp());
            out.append(",\"stateBatches\":[");
            for (int i = 0; i < v.stateBatches().size(); i++) {
                ShareSnapshotValue.StateBatch b = v.stateBatches().get(i);
                if (i > 0) out.append(",");
                stateBatch(out, b.firstOffset(), b.lastOffset(), b.deliveryState(), b.deliveryCount());
            }
            out.append("]}");
        } else if (value instanceof ShareUpdateValue v) {
            out.append("{\"snapshotEpoch\":").append(v.snapshotEpoch());
            out.append(",\"leaderEpoch\":").append(v.leaderEpoch());
            out.append(",\"startOffset\":").append(v.startOffset());
            out.append(",\"deliveryCompleteCount\":").append(v.deliveryCompleteCount());
            out.append(",\"stateBatches\":[");
            for (int i = 0; i < v.stateBatches().size(); i++) {
                ShareUpdateValue.StateBatch b = v.stateBatches().get(i);
                if (i > 0) out.append(",");
                stateBatch(out, b.firstOffset(), b.lastOffset(), b.deliveryState(), b.deliveryCount());
            }
            out.append("]}");
        } else {
            throw new IllegalStateException("not a share group record value: " + value.getClass().getSimpleName());
        }
    }

    static void topicPartitionsInfos(StringBuilder out, List<ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo> ts) {
        out.append("[");
        for (int i = 0; i < ts.size(); i++) {
            ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo t = ts.get(i);
            if (i > 0) out.append(",");
            out.append("{\"topicId\":"); topicId(out, t.topicId());
            out.append(",\"topicName\":"); str(out, t.topicName());
            out.append(",\"partitions\":"); ints(out, t.partitions()); out.append("}");
        }
        out.append("]");
    }

    static void stateBatch(StringBuilder out, long first, long last, byte state, short count) {
        out.append("{\"firstOffset\":").append(first);
        out.append(",\"lastOffset\":").append(last);
        out.append(",\"deliveryState\":").append(state);
        out.append(",\"deliveryCount\":").append(count).append("}");
    }

    static void topicId(StringBuilder out, Uuid id) {
        str(out, new UUID(id.getMostSignificantBits(), id.getLeastSignificantBits()).toString());
    }

    static void ints(StringBuilder out, List<Integer> xs) {
        out.append("[");
        for (int i = 0; i < xs.size(); i++) {
            if (i > 0) out.append(",");
            out.append(xs.get(i));
        }
        out.append("]");
    }

    static void strs(StringBuilder out, List<String> xs) {
        out.append("[");
        for (int i = 0; i < xs.size(); i++) {
            if (i > 0) out.append(",");
            str(out, xs.get(i));
        }
        out.append("]");
    }

    static void str(StringBuilder out, String s) {
        if (s == null) {
            out.append("null");
            return;
        }
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }
}
