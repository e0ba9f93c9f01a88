"""A faust-streaming worker for tests/registry/test_stream_apps.py, run with the stream apps' own
interpreter (`stream_apps_env`): an agent over Avro payments (a faust codec over confluent-kafka's
AvroSerializer and AvroDeserializer against tidelog's registry) that keeps a running count and sum
per account in a Table and sends Avro totals (their schema registered by the codec).

    python faust_app.py BOOTSTRAP REGISTRY_URL IN_TOPIC OUT_TOPIC APP_ID

It runs until SIGTERM (faust's graceful shutdown).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import faust
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from faust.serializers import codecs

TOTAL_SCHEMA = {
    "type": "record",
    "name": "AccountTotal",
    "namespace": "tidelog.tests",
    "fields": [
        {"name": "account", "type": "string"},
        {"name": "count", "type": "long"},
        {"name": "total", "type": "long"},
    ],
}


class AvroCodec(codecs.Codec):
    """Confluent's wire format (magic byte, schema id, Avro body) for one topic's values: the
    subject is `<topic>-value`, as confluent-kafka's default subject name strategy has it."""

    def __init__(self, registry: SchemaRegistryClient, topic: str, schema: dict | None = None) -> None:
        super().__init__()
        self.ctx = SerializationContext(topic, MessageField.VALUE)
        self.serializer = AvroSerializer(registry, json.dumps(schema)) if schema else None
        self.deserializer = AvroDeserializer(registry)

    def _dumps(self, obj: Any) -> bytes:
        assert self.serializer is not None, "a codec without a schema only decodes"
        return self.serializer(obj, self.ctx)

    def _loads(self, s: bytes) -> Any:
        return self.deserializer(s, self.ctx)


bootstrap, registry_url, in_topic, out_topic, app_id = sys.argv[1:6]
registry = SchemaRegistryClient({"url": registry_url})
app = faust.App(
    app_id,
    broker=f"kafka://{bootstrap}",
    store="memory://",
    web_enabled=False,
    topic_partitions=2,
    topic_replication_factor=1,
    consumer_auto_offset_reset="earliest",
)
payments = app.topic(in_topic, key_type=bytes, key_serializer="raw", value_serializer=AvroCodec(registry, in_topic))
totals = app.topic(
    out_topic, key_type=bytes, key_serializer="raw", value_serializer=AvroCodec(registry, out_topic, TOTAL_SCHEMA)
)
running = app.Table("running", default=None, key_type=str, partitions=2)


@app.agent(payments)
async def add(stream: faust.StreamT) -> None:
    async for event in stream.events():
        account = event.key.decode()
        count, total = running.get(account) or (0, 0)
        count, total = count + 1, total + event.value["amount"]
        running[account] = [count, total]
        await totals.send(key=account.encode(), value={"account": account, "count": count, "total": total})


if __name__ == "__main__":
    sys.argv = [sys.argv[0], "worker", "--loglevel", "info"]
    app.main()
