// Kafka's own Java client (kafka-clients 4.3.1) against a running broker: each subcommand runs one
// check and prints one JSON line with what it saw; tests/kafka_ref/test_java_client.py asserts on
// it. Compiled by that test with javac against Kafka's classpath (java/kafka/pom.xml).
//
//   java ClientChecks <bootstrap> idempotent|eos|groups|consumer-protocol|admin|share <topic prefix>
//   java ClientChecks <bootstrap> share-run|consumer-run <prefix> <topic> <group> <total>
//   java ClientChecks <bootstrap> acls <topic prefix> <admin.properties> <user.properties>
//     (a SASL_SSL broker with an authorizer: the admin grants, lists and deletes ACLs; the user's
//      writes follow them)

import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class ClientChecks {
    static String bootstrap;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String prefix = args[2];
        switch (args[1]) {
            case "idempotent" -> idempotent(prefix);
            case "eos" -> eos(prefix);
            case "groups" -> groups(prefix);
            case "consumer-protocol" -> consumerProtocol(prefix);
            case "share" -> ShareChecks.share(prefix, args);  // ShareChecks.java
            case "share-run", "consumer-run" ->  // <topic> <group> <total>: read while the test kills brokers
                ShareChecks.run(args[1].replace("-run", ""), args[3], args[4], Integer.parseInt(args[5]));
            case "admin" -> admin(prefix);
            case "acls" -> acls(prefix, load(args[3]), load(args[4]));
            default -> throw new IllegalArgumentException(args[1]);
        }
    }

    static Properties load(String path) throws Exception {
        Properties p = new Properties();
        try (var in = new java.io.FileInputStream(path)) {
            p.load(in);
        }
        return p;
    }

    static String json(Map<String, Object> r) {
        StringBuilder sb = new StringBuilder("{");
        for (Map.Entry<String, Object> e : r.entrySet()) {
            if (sb.length() > 1) sb.append(", ");
            Object v = e.getValue();
            sb.append('"').append(e.getKey()).append("\": ").append(v instanceof String ? "\"" + v + "\"" : v);
        }
        return sb.append("}").toString();
    }

    /** Can `user` write to `topic`? "ok", or the exception's simple class name. */
    static String tryWrite(Properties user, String topic) {
        Properties p = producerProps();
        p.putAll(user);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "15000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "15000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.send(new ProducerRecord<>(topic, "k", "v")).get(20, TimeUnit.SECONDS);
            return "ok";
        } catch (Exception e) {
            Throwable t = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            // kafka-clients 4.3 wraps the producer's fatal errors in a plain KafkaException: name the cause
            while (t.getClass() == KafkaException.class && t.getCause() != null) t = t.getCause();
            return t.getClass().getSimpleName();
        }
    }

    static void acls(String prefix, Properties adminProps, Properties userProps) throws Exception {
        String topic = prefix + "-acl", other = prefix + "-other";
        Map<String, Object> r = new LinkedHashMap<>();
        Map<String, Object> conf = new HashMap<>();
        adminProps.forEach((k, v) -> conf.put((String) k, v));
        conf.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin a = Admin.create(conf)) {
            a.createTopics(List.of(new NewTopic(topic, 1, (short) 1), new NewTopic(other, 1, (short) 1)))
                .all().get(30, TimeUnit.SECONDS);
            r.put("before_grant", tryWrite(userProps, topic));
            AclBinding write = new AclBinding(
                new org.apache.kafka.common.resource.ResourcePattern(org.apache.kafka.common.resource.ResourceType.TOPIC,
                    prefix + "-ac", org.apache.kafka.common.resource.PatternType.PREFIXED),
                new org.apache.kafka.common.acl.AccessControlEntry("User:bob", "*",
                    org.apache.kafka.common.acl.AclOperation.WRITE, org.apache.kafka.common.acl.AclPermissionType.ALLOW));
            AclBinding describe = new AclBinding(
                new org.apache.kafka.common.resource.ResourcePattern(org.apache.kafka.common.resource.ResourceType.TOPIC,
                    topic, org.apache.kafka.common.resource.PatternType.LITERAL),
                new org.apache.kafka.common.acl.AccessControlEntry("User:bob", "*",
                    org.apache.kafka.common.acl.AclOperation.DESCRIBE, org.apache.kafka.common.acl.AclPermissionType.ALLOW));
            a.createAcls(List.of(write, describe)).all().get(30, TimeUnit.SECONDS);
            AclBindingFilter bobs = new AclBindingFilter(
                org.apache.kafka.common.resource.ResourcePatternFilter.ANY,
                new org.apache.kafka.common.acl.AccessControlEntryFilter("User:bob", null,
                    org.apache.kafka.common.acl.AclOperation.ANY, org.apache.kafka.common.acl.AclPermissionType.ANY));
            Collection<AclBinding> listed = a.describeAcls(bobs).values().get(30, TimeUnit.SECONDS);
            r.put("listed", listed.size());
            r.put("listed_prefixed", listed.stream().anyMatch(b -> b.pattern().patternType()
                == org.apache.kafka.common.resource.PatternType.PREFIXED && b.pattern().name().equals(prefix + "-ac")));
            r.put("after_grant", tryWrite(userProps, topic));
            r.put("other_topic", tryWrite(userProps, other));
            Collection<AclBinding> deleted = a.deleteAcls(List.of(write.toFilter())).all().get(30, TimeUnit.SECONDS);
            r.put("deleted", deleted.size());
            r.put("after_delete", tryWrite(userProps, topic));
            r.put("listed_after_delete", a.describeAcls(bobs).values().get(30, TimeUnit.SECONDS).size());
            a.deleteAcls(List.of(bobs)).all().get(30, TimeUnit.SECONDS);
        }
        System.out.println(json(r));
    }

    static Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
    }

    static void create(Admin a, String topic, int partitions) throws Exception {
        a.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
    }

    static Properties producerProps() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return p;
    }

    static Properties consumerProps(String group) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return c;
    }

    static List<ConsumerRecord<String, String>> readAll(String topic, String isolation, int expect) {
        Properties c = consumerProps("read-" + UUID.randomUUID());
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(topic));
            long idleSince = System.currentTimeMillis();
            while (System.currentTimeMillis() - idleSince < 5000 && out.size() < expect) {
                ConsumerRecords<String, String> recs = consumer.poll(Duration.ofMillis(200));
                if (!recs.isEmpty()) idleSince = System.currentTimeMillis();
                recs.forEach(out::add);
            }
            // a little longer: anything more than expected would show here
            for (int i = 0; i < 5; i++) consumer.poll(Duration.ofMillis(200)).forEach(out::add);
        }
        return out;
    }

    static void idempotent(String prefix) throws Exception {
        String topic = prefix + "-idem";
        try (Admin a = admin()) { create(a, topic, 3); }
        Properties p = producerProps();
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd");
        int n = 3000;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (int i = 0; i < n; i++) acks.add(producer.send(new ProducerRecord<>(topic, "k" + (i % 50), "v" + i)));
            for (Future<RecordMetadata> f : acks) f.get(30, TimeUnit.SECONDS);
        }
        List<ConsumerRecord<String, String>> got = readAll(topic, "read_uncommitted", n);
        Set<String> distinct = new HashSet<>();
        boolean ordered = true;
        Map<Integer, Long> last = new HashMap<>();
        for (ConsumerRecord<String, String> r : got) {
            distinct.add(r.value());
            Long prev = last.put(r.partition(), r.offset());
            if (prev != null && prev >= r.offset()) ordered = false;
        }
        System.out.printf("{\"sent\": %d, \"read\": %d, \"distinct\": %d, \"ordered\": %b}%n", n, got.size(), distinct.size(), ordered);
    }

    static void eos(String prefix) throws Exception {
        String in = prefix + "-in", out = prefix + "-out", group = prefix + "-copier";
        int n = 700;
        try (Admin a = admin()) { create(a, in, 2); create(a, out, 2); }
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps())) {
            for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(in, "k" + i, "r" + i));
            producer.flush();
        }
        Properties p = producerProps();
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-tx");
        Properties c = consumerProps(group);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
        int txns = 0, aborted = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p);
             KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            producer.initTransactions();
            consumer.subscribe(List.of(in));
            int copied = 0;
            long idleSince = System.currentTimeMillis();
            while (copied < n && System.currentTimeMillis() - idleSince < 20000) {
                ConsumerRecords<String, String> recs = consumer.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) continue;
                idleSince = System.currentTimeMillis();
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : recs) {
                    producer.send(new ProducerRecord<>(out, r.key(), r.value().toUpperCase()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                txns++;
                if (txns % 7 == 0) {
                    producer.flush();  // the aborted copies reach the log (abort alone may drop queued sends)
                    producer.abortTransaction();
                    aborted++;
                    // rewind to the last committed positions: the aborted batch is copied again
                    for (TopicPartition tp : offsets.keySet()) {
                        OffsetAndMetadata committed = consumer.committed(Set.of(tp)).get(tp);
                        consumer.seek(tp, committed == null ? 0 : committed.offset());
                    }
                } else {
                    producer.commitTransaction();
                    copied += recs.count();
                }
            }
        }
        List<ConsumerRecord<String, String>> got = readAll(out, "read_committed", n);
        Map<String, Integer> counts = new HashMap<>();
        for (ConsumerRecord<String, String> r : got) counts.merge(r.value(), 1, Integer::sum);
        long dup = counts.values().stream().filter(v -> v > 1).count();
        boolean all = true;
        for (int i = 0; i < n; i++) if (!counts.containsKey("R" + i)) { all = false; break; }
        int uncommittedSeen = readAll(out, "read_uncommitted", n * 2).size();
        System.out.printf("{\"inputs\": %d, \"read_committed\": %d, \"all_present\": %b, \"duplicates\": %d, \"transactions\": %d, \"aborted\": %d, \"read_uncommitted\": %d}%n",
            n, got.size(), all, dup, txns, aborted, uncommittedSeen);
    }

    static void groups(String prefix) throws Exception {
        String topic = prefix + "-grp", group = prefix + "-g";
        int n = 400;
        try (Admin a = admin()) { create(a, topic, 4); }
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps())) {
            for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
            producer.flush();
        }
        Properties c = consumerProps(group);
        c.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
        Properties c1 = (Properties) c.clone();
        c1.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-1");
        Properties c2 = (Properties) c.clone();
        c2.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "static-2");
        Set<String> seen = ConcurrentHashMap.newKeySet();
        Set<Integer> firstAssigned = new HashSet<>(), secondAssigned = new HashSet<>();
        try (KafkaConsumer<String, String> a = new KafkaConsumer<>(c1); KafkaConsumer<String, String> b = new KafkaConsumer<>(c2)) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            while (System.currentTimeMillis() < deadline && (a.assignment().size() + b.assignment().size() < 4
                    || a.assignment().isEmpty() || b.assignment().isEmpty() || seen.size() < n)) {
                for (KafkaConsumer<String, String> k : List.of(a, b)) {
                    k.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                    try {
                        k.commitSync();
                    } catch (org.apache.kafka.common.errors.RebalanceInProgressException e) {
                        // as against Kafka: commit again after the next poll completes the rebalance
                    }
                }
            }
            for (int i = 0; i < 20; i++) {
                try {
                    a.poll(Duration.ofMillis(50));
                    b.poll(Duration.ofMillis(50));
                    a.commitSync();
                    b.commitSync();
                    break;
                } catch (org.apache.kafka.common.errors.RebalanceInProgressException e) {
                    // poll again
                }
            }
            a.assignment().forEach(tp -> firstAssigned.add(tp.partition()));
            b.assignment().forEach(tp -> secondAssigned.add(tp.partition()));
        }
        Set<Integer> overlap = new HashSet<>(firstAssigned);
        overlap.retainAll(secondAssigned);
        try (Admin adm = admin()) {
            Map<TopicPartition, OffsetAndMetadata> committed =
                adm.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            long total = committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
            System.out.printf("{\"records\": %d, \"seen\": %d, \"first\": %d, \"second\": %d, \"overlap\": %d, \"committed_total\": %d}%n",
                n, seen.size(), firstAssigned.size(), secondAssigned.size(), overlap.size(), total);
        }
    }

    /** Poll every consumer in turn (a heartbeat happens inside poll) until `done`, at most 60 s. */
    static void pollUntil(List<KafkaConsumer<String, String>> consumers, Set<String> seen,
                          java.util.function.BooleanSupplier done) {
        long deadline = System.currentTimeMillis() + 60000;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("timed out");
            for (KafkaConsumer<String, String> k : consumers) k.poll(Duration.ofMillis(50)).forEach(r -> seen.add(r.value()));
        }
    }

    /** Has `k` read each of its partitions to `end` (the partitions moved to it are read again from
     *  the start: nothing was committed for them)? */
    static boolean atEnd(KafkaConsumer<String, String> k, long end) {
        return k.assignment().stream().allMatch(tp -> k.position(tp) >= end);
    }

    static Set<Integer> parts(KafkaConsumer<String, String> k) {
        Set<Integer> out = new TreeSet<>();
        k.assignment().forEach(tp -> out.add(tp.partition()));
        return out;
    }

    /** KIP-848 (group.protocol=consumer): static members share a topic, partitions move without being
     *  owned twice, a static member comes back to its partitions, a regex follows new topics. */
    static void consumerProtocol(String prefix) throws Exception {
        String topic = prefix + "-cp", group = prefix + "-cg";
        int n = 600;
        try (Admin a = admin()) { create(a, topic, 6); create(a, prefix + "-rx-1", 1); }
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps())) {
            for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(topic, i % 6, "k" + i, "v" + i));
            producer.flush();
        }
        Properties c = consumerProps(group);
        c.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        Properties c1 = (Properties) c.clone();
        c1.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "s-1");
        Properties c2 = (Properties) c.clone();
        c2.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, "s-2");
        Set<String> seen = ConcurrentHashMap.newKeySet();
        Map<String, Object> r = new LinkedHashMap<>();
        List<Integer> overlaps = new ArrayList<>();
        Set<Integer> second;
        try (KafkaConsumer<String, String> a = new KafkaConsumer<>(c1)) {
            a.subscribe(List.of(topic));
            pollUntil(List.of(a), seen, () -> parts(a).size() == 6);
            try (KafkaConsumer<String, String> b = new KafkaConsumer<>(c2)) {
                b.subscribe(List.of(topic));
                pollUntil(List.of(a, b), seen, () -> {
                    Set<Integer> both = new HashSet<>(parts(a));
                    both.retainAll(parts(b));
                    overlaps.add(both.size());
                    return parts(a).size() == 3 && parts(b).size() == 3 && seen.size() == n
                        && atEnd(a, n / 6) && atEnd(b, n / 6);
                });
                a.commitSync();
                b.commitSync();
                second = parts(b);
            }  // b leaves for now (a static member): its partitions wait for it
            r.put("first_after_leave", parts(a).size());
            try (KafkaConsumer<String, String> back = new KafkaConsumer<>(c2)) {
                back.subscribe(List.of(topic));
                pollUntil(List.of(a, back), seen, () -> parts(back).equals(second));
                r.put("back_same", parts(back).equals(second));
            }
        }
        Properties rx = consumerProps(prefix + "-rxg");
        rx.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        try (KafkaConsumer<String, String> k = new KafkaConsumer<>(rx)) {
            k.subscribe(new SubscriptionPattern(prefix + "-rx-.*"));  // resolved by the broker (RE2J syntax)
            pollUntil(List.of(k), seen, () -> k.assignment().size() == 1);
            try (Admin a = admin()) { create(a, prefix + "-rx-2", 2); }
            pollUntil(List.of(k), seen, () -> k.assignment().size() == 3);
            r.put("regex_partitions", k.assignment().size());
        }
        try (Admin adm = admin()) {
            Map<TopicPartition, OffsetAndMetadata> committed =
                adm.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            r.put("committed_total", committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum());
            ConsumerGroupDescription d = adm.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
            r.put("type", d.type().toString());
        }
        r.put("records", n);
        r.put("seen", seen.size());
        r.put("max_overlap", overlaps.stream().mapToInt(Integer::intValue).max().orElse(0));
        System.out.println(json(r));
    }

    static void admin(String prefix) throws Exception {
        String topic = prefix + "-adm", group = prefix + "-ag";
        Map<String, Object> r = new LinkedHashMap<>();
        try (Admin a = admin()) {
            create(a, topic, 2);
            r.put("described_partitions", a.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size());
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            a.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"),
                AlterConfigOp.OpType.SET)))).all().get();
            Config cfg = a.describeConfigs(List.of(res)).all().get().get(res);
            r.put("retention_ms", cfg.get("retention.ms").value());
            r.put("retention_bytes_type", cfg.get("retention.bytes").type().toString());
            long t0 = 1_767_225_600_000L;
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerProps())) {
                for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(topic, 0, t0 + i * 1000L, "k" + i, "v" + i)).get();
            }
            TopicPartition tp = new TopicPartition(topic, 0);
            r.put("earliest", a.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get().get(tp).offset());
            r.put("latest", a.listOffsets(Map.of(tp, OffsetSpec.latest())).all().get().get(tp).offset());
            r.put("for_timestamp", a.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(t0 + 3500))).all().get().get(tp).offset());
            ListOffsetsResult.ListOffsetsResultInfo max = a.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp())).all().get().get(tp);
            r.put("max_timestamp_offset", max.offset());
            r.put("max_timestamp", max.timestamp());
            // ListOffsets 8, 9 and 11's sentinels: no tiered storage, so the log start and no offset (-1)
            r.put("earliest_local", a.listOffsets(Map.of(tp, OffsetSpec.earliestLocal())).all().get().get(tp).offset());
            r.put("latest_tiered", a.listOffsets(Map.of(tp, OffsetSpec.latestTiered())).all().get().get(tp).offset());
            r.put("earliest_pending_upload",
                a.listOffsets(Map.of(tp, OffsetSpec.earliestPendingUpload())).all().get().get(tp).offset());
            // DescribeCluster 2: fenced brokers asked for (none), each broker's is_fenced
            Collection<Node> nodes = a.describeCluster(new DescribeClusterOptions().includeFencedBrokers(true)).nodes().get();
            r.put("cluster_nodes", nodes.size());
            r.put("fenced_nodes", nodes.stream().filter(Node::isFenced).count());
            a.alterConsumerGroupOffsets(group, Map.of(tp, new OffsetAndMetadata(4))).all().get();
            r.put("group_offset", a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().get(tp).offset());
            a.deleteConsumerGroupOffsets(group, Set.of(tp)).all().get();
            r.put("group_offset_after_delete", a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().get(tp) == null);
            a.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(3))).all().get();
            r.put("earliest_after_delete", a.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get().get(tp).offset());
            Properties p = producerProps();
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-admtx");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                producer.initTransactions();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>(topic, 1, "t", "open")).get();
                r.put("producers_on_partition", a.describeProducers(List.of(new TopicPartition(topic, 1))).all().get()
                    .get(new TopicPartition(topic, 1)).activeProducers().size());
                r.put("listed_transactions", a.listTransactions().all().get().stream()
                    .filter(l -> l.transactionalId().equals(prefix + "-admtx")).count());
                // ListTransactions 2: by a transactional id pattern (matched whole)
                r.put("listed_by_pattern", a.listTransactions(new ListTransactionsOptions()
                    .filterOnTransactionalIdPattern(prefix + "-adm.*")).all().get().size());
                r.put("listed_by_other_pattern", a.listTransactions(new ListTransactionsOptions()
                    .filterOnTransactionalIdPattern(prefix + "-adm")).all().get().size());
                r.put("transaction_state", a.describeTransactions(List.of(prefix + "-admtx")).all().get()
                    .get(prefix + "-admtx").state().toString());
                producer.commitTransaction();
            }
            a.deleteTopics(List.of(topic)).all().get();
            r.put("deleted", !a.listTopics().names().get().contains(topic));
        }
        StringBuilder sb = new StringBuilder("{");
        for (Map.Entry<String, Object> e : r.entrySet()) {
            if (sb.length() > 1) sb.append(", ");
            Object v = e.getValue();
            sb.append('"').append(e.getKey()).append("\": ").append(v instanceof String ? "\"" + v + "\"" : v);
        }
        System.out.println(sb.append("}"));
    }
}
