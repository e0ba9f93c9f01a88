// Kafka 4.3.1's own StickyTaskAssignor (the streams groups' assignor, kafka-group-coordinator) run on
// the small groups of streams_cases.txt. It prints one JSON line per case; streams_expected.jsonl
// holds that output as the expected assignments of tidelog.groups.streams_assignor
// (tests/groups/test_streams_assignor.py). Run from java/assignors:
//
//   mvn -B -q -f pom.xml dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
//   java -cp "$(cat target/classpath.txt)" KafkaStickyTaskAssignor.java streams_cases.txt > streams_expected.jsonl
//
// The member specs are a HashMap filled in the file's order, as the coordinator's
// TargetAssignmentBuilder fills its own (tidelog hands its members over in that same order).
//
// streams_cases.txt: `case <name> <num.standby.replicas>`, then `subtopology <id> <tasks> stateful|stateless`
// and `member <member id> <process id> <previous active|-> <previous standby|->` lines, then `end`.
// A task list is `subtopology:partitions/subtopology:partitions`, partitions comma-separated, `a..b`
// a range. `#` comments.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.*;
import org.apache.kafka.coordinator.group.streams.assignor.*;

public class KafkaStickyTaskAssignor {
    record Sub(int tasks, boolean stateful) {}

    public static void main(String[] args) throws Exception {
        String name = null;
        int standbys = 0;
        Map<String, Sub> subs = new TreeMap<>();
        Map<String, AssignmentMemberSpec> members = new HashMap<>();
        List<String> order = new ArrayList<>();
        for (String raw : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            String line = raw.replaceAll("#.*", "").trim();
            if (line.isEmpty()) continue;
            String[] f = line.split("\\s+");
            switch (f[0]) {
                case "case" -> {
                    name = f[1];
                    standbys = Integer.parseInt(f[2]);
                    subs = new TreeMap<>();
                    members = new HashMap<>();
                    order = new ArrayList<>();
                }
                case "subtopology" -> subs.put(f[1], new Sub(Integer.parseInt(f[2]), f[3].equals("stateful")));
                case "member" -> {
                    members.put(f[1], new AssignmentMemberSpec(Optional.empty(), Optional.empty(), tasks(f[3]),
                        tasks(f[4]), Map.of(), f[2], Map.of(), Map.of(), Map.of()));
                    order.add(f[1]);
                }
                case "end" -> System.out.println(run(name, standbys, subs, members, order));
                default -> throw new IllegalArgumentException(line);
            }
        }
    }

    static Map<String, Set<Integer>> tasks(String s) {
        Map<String, Set<Integer>> out = new HashMap<>();
        if (s.equals("-")) return out;
        for (String part : s.split("/")) {
            String[] kv = part.split(":");
            Set<Integer> ps = new HashSet<>();
            for (String p : kv[1].split(",")) {
                if (p.contains("..")) {
                    String[] r = p.split("\\.\\.");
                    for (int i = Integer.parseInt(r[0]); i <= Integer.parseInt(r[1]); i++) ps.add(i);
                } else {
                    ps.add(Integer.parseInt(p));
                }
            }
            out.put(kv[0], ps);
        }
        return out;
    }

    static String run(String name, int standbys, Map<String, Sub> subs, Map<String, AssignmentMemberSpec> members,
                      List<String> order) {
        TopologyDescriber topology = new TopologyDescriber() {
            public List<String> subtopologies() { return new ArrayList<>(subs.keySet()); }
            public int maxNumInputPartitions(String s) { return subs.get(s).tasks(); }
            public boolean isStateful(String s) { return subs.get(s).stateful(); }
        };
        GroupAssignment result = new StickyTaskAssignor().assign(
            new GroupSpecImpl(members, Map.of("num.standby.replicas", Integer.toString(standbys))), topology);
        StringBuilder out = new StringBuilder("{\"case\": \"" + name + "\", \"members\": {");
        boolean first = true;
        for (String m : order) {
            MemberAssignment a = result.members().get(m);
            out.append(first ? "" : ", ").append('"').append(m).append("\": {\"active\": ");
            json(out, a.activeTasks());
            out.append(", \"standby\": ");
            json(out, a.standbyTasks());
            out.append('}');
            first = false;
        }
        return out.append("}}").toString();
    }

    static void json(StringBuilder out, Map<String, Set<Integer>> tasks) {
        out.append('{');
        boolean first = true;
        for (String s : new TreeSet<>(tasks.keySet())) {
            if (tasks.get(s).isEmpty()) continue;
            out.append(first ? "" : ", ").append('"').append(s).append("\": ").append(new TreeSet<>(tasks.get(s)));
            first = false;
        }
        out.append('}');
    }
}
