// Kafka 4.3.1's share group assignor (SimpleAssignor from kafka-group-coordinator) run on the small
// groups of share_cases.txt. It prints one Python dict entry per case;
// tests/groups/test_share_assignor.py holds that output as the expected assignments of
// tidelog.groups.share_assignor. Run once, by hand (from java/assignors; the classpath is the one
// KafkaAssignors.java uses):
//
//   mvn -B -q -f pom.xml dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
//   javac -cp "$(cat target/classpath.txt)" -d target/classes KafkaShareAssignor.java
//   java -cp "target/classes:$(cat target/classpath.txt)" KafkaShareAssignor share_cases.txt
//
// The assignor gets what Kafka's ShareTargetAssignmentBuilder gives it (a GroupSpecImpl with the
// previous target assignment of each member and the map of initialized partitions, the subscription
// type), with two choices of ours: subscriptions only name topics that exist (the coordinator drops
// names it cannot resolve), and the subscription type is HOMOGENEOUS when those sets are equal.
// Members are handed over sorted by member id, subscriptions sorted by topic id and each previous
// assignment sorted by topic id then partition: the orders tidelog uses, where the coordinator
// passes HashMaps. A second run hands them over as the coordinator does (a HashMap of members filled
// in the file's order, HashMap/HashSet assignments as Assignment.fromRecord builds them); where that
// changes the result, a comment line says so.
//
// share_cases.txt: `case <name>`, then `topic <id> <partitions>`, an optional
// `initialized <partitions|->` line (without one, every partition of every topic is initialized)
// and `member <member id> <topic ids, comma-separated|-> <previous|->` lines, then `end`. A topic id
// is an integer (decimal or 0x hex): the 128 bits of the Uuid. <partitions> and <previous> are
// `topic:partitions/topic:partitions`, partitions comma-separated, `a..b` for a range. `#` comments.

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.*;
import org.apache.kafka.coordinator.group.assignor.SimpleAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

public class KafkaShareAssignor {
    record Member(String id, List<Uuid> subscribed, Map<Uuid, List<Integer>> previous) {}

    static final BigInteger MASK = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);

    public static void main(String[] args) throws IOException {
        String name = null;
        Map<Uuid, Integer> topics = new LinkedHashMap<>();
        Map<Uuid, List<Integer>> initialized = null;
        List<Member> members = new ArrayList<>();
        for (String raw : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            String line = raw.replaceAll("#.*", "").trim();
            if (line.isEmpty()) continue;
            String[] f = line.split("\\s+");
            switch (f[0]) {
                case "case" -> {
                    name = f[1];
                    topics = new LinkedHashMap<>();
                    initialized = null;
                    members = new ArrayList<>();
                }
                case "topic" -> topics.put(uuid(f[1]), Integer.parseInt(f[2]));
                case "initialized" -> initialized = partitions(f[1]);
                case "member" -> members.add(new Member(f[1], subscribed(f[2]), partitions(f[3])));
                case "end" -> run(name, topics, initialized, members);
                default -> throw new IllegalArgumentException(line);
            }
        }
    }

    static void run(String name, Map<Uuid, Integer> topics, Map<Uuid, List<Integer>> initialized, List<Member> members) {
        Map<Uuid, Set<Integer>> assignable = new HashMap<>();
        if (initialized == null) {
            topics.forEach((t, n) -> {
                Set<Integer> all = new HashSet<>();
                for (int p = 0; p < n; p++) all.add(p);
                assignable.put(t, all);
            });
        } else {
            initialized.forEach((t, ps) -> assignable.put(t, new HashSet<>(ps)));
        }
        String sorted = outcome(topics, assignable, members, true);
        String hashed = outcome(topics, assignable, members, false);
        if (!hashed.equals(sorted)) {
            System.out.println("    # with the coordinator's HashMap orders, Kafka gives " + hashed);
        }
        System.out.println("    " + str(name) + ": " + sorted + ",");
    }

    static String outcome(Map<Uuid, Integer> topics, Map<Uuid, Set<Integer>> assignable, List<Member> members, boolean sortedOrder) {
        try {
            return format(assign(topics, assignable, members, sortedOrder));
        } catch (RuntimeException e) {
            return "None  # Kafka throws " + e;
        }
    }

    static Map<String, Map<Uuid, Set<Integer>>> assign(
        Map<Uuid, Integer> topics, Map<Uuid, Set<Integer>> assignable, List<Member> members, boolean sortedOrder
    ) {
        Map<String, MemberSubscriptionAndAssignmentImpl> specs = sortedOrder ? new TreeMap<>() : new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Set<Set<Uuid>> distinctSubscriptions = new HashSet<>();
        for (Member m : members) {
            Set<Uuid> subscribed = sortedOrder ? new TreeSet<>() : new LinkedHashSet<>();
            for (Uuid t : m.subscribed()) if (topics.containsKey(t)) subscribed.add(t);
            distinctSubscriptions.add(subscribed);
            Map<Uuid, Set<Integer>> previous = sortedOrder ? new TreeMap<>() : new HashMap<>();
            m.previous().forEach((t, parts) -> {
                previous.put(t, sortedOrder ? new TreeSet<>(parts) : new HashSet<>(parts));
                for (int p : parts) inverted.computeIfAbsent(t, k -> new HashMap<>()).put(p, m.id());
            });
            specs.put(m.id(), new MemberSubscriptionAndAssignmentImpl(
                Optional.empty(), Optional.empty(), subscribed, new Assignment(previous)));
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
        GroupAssignment result = new SimpleAssignor().assign(
            new GroupSpecImpl(Collections.unmodifiableMap(specs), type, inverted, Optional.of(assignable)), describer);
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

    static List<Uuid> subscribed(String s) {
        List<Uuid> out = new ArrayList<>();
        if (!s.equals("-")) for (String t : s.split(",")) out.add(uuid(t));
        return out;
    }

    static Map<Uuid, List<Integer>> partitions(String s) {
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
