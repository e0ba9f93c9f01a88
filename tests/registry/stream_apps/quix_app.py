"""A Quix Streams app for tests/registry/test_stream_apps.py, run with the stream apps' own
interpreter (`stream_apps_env`): Avro payments in (Confluent's wire format, the schema looked up in
tidelog's registry), a running count and sum per account in a State store, Avro totals out (their
schema registered by Quix's AvroSerializer), exactly once.

    python quix_app.py BOOTSTRAP REGISTRY_URL IN_TOPIC OUT_TOPIC GROUP STATE_DIR

It runs until SIGTERM (Quix's graceful stop) or SIGKILL (the crash test).
"""

from __future__ import annotations

import sys

from quixstreams import Application, State
from quixstreams.models.serializers.avro import AvroDeserializer, AvroSerializer
from quixstreams.models.serializers.schema_registry import SchemaRegistryClientConfig

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


def add(value: dict, state: State) -> dict:
    count = state.get("count", 0) + 1
    total = state.get("total", 0) + value["amount"]
    state.set("count", count)
    state.set("total", total)
    return {"account": value["account"], "count": count, "total": total}


def main() -> None:
    bootstrap, registry_url, in_topic, out_topic, group, state_dir = sys.argv[1:7]
    registry = SchemaRegistryClientConfig(url=registry_url)
    app = Application(
        broker_address=bootstrap,
        consumer_group=group,
        auto_offset_reset="earliest",
        processing_guarantee="exactly-once",
        commit_interval=0.5,
        state_dir=state_dir,
        loglevel="INFO",
        # a fixed transactional.id: a restarted app fences (and aborts) a crashed one's transaction
        producer_extra_config={"transactional.id": "totals"},
        # a crashed member leaves the group after 6 s, not the default 45 s
        consumer_extra_config={"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000},
    )
    payments = app.topic(
        in_topic,
        key_deserializer="str",
        value_deserializer=AvroDeserializer(schema_registry_client_config=registry),
    )
    totals = app.topic(
        out_topic,
        key_serializer="str",
        value_serializer=AvroSerializer(TOTAL_SCHEMA, schema_registry_client_config=registry),
    )
    sdf = app.dataframe(payments)
    sdf = sdf.apply(add, stateful=True)
    sdf.to_topic(totals)
    app.run()


if __name__ == "__main__":
    main()
