"""Typed columns in Delta and Iceberg tables beyond Avro, end to end through a real broker:
plain JSON values (`--value-format json`, the type inferred and grown across runs) and JSON
Schema values (confluent-kafka's JSONSerializer, `--value-format registry`), each exported in two
runs and read back in Spark by name (Delta) or through `tidelog_iceberg` (Iceberg). The JSON
runs' second run crashes after writing its files, with a field first met past the sample, and is
completed by a re-run with the type the crashed run recorded."""

from __future__ import annotations

import json
import logging

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyiceberg")
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from test_json_inferred import event
from test_typed_formats import ADDRESS, ORDER_V1, ORDER_V2, json_order
from test_typed_lake import delta_log, read
from typed_broker import TypedBroker, export

from tidelog.spark_export.job import SimulatedCrash
from tidelog.spark_export.json_infer import SAMPLE_RECORDS

pytestmark = pytest.mark.timeout(900)

LAKE = ("delta", "iceberg")
LATE = 200  # run 1's records past the sample


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = TypedBroker(tmp_path_factory.mktemp("json-lake") / "data")
    yield b
    b.stop()


def manifest(wh) -> dict:
    return json.loads((wh / "_tidelog" / "manifest.json").read_text())


def value_fields(df) -> list[str]:
    return df.schema["value"].dataType.fieldNames()


@pytest.mark.parametrize("table_format", LAKE)
def test_plain_json_values_in_two_runs_with_a_crash(catalog, broker, tmp_path, caplog, table_format):
    from pyspark.sql import types as T

    spark, topic, wh = catalog, f"events_{table_format}", tmp_path / "wh"
    broker.create(topic, compacted=True, config={"segment.bytes": "32768"})  # several task groups
    n1 = SAMPLE_RECORDS + LATE
    values = [event(n) for n in range(SAMPLE_RECORDS)]  # past the sample: `late`, `user.age`
    values += [event(n, late={"x": n}, user={"name": f"u{n}", "age": n}) for n in range(SAMPLE_RECORDS, n1)]
    first = broker.produce(topic, values, keys=[f"k{n % 50}".encode() for n in range(n1)])
    sentinels = [broker.roll(topic)]
    run = {"table_format": table_format}
    with caplog.at_level(logging.INFO, logger="tidelog.spark_export"):
        export(spark, broker, wh, topic, value_format="json", **run)
    assert any("writing those again" in r.getMessage() for r in caplog.records)  # the inferring write
    table = read(spark, table_format, wh, topic)
    assert value_fields(table) == ["id", "user", "tags", "score", "late"]
    rows = {r.offset: r for r in table.collect()}
    assert all(
        rows[o].value.late.x == n and rows[o].value.user.age == n
        for o, n in zip(first, range(n1))
        if n >= SAMPLE_RECORDS
    )

    # run 2: a field (`coupon`) first met past its sample, a value conflicting with the recorded
    # type; it crashes after writing its files and is completed by a re-run
    sample = [event(n) for n in range(2000, 2000 + SAMPLE_RECORDS)]
    second = broker.produce(topic, sample, keys=[f"r{n % 50}".encode() for n in range(SAMPLE_RECORDS)])
    added, conflict = broker.produce(topic, [event(3000, coupon="SAVE"), event(3001, id="nine")], keys=[b"c0", b"c1"])
    sentinels.append(broker.roll(topic))
    with pytest.raises(SimulatedCrash):
        export(spark, broker, wh, topic, crash_at="written", **run)
    pending = manifest(wh)["pending"]["topics"][topic]["formats"]["value"]
    assert pending["format"] == "json" and "coupon" in pending["type"]  # recorded before any commit
    export(spark, broker, wh, topic, **run)
    doc = manifest(wh)
    assert doc["pending"] is None and doc["topics"][topic]["formats"]["value"] == pending

    table = read(spark, table_format, wh, topic)
    assert value_fields(table) == ["id", "user", "tags", "score", "late", "coupon"]
    types = {f.name: f.dataType for f in table.schema["value"].dataType.fields}
    assert types["id"] == T.LongType() and types["score"] == T.DoubleType() and types["coupon"] == T.StringType()
    assert types["user"] == T.StructType([T.StructField("name", T.StringType()), T.StructField("age", T.LongType())])
    assert types["late"] == T.StructType([T.StructField("x", T.LongType())])
    rows = {r.offset: r for r in table.collect()}
    # each record once; the last sentinel waits in the active segment
    assert sorted(rows) == sorted([*first, *second, added, conflict, sentinels[0]])
    assert rows[added].value.coupon == "SAVE" and rows[added]["_error"] is None
    assert all(rows[o].value.coupon is None for o in first)  # run 1's files under the grown type
    assert rows[conflict].value.id is None and rows[conflict].value.user.name == "u3001"
    assert rows[conflict]["_error"] == "value: id: expected int64, got str" and bytes(rows[conflict].value_raw)
    flagged = {o for o, r in rows.items() if r["_error"] is not None}
    assert flagged == {conflict, sentinels[0]}  # the sentinel is not JSON

    latest = read(spark, table_format, wh, topic + "_latest")
    assert value_fields(latest) == value_fields(table)
    newest = {bytes(r.key): r for r in latest.collect()}
    assert newest[b"c0"].value.coupon == "SAVE" and newest[b"c1"]["_error"] == rows[conflict]["_error"]
    k7 = newest[b"k7"].value  # last written by run 1, past its sample
    assert (k7.id, k7.late.x, k7.coupon) == (n1 - 50 + 7, n1 - 50 + 7, None)
    _check_one_commit_per_run(wh, topic, table_format, doc)


def _check_one_commit_per_run(wh, topic: str, table_format: str, doc: dict) -> None:
    """Each run committed once per table; run 2's commit (the crashed one, completed) holds the
    widened schema (Delta: a metaData action beside its adds and txn; Iceberg: its snapshot's schema)."""
    runs = [r["run_id"] for r in doc["runs"]]
    if table_format == "delta":
        commits = delta_log(wh / "tidelog.db" / topic)
        ids = [a["commitInfo"].get("userMetadata") for v in sorted(commits) for a in commits[v] if "commitInfo" in a]
        assert [i for i in ids if i] == runs
        last = commits[max(commits)]
        assert {"metaData", "txn", "add"} <= {k for a in last for k in a}
        schema = json.loads(next(a["metaData"]["schemaString"] for a in last if "metaData" in a))
        value = next(f["type"] for f in schema["fields"] if f["name"] == "value")
        assert [f["name"] for f in value["fields"]][-1] == "coupon"
    else:
        from tidelog.spark_export.iceberg import load_catalog
        from tidelog.spark_export.iceberg_source import snapshots

        t = load_catalog(wh).load_table(("tidelog", topic))
        snaps = snapshots(wh, topic)
        assert [s["run_id"] for s in snaps] == runs
        one, two = (t.snapshot_by_id(s["snapshot_id"]) for s in snaps)
        assert two.schema_id == t.schema().schema_id != one.schema_id
        t.schemas()[two.schema_id].find_field("value.coupon")  # raises ValueError when absent
        with pytest.raises(ValueError):
            t.schemas()[one.schema_id].find_field("value.coupon")


@pytest.mark.parametrize("table_format", LAKE)
def test_json_schema_values_in_two_runs(catalog, broker, tmp_path, table_format):
    """Registry columns of JSON Schema (a `$ref` into another subject, a map, `{}` as JSON text)
    in Delta and Iceberg: the second version adds `coupon`, the first run's rows read it null."""
    from pyspark.sql import types as T

    spark, topic, wh = catalog, f"orders_json_{table_format}", tmp_path / "wh"
    client = SchemaRegistryClient({"url": broker.url})
    broker.create(topic)
    client.register_schema("address", Schema(json.dumps(ADDRESS), "JSON"))
    ref = SchemaReference("address.json", "address", 1)
    serializer = JSONSerializer(Schema(json.dumps(ORDER_V1), "JSON", [ref]), client)
    first = broker.produce(topic, [json_order(1), json_order(2)], serializer)
    sentinels = [broker.roll(topic)]
    run = {"table_format": table_format}
    export(spark, broker, wh, topic, value_format="registry", **run)
    assert "coupon" not in value_fields(read(spark, table_format, wh, topic))
    serializer = JSONSerializer(Schema(json.dumps(ORDER_V2), "JSON", [ref]), client)
    second = broker.produce(topic, [json_order(3, coupon="SAVE")], serializer)
    sentinels.append(broker.roll(topic))
    export(spark, broker, wh, topic, **run)

    table = read(spark, table_format, wh, topic)
    assert value_fields(table) == [*ORDER_V1["properties"], "coupon"]
    types = {f.name: f.dataType for f in table.schema["value"].dataType.fields}
    assert types["ship"] == T.StructType([T.StructField("city", T.StringType()), T.StructField("zip", T.LongType())])
    assert types["attrs"] == T.MapType(T.StringType(), T.LongType()) and types["extra"] == T.StringType()
    rows = {r.offset: r for r in table.collect()}
    assert sorted(rows) == sorted([*first, *second, sentinels[0]])
    for offset, n in zip([*first, *second], [1, 2, 3]):
        v = rows[offset].value
        assert rows[offset]["_error"] is None
        assert (v.id, v.amount, v.ship.city, v.attrs, json.loads(v.extra)) == (
            n,
            n + 0.5,
            f"city-{n}",
            {"k": n},
            {"any": [n, "thing"]},
        )
        assert [(line.sku, line.qty) for line in v.lines] == [(f"s{n}", n)]
        assert v.coupon == ("SAVE" if n == 3 else None)
