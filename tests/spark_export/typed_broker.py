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

    def create(self, topic: str, compacted: bool = False, config: dict[str, str] | None = None) -> None:
        config = {"segment.ms": str(HOUR), **(config or {})}
        if compacted:
            config["cleanup.policy"] = "compact"
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for f in admin.create_topics([NewTopic(topic, 1, 1, config=config)]).values():
            f.result(30)
        self.clock[topic] = T0

    def produce(self, topic: str, values: list, serializer=None, key_serializer=None, keys=None) -> list[int]:
        """Produce `values` (serialized by `serializer` when given; else bytes) one ms apart: their offsets."""
        offsets: list[int] = []
        errors: list[object] = []
        # batches well below a small segment.bytes (a larger batch is refused)
        p = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5, "batch.size": 8192})
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
                on_delivery=lambda err, msg: errors.append(err) if err else offsets.append(msg.offset()),
            )
        assert p.flush(30) == 0
        assert not errors and len(offsets) == len(values), errors[:3]
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


def proto_classes(version: int):
    """(Order, Line) of `shop/order.proto` (which imports `shop/address.proto` and Timestamp),
    built from descriptors by hand; version 2 adds `coupon`. `Line` comes first in the file, so
    an Order's message indexes are [1]."""
    from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2
    from google.protobuf.message_factory import GetMessageClass

    fdp = descriptor_pb2.FileDescriptorProto
    address = fdp(name="shop/address.proto", package="shop", syntax="proto3")
    address.message_type.add(name="Address").field.add(name="city", number=1, type=9, label=1)
    order = fdp(name="shop/order.proto", package="shop", syntax="proto3")
    order.dependency.extend(["shop/address.proto", "google/protobuf/timestamp.proto"])
    line = order.message_type.add(name="Line")
    line.field.add(name="sku", number=1, type=9, label=1)
    line.field.add(name="qty", number=2, type=5, label=1)
    o = order.message_type.add(name="Order")
    entry = o.nested_type.add(name="AttrsEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=9, label=1)
    entry.field.add(name="value", number=2, type=3, label=1)
    status = o.enum_type.add(name="Status")
    status.value.add(name="NEW", number=0)
    status.value.add(name="PAID", number=1)
    o.oneof_decl.add(name="pay")
    o.oneof_decl.add(name="_note")
    o.field.add(name="id", number=1, type=3, label=1)
    o.field.add(name="lines", number=3, type=11, label=3, type_name=".shop.Line")
    o.field.add(name="attrs", number=4, type=11, label=3, type_name=".shop.Order.AttrsEntry")
    o.field.add(name="status", number=5, type=14, label=1, type_name=".shop.Order.Status")
    o.field.add(name="card", number=6, type=9, label=1, oneof_index=0)
    o.field.add(name="cash", number=7, type=5, label=1, oneof_index=0)
    o.field.add(name="at", number=8, type=11, label=1, type_name=".google.protobuf.Timestamp")
    o.field.add(name="ship", number=9, type=11, label=1, type_name=".shop.Address")
    o.field.add(name="note", number=10, type=9, label=1, oneof_index=1, proto3_optional=True)
    o.field.add(name="big", number=11, type=4, label=1)
    if version == 2:
        o.field.add(name="coupon", number=12, type=9, label=1)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp.FromString(timestamp_pb2.DESCRIPTOR.serialized_pb))
    pool.Add(address)
    pool.Add(order)
    return tuple(GetMessageClass(pool.FindMessageTypeByName(f"shop.{n}")) for n in ("Order", "Line"))
