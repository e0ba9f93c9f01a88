// Kafka 4.3.1's KafkaShareConsumer and AdminClient share-group calls against a running broker
// (KIP-932, share groups): run as `java ClientChecks <bootstrap> share <prefix> [replication
// factor]`; prints one JSON line that tests/kafka_ref/test_java_client.py (a single node) and
// tests/cluster/test_share_groups.py (a cluster) assert on. The broker must allow a record lock
// of 2 s (group.share.min.record.lock.duration.ms <= 2000).
//
// - explicit acknowledgement: ACCEPT, RELEASE (the record comes again, delivery count 2), REJECT
//   (it never comes again); then the group's start offset and lag from Admin.listShareGroupOffsets;
// - implicit acknowledgement by the next poll, and by commitSync;
// - a lock that times out: another consumer gets the records, counted twice;
// - three consumers on one partition: every record delivered once, to more than one of them;
// - Admin.alterShareGroupOffsets (rewind an empty group) and deleteShareGroupOffsets.

import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class ShareChecks {
    static Properties shareProps(String group, String mode) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, ClientChecks.bootstrap);
        c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, mode);
        return c;
    }

    /** Group configs (kafka-configs --entity-type groups), e.g. share.auto.offset.reset. */
    static void groupConfig(Admin a, String group, Map<String, String> configs) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        configs.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        a.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops))
            .all().get(30, TimeUnit.SECONDS);
    }

    static void produce(String topic, int n, String tag, boolean oneBatchEach) throws Exception {
        try (KafkaProducer<String, String> p = new KafkaProducer<>(ClientChecks.producerProps())) {
            for (int i = 0; i < n; i++) {
                p.send(new ProducerRecord<>(topic, 0, "k" + i, tag + i));
                if (oneBatchEach) p.flush();
            }
            p.flush();
        }
    }

    static SharePartitionOffsetInfo offsets(Admin a, String group, String topic) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> m = a.listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
            .partitionsToOffsetInfo(group).get(30, TimeUnit.SECONDS);
        return m.get(new TopicPartition(topic, 0));
    }

    static short rf = 1;  // the topics' replication factor (3 on a cluster)

    static void share(String prefix, String[] args) throws Exception {
        if (args.length > 3) rf = Short.parseShort(args[3]);
        Map<String, Object> r = new LinkedHashMap<>();
        String tx = prefix + "-sx", tl = prefix + "-sl", tm = prefix + "-sm";
        String gx = prefix + "-sxg", gl = prefix + "-slg", gm = prefix + "-smg";
        try (Admin a = ClientChecks.admin()) {
            for (String t : List.of(tx, tl, tm))
                a.createTopics(List.of(new NewTopic(t, 1, rf))).all().get(30, TimeUnit.SECONDS);
            for (String g : List.of(gx, gl, gm)) groupConfig(a, g, Map.of("share.auto.offset.reset", "earliest"));
            groupConfig(a, gl, Map.of("share.record.lock.duration.ms", "2000"));
        }
        explicit(tx, gx, r);
        lockTimeout(tl, gl, r);
        several(tm, gm, r);
        try (Admin a = ClientChecks.admin()) {
            // the explicit group is empty now: rewind it, then delete its offsets
            a.alterShareGroupOffsets(gx, Map.of(new TopicPartition(tx, 0), 4L)).all().get(30, TimeUnit.SECONDS);
            SharePartitionOffsetInfo after = offsets(a, gx, tx);
            r.put("altered_start", after.startOffset());
            r.put("altered_lag", after.lag().orElse(-1L));
            try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(shareProps(gx, "implicit"))) {
                c.subscribe(List.of(tx));
                List<String> again = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 30_000;
                while (again.size() < 6 && System.currentTimeMillis() < deadline)
                    c.poll(Duration.ofMillis(200)).forEach(rec -> again.add(rec.value()));
                c.commitSync();
                r.put("after_rewind", String.join(",", again));
            }
            a.deleteShareGroupOffsets(gx, Set.of(tx)).all().get(30, TimeUnit.SECONDS);
            Map<TopicPartition, SharePartitionOffsetInfo> left = a.listShareGroupOffsets(
                Map.of(gx, new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(gx).get(30, TimeUnit.SECONDS);
            r.put("after_delete", left.size());
            ShareGroupDescription d = a.describeShareGroups(List.of(gm)).all().get(30, TimeUnit.SECONDS).get(gm);
            r.put("described_state", d.groupState().toString());
        }
        System.out.println(ClientChecks.json(r));
    }

    /** ACCEPT all but one RELEASE and one REJECT: the released one comes again, counted. */
    static void explicit(String topic, String group, Map<String, Object> r) throws Exception {
        produce(topic, 10, "x", false);
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(shareProps(group, "explicit"))) {
            c.subscribe(List.of(topic));
            Set<String> first = new HashSet<>();
            long deadline = System.currentTimeMillis() + 60_000;
            while (first.size() < 10 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> rec : c.poll(Duration.ofMillis(200))) {
                    first.add(rec.value());
                    AcknowledgeType t = rec.value().equals("x3") ? AcknowledgeType.RELEASE
                        : rec.value().equals("x5") ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
                    c.acknowledge(rec, t);
                }
            }
            c.commitSync();
            r.put("explicit_first", first.size());
            List<String> later = new ArrayList<>();
            int count = -1;
            deadline = System.currentTimeMillis() + 30_000;
            while (!later.contains("x3") && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> rec : c.poll(Duration.ofMillis(200))) {
                    later.add(rec.value());
                    if (rec.value().equals("x3")) count = rec.deliveryCount().map(Short::intValue).orElse(-1);
                    c.acknowledge(rec, AcknowledgeType.ACCEPT);
                }
            }
            c.commitSync();
            // a while more: the rejected record must not come back
            for (int i = 0; i < 5; i++) {
                for (ConsumerRecord<String, String> rec : c.poll(Duration.ofMillis(200))) {
                    later.add(rec.value());
                    c.acknowledge(rec, AcknowledgeType.ACCEPT);
                }
            }
            c.commitSync();
            r.put("redelivered", String.join(",", later));
            r.put("redelivery_count", count);
            r.put("acquisition_lock_ms", c.acquisitionLockTimeoutMs().orElse(-1));
        }
        try (Admin a = ClientChecks.admin()) {
            SharePartitionOffsetInfo o = offsets(a, group, topic);
            r.put("start_offset", o.startOffset());
            r.put("lag", o.lag().orElse(-1L));
        }
    }

    /** One consumer acquires and never acknowledges; after the 2 s lock another gets them, counted 2. */
    static void lockTimeout(String topic, String group, Map<String, Object> r) throws Exception {
        produce(topic, 5, "l", false);
        try (KafkaShareConsumer<String, String> holder = new KafkaShareConsumer<>(shareProps(group, "explicit"));
             KafkaShareConsumer<String, String> other = new KafkaShareConsumer<>(shareProps(group, "explicit"))) {
            holder.subscribe(List.of(topic));
            int held = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (held < 5 && System.currentTimeMillis() < deadline) held += holder.poll(Duration.ofMillis(200)).count();
            r.put("held", held);  // acquired, never acknowledged: the holder polls no more
            other.subscribe(List.of(topic));
            List<Integer> counts = new ArrayList<>();
            deadline = System.currentTimeMillis() + 60_000;
            while (counts.size() < 5 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> rec : other.poll(Duration.ofMillis(200))) {
                    counts.add(rec.deliveryCount().map(Short::intValue).orElse(-1));
                    other.acknowledge(rec, AcknowledgeType.ACCEPT);
                }
            }
            other.commitSync();
            r.put("lock_redelivered", counts.size());
            r.put("lock_delivery_count", counts.stream().mapToInt(Integer::intValue).min().orElse(-1));
        }
    }

    /** Three consumers on one partition, implicit acknowledgement: each record once, shared out. */
    static void several(String topic, String group, Map<String, Object> r) throws Exception {
        int n = 200;
        ConcurrentHashMap<String, Integer> deliveries = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        List<AtomicInteger> got = List.of(new AtomicInteger(), new AtomicInteger(), new AtomicInteger());
        ExecutorService pool = Executors.newFixedThreadPool(3, task -> {
            Thread t = new Thread(task);
            t.setDaemon(true);  // a failed check ends the program
            return t;
        });
        List<Future<?>> running = new ArrayList<>();
        for (AtomicInteger mine : got) {
            running.add(pool.submit(() -> {
                Properties p = shareProps(group, "implicit");
                p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5");
                try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
                    c.subscribe(List.of(topic));
                    while (!stop.get()) {
                        ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(100));
                        for (ConsumerRecord<String, String> rec : recs) {
                            deliveries.merge(rec.value(), 1, Integer::sum);
                            mine.incrementAndGet();
                        }
                        if (!recs.isEmpty()) Thread.sleep(20);  // some work per batch
                    }
                    c.commitSync();
                }
                return null;
            }));
        }
        try (Admin a = ClientChecks.admin()) {  // all three members hold the partition first
            long deadline = System.currentTimeMillis() + 60_000;
            while (System.currentTimeMillis() < deadline) {
                try {
                    ShareGroupDescription d = a.describeShareGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
                    if (d.members().size() == 3
                            && d.members().stream().allMatch(m -> !m.assignment().topicPartitions().isEmpty()))
                        break;
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof org.apache.kafka.common.errors.GroupIdNotFoundException)) throw e;
                }  // not there until its first member's heartbeat
                Thread.sleep(100);
            }
        }
        produce(topic, n, "m", true);
        long deadline = System.currentTimeMillis() + 60_000;
        while (deliveries.size() < n && System.currentTimeMillis() < deadline) Thread.sleep(100);
        try (Admin a = ClientChecks.admin()) {  // until every delivery is acknowledged: none can come again
            while (System.currentTimeMillis() < deadline && offsets(a, group, topic).startOffset() < n) Thread.sleep(100);
        }
        stop.set(true);
        for (Future<?> f : running) f.get(60, TimeUnit.SECONDS);
        pool.shutdown();
        r.put("several_distinct", deliveries.size());
        r.put("several_duplicates", deliveries.values().stream().mapToInt(v -> v - 1).sum());
        r.put("several_consumers_with_records", got.stream().filter(g -> g.get() > 0).count());
    }

    /**
     * Read `topic` as a member of `group` until `total` distinct values were seen (or 180 s),
     * with Kafka's KafkaShareConsumer ("share") or KafkaConsumer with group.protocol=consumer
     * ("consumer"), printing "seen N" as it goes (the test kills brokers meanwhile), then one
     * JSON line: distinct values, deliveries.
     */
    static void run(String kind, String topic, String group, int total) throws Exception {
        Set<String> seen = new HashSet<>();
        int deliveries = 0, reported = 0;
        long deadline = System.currentTimeMillis() + 180_000;
        if (kind.equals("share")) {
            try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(shareProps(group, "implicit"))) {
                c.subscribe(List.of(topic));
                while (seen.size() < total && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> rec : c.poll(Duration.ofMillis(200))) {
                        seen.add(rec.value());
                        deliveries++;
                    }
                    if (seen.size() - reported >= 50) System.out.println("seen " + (reported = seen.size()));
                }
                c.commitSync();
            }
        } else {
            Properties p = ClientChecks.consumerProps(group);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "true");
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
                c.subscribe(List.of(topic));
                while (seen.size() < total && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> rec : c.poll(Duration.ofMillis(200))) {
                        seen.add(rec.value());
                        deliveries++;
                    }
                    if (seen.size() - reported >= 50) System.out.println("seen " + (reported = seen.size()));
                }
                c.commitSync();
            }
        }
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("distinct", seen.size());
        r.put("deliveries", deliveries);
        System.out.println(ClientChecks.json(r));
    }
}
