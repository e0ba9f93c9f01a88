"""A real broker with its schema registry for the typed-column tests, and what they do with it:
produce with confluent-kafka's serializers, close the active segments, export, read back."""

from __future__ import annotations

from pathlib import Path

from broker_process import BrokerProcess
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.serialization import MessageField, SerializationContext
from registry.registry_urls import registry_url

HOUR = 3_600_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class TypedBroker:
    """A `tidelog serve` with `schema.registry.listeners`; topics of one partition whose segments
    roll on a record two `segment.ms` newer than the segment's first (`roll`)."""

    def __init__(self, data_dir: Path) -> None:
        self.process = BrokerProcess(
            data_dir, {"schema.registry.listeners": "http://127.0.0.1:0", "log.cleaner.enable": "false"}
        ).start()
        self.data_dir = data_dir
        self.url = registry_url(self.process.log_path)
        self.clock: dict[str, int] = {}

    @property
    def bootstrap(self) -> str:
        return self.process.bootstrap

    def create(self, topic: str, compacted: bool = False) -> None:
        config = {"segment.ms": str(HOUR)}
        if compacted:
            config["cleanup.policy"] = "compact"
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for f in admin.create_topics([NewTopic(topic, 1, 1, config=config)]).values():
            f.result(30)
        self.clock[topic] = T0

    def produce(self, topic: str, values: list, serializer=None, key_serializer=None, keys=None) -> list[int]:
        """Produce `values` (serialized by `serializer` when given; else bytes) one ms apart: their offsets."""
        offsets: list[int] = []
        p = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        for n, v in enumerate(values):
            self.clock[topic] += 1
            value = serializer(v, SerializationContext(topic, MessageField.VALUE)) if serializer else v
            key = keys[n] if keys is not None else None
            if key_serializer is not None and key is not None:
                key = key_serializer(key, SerializationContext(topic, MessageField.KEY))
            p.produce(
                topic,
                value=value,
                key=key,
                timestamp=self.clock[topic],
                on_delivery=lambda err, msg: offsets.append(msg.offset()) if err is None else None,
            )
        assert p.flush(30) == 0
        assert len(offsets) == len(values)
        return offsets

    def roll(self, topic: str) -> int:
        """Close the active segment: a record (`sentinel`, not framed) two segment.ms later rolls
        it and waits alone in the new one; the next roll closes it in turn. Its offset."""
        self.clock[topic] += 2 * HOUR
        (offset,) = self.produce(topic, [b"sentinel"])
        self.clock[topic] += 2 * HOUR
        return offset

    def stop(self) -> None:
        self.process.stop()


def export(spark, broker: TypedBroker, warehouse: Path, topic: str, **options):
    from tidelog.spark_export.job import ExportJob, ExportOptions

    return ExportJob(spark, ExportOptions([broker.data_dir], warehouse, topics=[topic], **options)).run()


def rows_by_offset(spark, topic: str) -> dict:
    return {r.offset: r for r in spark.table(f"tidelog.`{topic}`").collect()}
