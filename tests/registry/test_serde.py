"""confluent-kafka's serializers produce and consume through a real broker with its registry."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

pytestmark = pytest.mark.interop

AVRO = '{"type":"record","name":"Payment","fields":[{"name":"id","type":"string"},{"name":"amount","type":"double"}]}'
JSON = (
    '{"type":"object","properties":{"id":{"type":"string"},"amount":{"type":"number"}},'
    '"required":["id"],"additionalProperties":false}'
)


def round_trip(bootstrap: str, topic: str, serialize, deserialize, values: list[object]) -> list[object]:
    p = Producer({"bootstrap.servers": bootstrap})
    for v in values:
        p.produce(topic, value=serialize(v, SerializationContext(topic, MessageField.VALUE)))
    assert p.flush(15) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    out: list[object] = []
    try:
        while len(out) < len(values):
            msg = c.poll(10)
            assert msg is not None, f"only {len(out)} of {len(values)} consumed"
            assert msg.error() is None, msg.error()
            out.append(deserialize(msg.value(), SerializationContext(topic, MessageField.VALUE)))
    finally:
        c.close()
    return out


def test_avro(registry_broker):
    client = SchemaRegistryClient({"url": registry_broker.url})
    values = [{"id": "a", "amount": 1.5}, {"id": "b", "amount": 2.0}]
    got = round_trip(
        registry_broker.bootstrap, "payments-avro", AvroSerializer(client, AVRO), AvroDeserializer(client), values
    )
    assert got == values
    assert client.get_latest_version("payments-avro-value").schema.schema_type == "AVRO"


def test_json(registry_broker):
    client = SchemaRegistryClient({"url": registry_broker.url})
    values = [{"id": "a", "amount": 1.5}, {"id": "b"}]
    ser = JSONSerializer(JSON, client)
    got = round_trip(registry_broker.bootstrap, "payments-json", ser, JSONDeserializer(JSON), values)
    assert got == values
    assert client.get_latest_version("payments-json-value").schema.schema_type == "JSON"


def order_class() -> type:
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf.message_factory import GetMessageClass

    fdp = descriptor_pb2.FileDescriptorProto(name="shop/order.proto", package="shop", syntax="proto3")
    m = fdp.message_type.add(name="Order")
    m.field.add(name="id", number=1, type=9, label=1)  # string
    m.field.add(name="qty", number=2, type=5, label=1)  # int32
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def test_protobuf(registry_broker):
    client = SchemaRegistryClient({"url": registry_broker.url})
    order = order_class()
    ser = ProtobufSerializer(order, client, {"use.deprecated.format": False})
    de = ProtobufDeserializer(order, {"use.deprecated.format": False})
    values = [order(id="a", qty=2), order(id="b", qty=3)]
    got = round_trip(registry_broker.bootstrap, "orders-proto", ser, de, values)
    assert got == values
    latest = client.get_latest_version("orders-proto-value")
    assert latest.schema.schema_type == "PROTOBUF"


def event_class() -> type:
    """A message with a google.protobuf.Timestamp field: its file imports another one, which the
    serializer registers first, as a reference (when told not to skip well-known types)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, timestamp_pb2
    from google.protobuf.message_factory import GetMessageClass

    pool = descriptor_pool.DescriptorPool()
    ts = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(ts)
    pool.Add(ts)
    fdp = descriptor_pb2.FileDescriptorProto(name="shop/event.proto", package="shop", syntax="proto3")
    fdp.dependency.append("google/protobuf/timestamp.proto")
    m = fdp.message_type.add(name="Event")
    m.field.add(name="name", number=1, type=9, label=1)
    m.field.add(name="at", number=2, type=11, label=1, type_name=".google.protobuf.Timestamp")
    pool.Add(fdp)
    return GetMessageClass(pool.FindMessageTypeByName("shop.Event"))


def test_protobuf_with_a_reference(registry_broker):
    client = SchemaRegistryClient({"url": registry_broker.url})
    event = event_class()
    ser = ProtobufSerializer(event, client, {"use.deprecated.format": False, "skip.known.types": False})
    de = ProtobufDeserializer(event, {"use.deprecated.format": False})
    first = event(name="a")
    first.at.seconds = 1_700_000_000
    got = round_trip(registry_broker.bootstrap, "events-proto", ser, de, [first])
    assert got == [first]
    latest = client.get_latest_version("events-proto-value")
    assert [r.name for r in latest.schema.references] == ["google/protobuf/timestamp.proto"]
    assert "google/protobuf/timestamp.proto" in client.get_subjects()
