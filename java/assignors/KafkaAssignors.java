// Kafka 4.3.1's own server-side assignors (UniformAssignor, RangeAssignor from
// kafka-group-coordinator) run on the small groups of cases.txt. It prints one Python dict entry
// per case; tests/groups/test_assignors.py holds that output as the expected assignments of
// tidelog.groups.assignors. Run once, by hand (from java/assignors):
//
//   mvn -B -q -f pom.xml dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
//   javac -cp "$(cat target/classpath.txt)" -d target/classes KafkaAssignors.java
//   java -cp "target/classes:$(cat target/classpath.txt)" KafkaAssignors cases.txt
//
// The assignor gets what Kafka's TargetAssignmentBuilder gives it (a GroupSpecImpl, the previous
// target assignment of each member, the inverted target assignment, the subscription type), with
// two choices of ours: subscriptions only name topics that exist (the coordinator drops names it
// cannot resolve), and the subscription type is HOMOGENEOUS when those sets are equal. Members are
// handed over sorted by member id and each previous assignment sorted by topic id then partition,
// the orders tidelog uses, where the coordinator passes HashMaps. A second run hands them over as
// the coordinator does (HashMap of members in the file's order, HashMap/HashSet assignments, as
// Assignment.fromRecord builds them); where that changes the result, a comment line says so.
//
// cases.txt: `case <name> uniform|range`, then `topic <id> <partitions>` and
// `member <member id> <instance id|-> <rack|-> <topic ids, comma-separated|-> <previous|->` lines,
// then `end`. A topic id is an integer (decimal or 0x hex): the 128 bits of the Uuid. <previous> is
// `topic:partitions/topic:partitions`, partitions comma-separated, `a..b` for a range. `#` comments.

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.*;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

public class KafkaAssignors {
    record Member(String id, String instance, String rack, List<Uuid> subscribed, Map<Uuid, List<Integer>> previous) {}

    static final BigInteger MASK = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

    public static void main(String[] args) throws IOException {
        String name = null;
        String assignor = null;
        Map<Uuid, Integer> topics = new LinkedHashMap<>();
        List<Member> members = new ArrayList<>();
        for (String raw : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            String line = raw.replaceAll("#.*", "").trim();
            if (line.isEmpty()) continue;
            String[] f = line.split("\\s+");
            switch (f[0]) {
                case "case" -> {
                    name = f[1];
                    assignor = f[2];
                    topics = new LinkedHashMap<>();
                    members = new ArrayList<>();
                }
                case "topic" -> topics.put(uuid(f[1]), Integer.parseInt(f[2]));
                case "member" -> members.add(new Member(f[1], none(f[2]), none(f[3]), subscribed(f[4]), previous(f[5])));
                case "end" -> run(name, assignor, topics, members);
                default -> throw new IllegalArgumentException(line);
            }
        }
    }

    static void run(String name, String assignorName, Map<Uuid, Integer> topics, List<Member> members) {
        ConsumerGroupPartitionAssignor assignor = switch (assignorName) {
            case "uniform" -> new UniformAssignor();
            case "range" -> new RangeAssignor();
            default -> throw new IllegalArgumentException(assignorName);
        };
        Map<String, Map<Uuid, Set<Integer>>> sorted = assign(assignor, topics, members, true);
        Map<String, Map<Uuid, Set<Integer>>> hashed = assign(assignor, topics, members, false);
        if (!hashed.equals(sorted)) {
            System.out.println("    # with the coordinator's HashMap orders, Kafka gives " + format(hashed));
        }
        System.out.println("    " + str(name) + ": " + format(sorted) + ",");
    }

    static Map<String, Map<Uuid, Set<Integer>>> assign(
        ConsumerGroupPartitionAssignor assignor, Map<Uuid, Integer> topics, List<Member> members, boolean sortedOrder
    ) {
        Map<String, MemberSubscriptionAndAssignmentImpl> specs = sortedOrder ? new TreeMap<>() : new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Set<Set<Uuid>> distinctSubscriptions = new HashSet<>();
        for (Member m : members) {
            Set<Uuid> subscribed = new LinkedHashSet<>();
            for (Uuid t : m.subscribed()) if (topics.containsKey(t)) subscribed.add(t);
            distinctSubscriptions.add(subscribed);
            Map<Uuid, Set<Integer>> previous = sortedOrder ? new TreeMap<>() : new HashMap<>();
            m.previous().forEach((t, parts) -> {
                previous.put(t, sortedOrder ? new TreeSet<>(parts) : new HashSet<>(parts));
                for (int p : parts) inverted.computeIfAbsent(t, k -> new HashMap<>()).put(p, m.id());
            });
            specs.put(m.id(), new MemberSubscriptionAndAssignmentImpl(
                Optional.ofNullable(m.rack()), Optional.ofNullable(m.instance()), subscribed, new Assignment(previous)));
        }
        SubscriptionType type = distinctSubscriptions.size() <= 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                return topics.getOrDefault(topicId, -1);
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Set.of();
            }
        };
        GroupAssignment result = assignor.assign(
            new GroupSpecImpl(Collections.unmodifiableMap(specs), type, inverted), describer);
        Map<String, Map<Uuid, Set<Integer>>> out = new TreeMap<>();
        for (Member m : members) {
            MemberAssignment a = result.members().get(m.id());
            Map<Uuid, Set<Integer>> parts = new TreeMap<>();
            if (a != null) a.partitions().forEach((t, ps) -> { if (!ps.isEmpty()) parts.put(t, new TreeSet<>(ps)); });
            out.put(m.id(), parts);
        }
        return out;
    }

    // {"member": {topic: [partitions]}} as a Python literal, topic ids as the file's integers
    static String format(Map<String, Map<Uuid, Set<Integer>>> assignment) {
        StringJoiner members = new StringJoiner(", ", "{", "}");
        assignment.forEach((member, parts) -> {
            StringJoiner topics = new StringJoiner(", ", "{", "}");
            parts.forEach((t, ps) -> topics.add(integer(t) + ": " + ps));
            members.add(str(member) + ": " + topics);
        });
        return members.toString();
    }

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        s.codePoints().forEach(cp -> {
            if (cp < 0x20 || cp > 0x7e || cp == '"' || cp == '\\') b.append(String.format("\\U%08x", cp));
            else b.appendCodePoint(cp);
        });
        return b.append('"').toString();
    }

    static String integer(Uuid t) {
        BigInteger v = BigInteger.valueOf(t.getMostSignificantBits()).and(MASK).shiftLeft(64)
            .or(BigInteger.valueOf(t.getLeastSignificantBits()).and(MASK));
        return v.bitLength() > 32 ? "0x" + v.toString(16) : v.toString();
    }

    static Uuid uuid(String s) {
        BigInteger v = s.startsWith("0x") ? new BigInteger(s.substring(2), 16) : new BigInteger(s);
        return new Uuid(v.shiftRight(64).longValue(), v.longValue());
    }

    static String none(String s) {
        return s.equals("-") ? null : s;
    }

    static List<Uuid> subscribed(String s) {
        List<Uuid> out = new ArrayList<>();
        if (!s.equals("-")) for (String t : s.split(",")) out.add(uuid(t));
        return out;
    }

    static Map<Uuid, List<Integer>> previous(String s) {
        Map<Uuid, List<Integer>> out = new LinkedHashMap<>();
        if (s.equals("-")) return out;
        for (String topic : s.split("/")) {
            String[] tp = topic.split(":");
            List<Integer> parts = new ArrayList<>();
            for (String p : tp[1].split(",")) {
                if (p.contains("..")) {
                    String[] r = p.split("\\.\\.");
                    for (int i = Integer.parseInt(r[0]); i <= Integer.parseInt(r[1]); i++) parts.add(i);
                } else {
                    parts.add(Integer.parseInt(p));
                }
            }
            out.put(uuid(tp[0]), parts);
        }
        return out;
    }
}
