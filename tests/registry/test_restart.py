"""State rebuilt from `_schemas`: a restarted broker answers the same ids and versions, and the
topic holds Confluent's records (what another vendor's registry would read)."""

from __future__ import annotations

import json
import uuid

import pytest
import requests
from confluent_kafka import Consumer

pytestmark = pytest.mark.interop


def schema(n: int) -> str:
    fields = [{"name": f"f{i}", "type": "int", "default": 0} for i in range(n)]
    return json.dumps({"type": "record", "name": "R", "fields": fields})


def test_restart_keeps_ids_versions_config_and_deletes(fresh_registry_broker):
    rb = fresh_registry_broker()
    s = requests.Session()
    ids = [s.post(f"{rb.url}/subjects/r/versions", json={"schema": schema(n)}).json()["id"] for n in range(1, 4)]
    s.post(f"{rb.url}/subjects/other/versions", json={"schema": schema(1)})
    s.put(f"{rb.url}/config/r", json={"compatibility": "FULL"})
    s.delete(f"{rb.url}/subjects/r/versions/2")
    before = {
        "versions": s.get(f"{rb.url}/subjects/r/versions", params={"deleted": "true"}).json(),
        "live": s.get(f"{rb.url}/subjects/r/versions").json(),
        "latest": s.get(f"{rb.url}/subjects/r/versions/latest").json(),
        "by_id": s.get(f"{rb.url}/schemas/ids/{ids[0]}/versions").json(),
        "config": s.get(f"{rb.url}/config/r").json(),
    }
    rb.broker.restart()
    s = requests.Session()
    after = {
        "versions": s.get(f"{rb.url}/subjects/r/versions", params={"deleted": "true"}).json(),
        "live": s.get(f"{rb.url}/subjects/r/versions").json(),
        "latest": s.get(f"{rb.url}/subjects/r/versions/latest").json(),
        "by_id": s.get(f"{rb.url}/schemas/ids/{ids[0]}/versions").json(),
        "config": s.get(f"{rb.url}/config/r").json(),
    }
    assert after == before
    assert before["live"] == [1, 3] and before["by_id"] == [
        {"subject": "other", "version": 1},
        {"subject": "r", "version": 1},
    ]
    new = s.post(f"{rb.url}/subjects/r/versions", json={"schema": schema(4)}).json()["id"]
    assert new == max(ids) + 1  # ids go on from the largest seen


def test_schemas_topic_holds_confluents_records(fresh_registry_broker):
    rb = fresh_registry_broker()
    sid = requests.post(f"{rb.url}/subjects/t-value/versions", json={"schema": '"string"'}).json()["id"]
    requests.put(f"{rb.url}/config", json={"compatibility": "NONE"})
    c = Consumer({"bootstrap.servers": rb.bootstrap, "group.id": uuid.uuid4().hex, "auto.offset.reset": "earliest"})
    c.subscribe(["_schemas"])
    records = []
    try:
        while len(records) < 2:
            msg = c.poll(10)
            assert msg is not None and msg.error() is None
            records.append((json.loads(msg.key()), json.loads(msg.value())))
    finally:
        c.close()
    assert records[0] == (
        {"keytype": "SCHEMA", "subject": "t-value", "version": 1, "magic": 1},
        {"subject": "t-value", "version": 1, "id": sid, "schema": '"string"', "deleted": False},
    )
    assert records[1] == ({"keytype": "CONFIG", "subject": None, "magic": 0}, {"compatibilityLevel": "NONE"})


def test_records_another_registry_writes_are_read(fresh_registry_broker):
    from confluent_kafka import Producer

    rb = fresh_registry_broker()
    p = Producer({"bootstrap.servers": rb.bootstrap})
    key = {"keytype": "SCHEMA", "subject": "foreign", "version": 1, "magic": 1}
    value = {"subject": "foreign", "version": 1, "id": 42, "schema": '"long"', "deleted": False}
    p.produce("_schemas", key=json.dumps(key), value=json.dumps(value))
    p.produce("_schemas", key=b"not a registry key", value=b"{}")  # skipped, not fatal
    assert p.flush(10) == 0
    assert requests.get(f"{rb.url}/schemas/ids/42").json() == {"schema": '"long"'}
    assert requests.get(f"{rb.url}/subjects/foreign/versions/1").json()["id"] == 42
    assert requests.post(f"{rb.url}/subjects/mine/versions", json={"schema": '"int"'}).json() == {"id": 43}


def _consume_all(bootstrap: str, topic: str) -> list[tuple[bytes, bytes | None]]:
    from confluent_kafka import TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    try:
        while True:
            msg = c.poll(10)
            assert msg is not None
            if msg.error():
                break  # the partition's end
            out.append((msg.key(), msg.value()))
    finally:
        c.close()
    return out


def test_state_survives_compaction_of_schemas(fresh_registry_broker):
    import time

    overrides = {
        "log.segment.bytes": "1024",
        "log.retention.check.interval.ms": "200",
        "log.cleaner.min.cleanable.ratio": "0.01",
    }
    rb = fresh_registry_broker(overrides)
    s = requests.Session()
    for n in range(1, 6):
        s.post(f"{rb.url}/subjects/c/versions", json={"schema": schema(n)}).raise_for_status()
    for level in ("FULL", "NONE", "FORWARD", "BACKWARD"):
        s.put(f"{rb.url}/config/c", json={"compatibility": level}).raise_for_status()
    s.delete(f"{rb.url}/subjects/c/versions/1").raise_for_status()
    s.delete(f"{rb.url}/subjects/c/versions/1", params={"permanent": "true"}).raise_for_status()
    s.delete(f"{rb.url}/subjects/c/versions/2").raise_for_status()
    written = 5 + 4 + 3
    deadline = time.monotonic() + 30
    while len(records := _consume_all(rb.bootstrap, "_schemas")) >= written:
        assert time.monotonic() < deadline, "_schemas was not compacted"
        time.sleep(0.5)
    view = lambda: (
        s.get(f"{rb.url}/subjects/c/versions", params={"deleted": "true"}).json(),
        s.get(f"{rb.url}/subjects/c/versions").json(),
        s.get(f"{rb.url}/config/c").json(),
        [s.get(f"{rb.url}/subjects/c/versions/{v}", params={"deleted": "true"}).json()["id"] for v in (2, 3, 4, 5)],
    )
    before = view()
    assert before[:3] == ([2, 3, 4, 5], [3, 4, 5], {"compatibilityLevel": "BACKWARD"})
    assert len(records) < written
    rb.broker.restart()
    s = requests.Session()
    assert view() == before
