// Apache Kafka 4.3.1's own encoding and decoding of the KIP-848 consumer group records of
// `__consumer_offsets`, for tidelog's codec tests (tests/groups/test_consumer_records.py).
//
//   java -cp "$(cat java/records/target/classpath.txt)" java/records/RecordVectors.java vectors
//       builds representative records with Kafka's generated classes and prints, one line each,
//       "<name> <key hex> <value hex or ->" as Kafka's GroupCoordinatorRecordSerde serializes them.
//   ... RecordVectors.java decode < lines
//       reads "<key hex> <value hex or ->" lines, deserializes each with the same serde and prints one
//       JSON line with every field Kafka read (defaults included) and Kafka's re-serialization of it:
//       {"type": 5, "key": {...}, "value": {...} | null, "keyHex": "...", "valueHex": "..." | null},
//       or {"error": "..."} when Kafka refuses the bytes.
//
// The classpath comes from java/records/pom.xml:
//   mvn -B -q -f java/records/pom.xml dependency:build-classpath -Dmdep.outputFile=target/classpath.txt

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupCurrentMemberAssignmentKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupCurrentMemberAssignmentValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMemberMetadataKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMemberMetadataValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupPartitionMetadataKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupPartitionMetadataValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupRegularExpressionKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupRegularExpressionValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMemberKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMetadataKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMetadataValue;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public final class RecordVectors {
    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    private static final HexFormat HEX = HexFormat.of();

    // The topic ids of the vectors (tests/groups/test_consumer_records.py uses the same).
    static final Uuid TOPIC_A = uuid("0d5a3b2c-4e6f-4a1b-9c8d-7e6f5a4b3c2d");
    static final Uuid TOPIC_B = uuid("f1e2d3c4-b5a6-4978-8695-a4b3c2d1e0ff");

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("vectors")) {
            vectors();
        } else if (args.length == 1 && args[0].equals("decode")) {
            decode();
        } else {
            System.err.println("usage: RecordVectors vectors | decode < lines of '<key hex> <value hex or ->'");
            System.exit(2);
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

    static void emit(String name, CoordinatorRecord record) {
        byte[] key = SERDE.serializeKey(record);
        byte[] value = SERDE.serializeValue(record);
        System.out.println(name + " " + HEX.formatHex(key) + " " + (value == null ? "-" : HEX.formatHex(value)));
    }

    static void vectors() {
        // 3 ConsumerGroupMetadata
        ConsumerGroupMetadataKey gk = new ConsumerGroupMetadataKey().setGroupId("grp");
        emit("metadata", CoordinatorRecord.record(gk, v0(new ConsumerGroupMetadataValue().setEpoch(5))));
        emit("metadata_hash", CoordinatorRecord.record(
            new ConsumerGroupMetadataKey().setGroupId("grüppe-日本"),
            v0(new ConsumerGroupMetadataValue().setEpoch(42).setMetadataHash(0x1234567890ABCDEFL))));
        emit("metadata_extremes", CoordinatorRecord.record(
            new ConsumerGroupMetadataKey().setGroupId(""),
            v0(new ConsumerGroupMetadataValue().setEpoch(Integer.MIN_VALUE).setMetadataHash(Long.MIN_VALUE))));
        emit("metadata_tombstone", CoordinatorRecord.tombstone(gk));

        // 4 ConsumerGroupPartitionMetadata (Kafka < 4.1 wrote it; tidelog reads only its key)
        ConsumerGroupPartitionMetadataKey pk = new ConsumerGroupPartitionMetadataKey().setGroupId("grp");
        emit("partition_metadata", CoordinatorRecord.record(pk, v0(new ConsumerGroupPartitionMetadataValue().setTopics(
            List.of(new ConsumerGroupPartitionMetadataValue.TopicMetadata()
                .setTopicId(TOPIC_A).setTopicName("orders").setNumPartitions(3))))));
        emit("partition_metadata_tombstone", CoordinatorRecord.tombstone(pk));

        // 5 ConsumerGroupMemberMetadata
        ConsumerGroupMemberMetadataKey mk = new ConsumerGroupMemberMetadataKey().setGroupId("grp").setMemberId("member-1");
        emit("member_consumer", CoordinatorRecord.record(mk, v0(new ConsumerGroupMemberMetadataValue()
            .setInstanceId(null)
            .setRackId(null)
            .setClientId("client-1")
            .setClientHost("/10.0.0.1")
            .setSubscribedTopicNames(List.of("orders", "payments"))
            .setSubscribedTopicRegex(null)
            .setRebalanceTimeoutMs(300000)
            .setServerAssignor("uniform")
            .setClassicMemberMetadata(null))));
        emit("member_static_regex", CoordinatorRecord.record(
            new ConsumerGroupMemberMetadataKey().setGroupId("grp").setMemberId("m-ü"),
            v0(new ConsumerGroupMemberMetadataValue()
                .setInstanceId("inst-7")
                .setRackId("rack-a")
                .setClientId("")
                .setClientHost("")
                .setSubscribedTopicNames(List.of())
                .setSubscribedTopicRegex("orders-.*")
                .setRebalanceTimeoutMs(45000)
                .setServerAssignor(null)
                .setClassicMemberMetadata(null))));
        emit("member_classic", CoordinatorRecord.record(mk, v0(new ConsumerGroupMemberMetadataValue()
            .setInstanceId("i")
            .setRackId(null)
            .setClientId("rdkafka")
            .setClientHost("/127.0.0.1")
            .setSubscribedTopicNames(List.of("t"))
            .setSubscribedTopicRegex(null)
            .setRebalanceTimeoutMs(60000)
            .setServerAssignor("range")
            .setClassicMemberMetadata(new ConsumerGroupMemberMetadataValue.ClassicMemberMetadata()
                .setSessionTimeoutMs(45000)
                .setSupportedProtocols(List.of(
                    new ConsumerGroupMemberMetadataValue.ClassicProtocol()
                        .setName("range").setMetadata(bytes(0, 3, 0, 0, 0, 1, 0, 1, 't', 0xff)),
                    new ConsumerGroupMemberMetadataValue.ClassicProtocol()
                        .setName("roundrobin").setMetadata(new byte[0])))))));
        // Kafka's default ClassicMemberMetadata (session 0, no protocols) is left out of the bytes.
        emit("member_classic_default", CoordinatorRecord.record(mk, v0(new ConsumerGroupMemberMetadataValue()
            .setInstanceId(null)
            .setRackId("r")
            .setClientId("c")
            .setClientHost("h")
            .setSubscribedTopicNames(List.of("a"))
            .setSubscribedTopicRegex("")
            .setServerAssignor("")
            .setClassicMemberMetadata(new ConsumerGroupMemberMetadataValue.ClassicMemberMetadata()))));
        List<String> manyTopics = new ArrayList<>();
        for (int i = 0; i < 130; i++) manyTopics.add("t" + i);
        emit("member_long", CoordinatorRecord.record(mk, v0(new ConsumerGroupMemberMetadataValue()
            .setInstanceId(null)
            .setRackId(null)
            .setClientId("c".repeat(200))
            .setClientHost("h")
            .setSubscribedTopicNames(manyTopics)
            .setSubscribedTopicRegex(null)
            .setRebalanceTimeoutMs(Integer.MAX_VALUE)
            .setServerAssignor(null)
            .setClassicMemberMetadata(new ConsumerGroupMemberMetadataValue.ClassicMemberMetadata()
                .setSessionTimeoutMs(10000)
                .setSupportedProtocols(List.of(new ConsumerGroupMemberMetadataValue.ClassicProtocol()
                    .setName("cooperative-sticky").setMetadata(new byte[150])))))));
        emit("member_tombstone", CoordinatorRecord.tombstone(mk));

        // 6 ConsumerGroupTargetAssignmentMetadata
        ConsumerGroupTargetAssignmentMetadataKey tk = new ConsumerGroupTargetAssignmentMetadataKey().setGroupId("grp");
        emit("target_metadata", CoordinatorRecord.record(tk,
            v0(new ConsumerGroupTargetAssignmentMetadataValue().setAssignmentEpoch(7))));
        emit("target_metadata_timestamp", CoordinatorRecord.record(tk,
            v0(new ConsumerGroupTargetAssignmentMetadataValue().setAssignmentEpoch(8).setAssignmentTimestamp(1760000000000L))));
        emit("target_metadata_tombstone", CoordinatorRecord.tombstone(tk));

        // 7 ConsumerGroupTargetAssignmentMember
        ConsumerGroupTargetAssignmentMemberKey tmk =
            new ConsumerGroupTargetAssignmentMemberKey().setGroupId("grp").setMemberId("member-1");
        emit("target_member", CoordinatorRecord.record(tmk, v0(new ConsumerGroupTargetAssignmentMemberValue()
            .setTopicPartitions(List.of(
                new ConsumerGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(TOPIC_A).setPartitions(ints(0, 2, 4)),
                new ConsumerGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(TOPIC_B).setPartitions(ints()),
                new ConsumerGroupTargetAssignmentMemberValue.TopicPartition()
                    .setTopicId(Uuid.ZERO_UUID).setPartitions(ints(Integer.MAX_VALUE, -1)))))));
        emit("target_member_empty", CoordinatorRecord.record(tmk,
            v0(new ConsumerGroupTargetAssignmentMemberValue().setTopicPartitions(List.of()))));
        emit("target_member_tombstone", CoordinatorRecord.tombstone(tmk));

        // 8 ConsumerGroupCurrentMemberAssignment
        ConsumerGroupCurrentMemberAssignmentKey ck =
            new ConsumerGroupCurrentMemberAssignmentKey().setGroupId("grp").setMemberId("member-1");
        emit("current_assignment", CoordinatorRecord.record(ck, v0(new ConsumerGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(10)
            .setPreviousMemberEpoch(9)
            .setState((byte) 0)
            .setAssignedPartitions(List.of(
                new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions()
                    .setTopicId(TOPIC_A).setPartitions(ints(0, 1)).setAssignmentEpochs(ints(5, 9)),
                new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions()
                    .setTopicId(TOPIC_B).setPartitions(ints(7)).setAssignmentEpochs(ints(10))))
            .setPartitionsPendingRevocation(List.of()))));
        emit("current_assignment_null_epochs", CoordinatorRecord.record(ck, v0(new ConsumerGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(3)
            .setPreviousMemberEpoch(2)
            .setState((byte) 1)
            .setAssignedPartitions(List.of(new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions()
                .setTopicId(TOPIC_A).setPartitions(ints(3)).setAssignmentEpochs(null)))
            .setPartitionsPendingRevocation(List.of(new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions()
                .setTopicId(TOPIC_B).setPartitions(ints(1, 2)).setAssignmentEpochs(ints(4, 4)))))));
        // An empty epoch list (Kafka's default) is left out of the bytes; so is a record from Kafka < 4.3.
        emit("current_assignment_empty_epochs", CoordinatorRecord.record(ck, v0(new ConsumerGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(-1)
            .setPreviousMemberEpoch(-2)
            .setState((byte) 2)
            .setAssignedPartitions(List.of(new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions()
                .setTopicId(TOPIC_A).setPartitions(ints()).setAssignmentEpochs(ints())))
            .setPartitionsPendingRevocation(List.of(new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions()
                .setTopicId(TOPIC_B).setPartitions(ints(0)).setAssignmentEpochs(ints()))))));
        emit("current_assignment_none", CoordinatorRecord.record(ck, v0(new ConsumerGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(0)
            .setPreviousMemberEpoch(0)
            .setState((byte) 127)
            .setAssignedPartitions(List.of())
            .setPartitionsPendingRevocation(List.of()))));
        List<Integer> epochs = new ArrayList<>();
        for (int i = 0; i < 40; i++) epochs.add(1000 + i);
        emit("current_assignment_long", CoordinatorRecord.record(ck, v0(new ConsumerGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(Integer.MAX_VALUE)
            .setPreviousMemberEpoch(Integer.MIN_VALUE)
            .setState((byte) -128)
            .setAssignedPartitions(List.of(new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions()
                .setTopicId(TOPIC_A).setPartitions(range(0, 40)).setAssignmentEpochs(epochs)))
            .setPartitionsPendingRevocation(List.of()))));
        emit("current_assignment_tombstone", CoordinatorRecord.tombstone(ck));

        // 16 ConsumerGroupRegularExpression
        ConsumerGroupRegularExpressionKey rk =
            new ConsumerGroupRegularExpressionKey().setGroupId("grp").setRegularExpression("^orders-.*$");
        emit("regex", CoordinatorRecord.record(rk, v0(new ConsumerGroupRegularExpressionValue()
            .setTopics(List.of("orders-eu", "orders-us")).setVersion(12).setTimestamp(1760000000123L))));
        emit("regex_empty", CoordinatorRecord.record(
            new ConsumerGroupRegularExpressionKey().setGroupId("g").setRegularExpression(""),
            v0(new ConsumerGroupRegularExpressionValue().setTopics(List.of()).setVersion(Long.MAX_VALUE).setTimestamp(-1))));
        emit("regex_tombstone", CoordinatorRecord.tombstone(rk));

        // Tagged fields a later Kafka might add (unknown to 4.3.1 too): a reader must skip them.
        ConsumerGroupMetadataValue um = new ConsumerGroupMetadataValue().setEpoch(6).setMetadataHash(99);
        um.unknownTaggedFields().add(new RawTaggedField(3, bytes(1, 2, 3)));
        emit("unknown_tags_metadata", CoordinatorRecord.record(gk, v0(um)));
        ConsumerGroupTargetAssignmentMetadataValue ut = new ConsumerGroupTargetAssignmentMetadataValue().setAssignmentEpoch(9);
        ut.unknownTaggedFields().add(new RawTaggedField(200, new byte[0]));
        emit("unknown_tags_target_metadata", CoordinatorRecord.record(tk, v0(ut)));
        ConsumerGroupMemberMetadataValue.ClassicProtocol up =
            new ConsumerGroupMemberMetadataValue.ClassicProtocol().setName("range").setMetadata(bytes(9));
        up.unknownTaggedFields().add(new RawTaggedField(1, bytes(7)));
        ConsumerGroupMemberMetadataValue.ClassicMemberMetadata uc =
            new ConsumerGroupMemberMetadataValue.ClassicMemberMetadata().setSessionTimeoutMs(30000).setSupportedProtocols(List.of(up));
        uc.unknownTaggedFields().add(new RawTaggedField(0, bytes(8, 8)));
        ConsumerGroupMemberMetadataValue uv = new ConsumerGroupMemberMetadataValue()
            .setInstanceId(null).setRackId(null).setClientId("c").setClientHost("h")
            .setSubscribedTopicNames(List.of("t")).setSubscribedTopicRegex(null)
            .setRebalanceTimeoutMs(1000).setServerAssignor(null).setClassicMemberMetadata(uc);
        uv.unknownTaggedFields().add(new RawTaggedField(1, bytes(0xaa)));
        uv.unknownTaggedFields().add(new RawTaggedField(130, bytes(0xbb, 0xcc)));
        emit("unknown_tags_member", CoordinatorRecord.record(mk, v0(uv)));
        ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions utp = new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions()
            .setTopicId(TOPIC_A).setPartitions(ints(1)).setAssignmentEpochs(ints(2));
        utp.unknownTaggedFields().add(new RawTaggedField(4, bytes(4)));
        ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions utp2 = new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions()
            .setTopicId(TOPIC_B).setPartitions(ints(5)).setAssignmentEpochs(ints());
        utp2.unknownTaggedFields().add(new RawTaggedField(1, bytes()));
        ConsumerGroupCurrentMemberAssignmentValue ucv = new ConsumerGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(4).setPreviousMemberEpoch(3).setState((byte) 0)
            .setAssignedPartitions(List.of(utp)).setPartitionsPendingRevocation(List.of(utp2));
        ucv.unknownTaggedFields().add(new RawTaggedField(0, bytes(1)));
        emit("unknown_tags_current_assignment", CoordinatorRecord.record(ck, v0(ucv)));
        ConsumerGroupTargetAssignmentMemberValue.TopicPartition utm =
            new ConsumerGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(TOPIC_A).setPartitions(ints(0));
        utm.unknownTaggedFields().add(new RawTaggedField(0, bytes(5, 5, 5)));
        ConsumerGroupTargetAssignmentMemberValue utmv =
            new ConsumerGroupTargetAssignmentMemberValue().setTopicPartitions(List.of(utm));
        utmv.unknownTaggedFields().add(new RawTaggedField(7, bytes(7)));
        emit("unknown_tags_target_member", CoordinatorRecord.record(tmk, v0(utmv)));
        ConsumerGroupRegularExpressionValue urv =
            new ConsumerGroupRegularExpressionValue().setTopics(List.of("x")).setVersion(1).setTimestamp(2);
        urv.unknownTaggedFields().add(new RawTaggedField(0, bytes(0)));
        emit("unknown_tags_regex", CoordinatorRecord.record(rk, v0(urv)));
    }

    // ---- decode -------------------------------------------------------------------------------

    static void decode() throws Exception {
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
                CoordinatorRecord record = SERDE.deserialize(ByteBuffer.wrap(key), value == null ? null : ByteBuffer.wrap(value));
                byte[] keyAgain = SERDE.serializeKey(record);
                byte[] valueAgain = SERDE.serializeValue(record);
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
        if (key instanceof ConsumerGroupMetadataKey k) {
            out.append("{\"groupId\":"); str(out, k.groupId()); out.append("}");
        } else if (key instanceof ConsumerGroupPartitionMetadataKey k) {
            out.append("{\"groupId\":"); str(out, k.groupId()); out.append("}");
        } else if (key instanceof ConsumerGroupMemberMetadataKey k) {
            out.append("{\"groupId\":"); str(out, k.groupId());
            out.append(",\"memberId\":"); str(out, k.memberId()); out.append("}");
        } else if (key instanceof ConsumerGroupTargetAssignmentMetadataKey k) {
            out.append("{\"groupId\":"); str(out, k.groupId()); out.append("}");
        } else if (key instanceof ConsumerGroupTargetAssignmentMemberKey k) {
            out.append("{\"groupId\":"); str(out, k.groupId());
            out.append(",\"memberId\":"); str(out, k.memberId()); out.append("}");
        } else if (key instanceof ConsumerGroupCurrentMemberAssignmentKey k) {
            out.append("{\"groupId\":"); str(out, k.groupId());
            out.append(",\"memberId\":"); str(out, k.memberId()); out.append("}");
        } else if (key instanceof ConsumerGroupRegularExpressionKey k) {
            out.append("{\"groupId\":"); str(out, k.groupId());
            out.append(",\"regularExpression\":"); str(out, k.regularExpression()); out.append("}");
        } else {
            str(out, key.toString());
        }
    }

    static void value(StringBuilder out, ApiMessage value) {
        if (value instanceof ConsumerGroupMetadataValue v) {
            out.append("{\"epoch\":").append(v.epoch()).append(",\"metadataHash\":").append(v.metadataHash()).append("}");
        } else if (value instanceof ConsumerGroupMemberMetadataValue v) {
            out.append("{\"instanceId\":"); str(out, v.instanceId());
            out.append(",\"rackId\":"); str(out, v.rackId());
            out.append(",\"clientId\":"); str(out, v.clientId());
            out.append(",\"clientHost\":"); str(out, v.clientHost());
            out.append(",\"subscribedTopicNames\":"); strs(out, v.subscribedTopicNames());
            out.append(",\"subscribedTopicRegex\":"); str(out, v.subscribedTopicRegex());
            out.append(",\"rebalanceTimeoutMs\":").append(v.rebalanceTimeoutMs());
            out.append(",\"serverAssignor\":"); str(out, v.serverAssignor());
            out.append(",\"classicMemberMetadata\":");
            ConsumerGroupMemberMetadataValue.ClassicMemberMetadata c = v.classicMemberMetadata();
            if (c == null) {
                out.append("null");
            } else {
                out.append("{\"sessionTimeoutMs\":").append(c.sessionTimeoutMs()).append(",\"supportedProtocols\":[");
                for (int i = 0; i < c.supportedProtocols().size(); i++) {
                    ConsumerGroupMemberMetadataValue.ClassicProtocol p = c.supportedProtocols().get(i);
                    if (i > 0) out.append(",");
                    out.append("{\"name\":"); str(out, p.name());
                    out.append(",\"metadata\":"); str(out, HEX.formatHex(p.metadata())); out.append("}");
                }
                out.append("]}");
            }
            out.append("}");
        } else if (value instanceof ConsumerGroupTargetAssignmentMetadataValue v) {
            out.append("{\"assignmentEpoch\":").append(v.assignmentEpoch());
            out.append(",\"assignmentTimestamp\":").append(v.assignmentTimestamp()).append("}");
        } else if (value instanceof ConsumerGroupTargetAssignmentMemberValue v) {
            out.append("{\"topicPartitions\":[");
            for (int i = 0; i < v.topicPartitions().size(); i++) {
                ConsumerGroupTargetAssignmentMemberValue.TopicPartition tp = v.topicPartitions().get(i);
                if (i > 0) out.append(",");
                out.append("{\"topicId\":"); topicId(out, tp.topicId());
                out.append(",\"partitions\":"); ints(out, tp.partitions()); out.append("}");
            }
            out.append("]}");
        } else if (value instanceof ConsumerGroupCurrentMemberAssignmentValue v) {
            out.append("{\"memberEpoch\":").append(v.memberEpoch());
            out.append(",\"previousMemberEpoch\":").append(v.previousMemberEpoch());
            out.append(",\"state\":").append(v.state());
            out.append(",\"assignedPartitions\":"); topicPartitions(out, v.assignedPartitions());
            out.append(",\"partitionsPendingRevocation\":"); topicPartitions(out, v.partitionsPendingRevocation());
            out.append("}");
        } else if (value instanceof ConsumerGroupRegularExpressionValue v) {
            out.append("{\"topics\":"); strs(out, v.topics());
            out.append(",\"version\":").append(v.version());
            out.append(",\"timestamp\":").append(v.timestamp()).append("}");
        } else {
            str(out, value.toString());
        }
    }

    static void topicPartitions(StringBuilder out, List<ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions> tps) {
        out.append("[");
        for (int i = 0; i < tps.size(); i++) {
            ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions tp = tps.get(i);
            if (i > 0) out.append(",");
            out.append("{\"topicId\":"); topicId(out, tp.topicId());
            out.append(",\"partitions\":"); ints(out, tp.partitions());
            out.append(",\"assignmentEpochs\":");
            if (tp.assignmentEpochs() == null) out.append("null"); else ints(out, tp.assignmentEpochs());
            out.append("}");
        }
        out.append("]");
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
