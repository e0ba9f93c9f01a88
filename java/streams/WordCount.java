// Kafka Streams word count with processing.guarantee=exactly_once_v2, run against tidelog by
// tests/kafka_ref/test_streams_connect.py: reads lines from <in>, writes running counts per word
// to <out>; runs until the file named by <stop> exists. <group protocol> is "classic" (the default)
// or "streams" (KIP-1071: the broker assigns the tasks); <replication factor> that of its internal
// topics (default 1).
//
//   java WordCount <bootstrap> <application id> <in> <out> <state dir> <stop file> [<group protocol> [<replication factor>]]

import java.nio.file.*;
import java.util.*;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.kstream.*;

public class WordCount {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, args.length > 7 ? Integer.parseInt(args[7]) : 1);
        if (args.length > 6) p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, args[6]);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        // survive the broker's restart: keep retrying, as an application would
        p.put(StreamsConfig.producerPrefix("delivery.timeout.ms"), 120000);
        p.put(StreamsConfig.RETRY_BACKOFF_MS_CONFIG, 200);
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream(args[2])
            .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
            .filter((k, word) -> !word.isEmpty())
            .groupBy((k, word) -> word)
            .count()
            .toStream()
            .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        streams.setUncaughtExceptionHandler(e -> {
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        streams.start();
        Path stop = Paths.get(args[5]);
        while (!Files.exists(stop)) Thread.sleep(100);
        streams.close(java.time.Duration.ofSeconds(20));
        System.out.println("{\"state\": \"" + streams.state() + "\"}");
    }
}
