// Apache Kafka 4.3.1's own encoding of the streams group (KIP-1071) records of `__consumer_offsets`
// (types 17, 19-23), for tidelog's codec tests (tests/groups/test_streams_records.py).
//
//   java -cp "$(cat java/records/target/classpath.txt)" java/records/StreamsRecordVectors.java vectors
//       builds representative records with Kafka's generated classes and prints, one line each,
//       "<name> <key hex> <value hex or ->" as Kafka's GroupCoordinatorRecordSerde serializes them.
//   ... StreamsRecordVectors.java decode < lines
//       reads "<key hex> <value hex or ->" lines, deserializes each with the same serde and prints
//       "<key hex> <value hex or ->" of Kafka's re-serialization of what it read (the same bytes
//       when Kafka read every field as written), or "error <message>" when Kafka refuses them.
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

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.StreamsGroupCurrentMemberAssignmentKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupCurrentMemberAssignmentValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMemberMetadataKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMemberMetadataValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMemberKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMetadataKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMetadataValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTopologyKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTopologyValue;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public final class StreamsRecordVectors {
    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        String mode = args.length == 1 ? args[0] : "";
        switch (mode) {
            case "vectors" -> vectors();
            case "decode" -> decode();
            default -> {
                System.err.println("usage: StreamsRecordVectors vectors | decode < lines of '<key hex> <value hex or ->'");
                System.exit(2);
            }
        }
    }

    static ApiMessageAndVersion v0(ApiMessage m) {
        return new ApiMessageAndVersion(m, (short) 0);
    }

    static List<Integer> ints(int... xs) {
        List<Integer> out = new ArrayList<>();
        for (int x : xs) out.add(x);
        return out;
    }

    static List<Short> shorts(int... xs) {
        List<Short> out = new ArrayList<>();
        for (int x : xs) out.add((short) x);
        return out;
    }

    static void emit(String name, CoordinatorRecord record) {
        byte[] key = SERDE.serializeKey(record);
        byte[] value = SERDE.serializeValue(record);
        System.out.println(name + " " + HEX.formatHex(key) + " " + (value == null ? "-" : HEX.formatHex(value)));
    }

    static StreamsGroupTargetAssignmentMemberValue.TaskIds target(String subtopology, List<Integer> partitions) {
        return new StreamsGroupTargetAssignmentMemberValue.TaskIds().setSubtopologyId(subtopology).setPartitions(partitions);
    }

    static StreamsGroupCurrentMemberAssignmentValue.TaskIds current(String subtopology, List<Integer> partitions,
                                                                   List<Integer> epochs) {
        return new StreamsGroupCurrentMemberAssignmentValue.TaskIds()
            .setSubtopologyId(subtopology).setPartitions(partitions).setAssignmentEpochs(epochs);
    }

    static StreamsGroupTopologyValue.TopicInfo topic(String name, int partitions, int rf, String... configs) {
        List<StreamsGroupTopologyValue.TopicConfig> cs = new ArrayList<>();
        for (int i = 0; i + 1 < configs.length; i += 2) {
            cs.add(new StreamsGroupTopologyValue.TopicConfig().setKey(configs[i]).setValue(configs[i + 1]));
        }
        return new StreamsGroupTopologyValue.TopicInfo()
            .setName(name).setPartitions(partitions).setReplicationFactor((short) rf).setTopicConfigs(cs);
    }

    static void vectors() {
        // 17 StreamsGroupMetadata
        StreamsGroupMetadataKey gk = new StreamsGroupMetadataKey().setGroupId("app");
        emit("metadata", CoordinatorRecord.record(gk, v0(new StreamsGroupMetadataValue()
            .setEpoch(3).setMetadataHash(0x1234567890ABCDEFL))));
        emit("metadata_validated", CoordinatorRecord.record(gk, v0(new StreamsGroupMetadataValue()
            .setEpoch(4).setMetadataHash(-1L).setValidatedTopologyEpoch(0)
            .setLastAssignmentConfigs(List.of(new StreamsGroupMetadataValue.LastAssignmentConfig()
                .setKey("num.standby.replicas").setValue("0"))))));
        emit("metadata_null_configs", CoordinatorRecord.record(
            new StreamsGroupMetadataKey().setGroupId("grüppe-日本"),
            v0(new StreamsGroupMetadataValue().setEpoch(Integer.MAX_VALUE).setMetadataHash(0)
                .setValidatedTopologyEpoch(-1).setLastAssignmentConfigs(null))));
        emit("metadata_tombstone", CoordinatorRecord.tombstone(gk));

        // 19 StreamsGroupMemberMetadata
        StreamsGroupMemberMetadataKey mk = new StreamsGroupMemberMetadataKey().setGroupId("app").setMemberId("m-1");
        emit("member", CoordinatorRecord.record(mk, v0(new StreamsGroupMemberMetadataValue()
            .setInstanceId(null).setRackId(null).setClientId("app-StreamThread-1-consumer").setClientHost("/127.0.0.1")
            .setRebalanceTimeoutMs(300000).setTopologyEpoch(0).setProcessId("5d3c4b2a-process")
            .setUserEndpoint(null).setClientTags(List.of()))));
        emit("member_endpoint", CoordinatorRecord.record(mk, v0(new StreamsGroupMemberMetadataValue()
            .setInstanceId("inst-ü").setRackId("rack-a").setClientId("").setClientHost("")
            .setRebalanceTimeoutMs(-1).setTopologyEpoch(-1).setProcessId("")
            .setUserEndpoint(new StreamsGroupMemberMetadataValue.Endpoint().setHost("host-1").setPort(65535))
            .setClientTags(List.of(
                new StreamsGroupMemberMetadataValue.KeyValue().setKey("az").setValue("eu-1"),
                new StreamsGroupMemberMetadataValue.KeyValue().setKey("rack").setValue(""))))));
        emit("member_tombstone", CoordinatorRecord.tombstone(mk));

        // 20 StreamsGroupTargetAssignmentMetadata
        StreamsGroupTargetAssignmentMetadataKey tk = new StreamsGroupTargetAssignmentMetadataKey().setGroupId("app");
        emit("target_metadata", CoordinatorRecord.record(tk,
            v0(new StreamsGroupTargetAssignmentMetadataValue().setAssignmentEpoch(7))));
        emit("target_metadata_timestamp", CoordinatorRecord.record(tk,
            v0(new StreamsGroupTargetAssignmentMetadataValue().setAssignmentEpoch(8).setAssignmentTimestamp(1760000000000L))));
        emit("target_metadata_tombstone", CoordinatorRecord.tombstone(tk));

        // 21 StreamsGroupTargetAssignmentMember
        StreamsGroupTargetAssignmentMemberKey tmk =
            new StreamsGroupTargetAssignmentMemberKey().setGroupId("app").setMemberId("m-1");
        emit("target_member", CoordinatorRecord.record(tmk, v0(new StreamsGroupTargetAssignmentMemberValue()
            .setActiveTasks(List.of(target("0", ints(0, 1)), target("1", ints(1))))
            .setStandbyTasks(List.of(target("1", ints(0))))
            .setWarmupTasks(List.of()))));
        emit("target_member_empty", CoordinatorRecord.record(tmk, v0(new StreamsGroupTargetAssignmentMemberValue())));
        emit("target_member_tombstone", CoordinatorRecord.tombstone(tmk));

        // 22 StreamsGroupCurrentMemberAssignment
        StreamsGroupCurrentMemberAssignmentKey ck =
            new StreamsGroupCurrentMemberAssignmentKey().setGroupId("app").setMemberId("m-1");
        emit("current_assignment", CoordinatorRecord.record(ck, v0(new StreamsGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(5).setPreviousMemberEpoch(4).setState((byte) 1)
            .setActiveTasks(List.of(current("0", ints(0, 1), ints(3, 5))))
            .setStandbyTasks(List.of(current("1", ints(1), ints())))
            .setWarmupTasks(List.of())
            .setActiveTasksPendingRevocation(List.of(current("1", ints(0), ints(2))))
            .setStandbyTasksPendingRevocation(List.of())
            .setWarmupTasksPendingRevocation(List.of()))));
        emit("current_assignment_null_epochs", CoordinatorRecord.record(ck, v0(new StreamsGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(0).setPreviousMemberEpoch(0).setState((byte) 127)
            .setActiveTasks(List.of(current("0", ints(2), null))))));
        emit("current_assignment_tombstone", CoordinatorRecord.tombstone(ck));

        // 23 StreamsGroupTopology: the word count's two subtopologies
        StreamsGroupTopologyKey pk = new StreamsGroupTopologyKey().setGroupId("app");
        emit("topology", CoordinatorRecord.record(pk, v0(new StreamsGroupTopologyValue()
            .setEpoch(0)
            .setSubtopologies(List.of(
                new StreamsGroupTopologyValue.Subtopology()
                    .setSubtopologyId("0")
                    .setSourceTopics(List.of("wc-in"))
                    .setRepartitionSinkTopics(List.of("app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition")),
                new StreamsGroupTopologyValue.Subtopology()
                    .setSubtopologyId("1")
                    .setRepartitionSourceTopics(List.of(topic(
                        "app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition", 0, 0,
                        "cleanup.policy", "delete", "segment.bytes", "52428800")))
                    .setStateChangelogTopics(List.of(topic(
                        "app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog", 0, 3, "cleanup.policy", "compact")))
                    .setCopartitionGroups(List.of(new StreamsGroupTopologyValue.CopartitionGroup()
                        .setSourceTopics(shorts()).setSourceTopicRegex(shorts(1))
                        .setRepartitionSourceTopics(shorts(0, 32767)))))))));
        emit("topology_empty", CoordinatorRecord.record(pk, v0(new StreamsGroupTopologyValue().setEpoch(-7))));
        emit("topology_tombstone", CoordinatorRecord.tombstone(pk));

        // a tagged field a later Kafka might add: a reader must skip it
        StreamsGroupTargetAssignmentMetadataValue unknown =
            new StreamsGroupTargetAssignmentMetadataValue().setAssignmentEpoch(9).setAssignmentTimestamp(1);
        unknown.unknownTaggedFields().add(new RawTaggedField(200, new byte[] {1, 2}));
        emit("unknown_tags_target_metadata", CoordinatorRecord.record(tk, v0(unknown)));
    }

    static void decode() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.strip();
            if (line.isEmpty()) continue;
            String[] parts = line.split(" ");
            try {
                byte[] key = HEX.parseHex(parts[0]);
                byte[] value = parts.length < 2 || parts[1].equals("-") ? null : HEX.parseHex(parts[1]);
                CoordinatorRecord record =
                    SERDE.deserialize(ByteBuffer.wrap(key), value == null ? null : ByteBuffer.wrap(value));
                byte[] valueAgain = SERDE.serializeValue(record);
                System.out.println(HEX.formatHex(SERDE.serializeKey(record)) + " "
                    + (valueAgain == null ? "-" : HEX.formatHex(valueAgain)));
            } catch (RuntimeException e) {
                System.out.println("error " + e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
    }
}
