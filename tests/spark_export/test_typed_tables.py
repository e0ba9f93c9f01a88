"""Typed columns (`--value-format registry`): Avro values in Confluent's framing, their schemas
read from the `_schemas` topic's segments, decoded into a struct column whose type is the union
of the subject's versions across runs; records that do not decode land in `value_raw`/`_error`."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
from pathlib import Path

import pytest

from tidelog.core.topics import TopicRegistry
from tidelog.log import schema_records as R
from tidelog.log.config import LogConfig
from tidelog.log.log import PartitionLog
from tidelog.log.records import Record, build_batch

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z

ADDRESS = {"type": "record", "name": "Address", "fields": [{"name": "city", "type": "string"}]}
V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "qty", "type": "int"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "ship_to", "type": ADDRESS},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
V2 = {**V1, "fields": V1["fields"] + [{"name": "coupon", "type": ["null", "string"], "default": None}]}


def order(n: int, **extra) -> dict:
    return {
        "id": n,
        "qty": n * 10,
        "amount": decimal.Decimal(f"{n}.25"),
        "day": dt.date(2025, 1, n),
        "at": dt.datetime(2025, 1, 1, 12, n, tzinfo=dt.UTC),
        "status": "PAID" if n % 2 else "NEW",
        "tags": [f"t{n}"],
        "attrs": {"k": n},
        "ship_to": {"city": f"city-{n}"},
        "note": None if n % 2 else f"note-{n}",
        **extra,
    }


def framed(schema_id: int, schema: dict, value: dict) -> bytes:
    from fastavro import parse_schema, schemaless_writer

    out = io.BytesIO()
    out.write(b"\0" + schema_id.to_bytes(4, "big"))
    schemaless_writer(out, parse_schema(schema), value)
    return out.getvalue()


class Data:
    """A topic `orders` and the registry's `_schemas`, written with the log engine."""

    def __init__(self, root: Path) -> None:
        self.root = root
        TopicRegistry(root, node_id=1).create("orders", 1, {})
        cfg = LogConfig(segment_bytes=1 << 20, index_interval_bytes=512, retention_ms=-1)
        self.orders = PartitionLog.open(root, "orders", 0, cfg)
        self.schemas = PartitionLog.open(root, "_schemas", 0, cfg)
        self.clock = T0

    def register(self, version: int, schema_id: int, schema: dict | str, subject: str = "orders-value") -> None:
        key = R.encode_key(R.SchemaKey(subject, version))
        value = R.encode_schema(R.SchemaValue(subject, version, schema_id, json.dumps(schema)))
        self.schemas.append_raw(build_batch([Record(key, value, self.clock, [])]), now_ms=self.clock)

    def produce(self, *values: bytes | None) -> None:
        records = []
        for v in values:
            self.clock += 1000
            records.append(Record(b"k", v, self.clock, []))
        self.orders.append_raw(build_batch(records), now_ms=self.clock)

    def roll(self) -> None:
        self.orders.roll(now_ms=self.clock)

    def close(self) -> None:
        self.orders.close()
        self.schemas.close()


def export(spark, data: Path, warehouse: Path, **kw):
    from tidelog.spark_export.job import ExportJob, ExportOptions

    return ExportJob(spark, ExportOptions([data], warehouse, value_format="registry", **kw)).run()


def test_registry_values_become_a_struct_column_that_evolves_across_runs(catalog, tmp_path):
    from pyspark.sql import types as T

    spark = catalog
    d, wh = Data(tmp_path / "data"), tmp_path / "wh"
    d.register(1, 1, V1)
    d.produce(framed(1, V1, order(1)), framed(1, V1, order(2)))
    d.roll()
    export(spark, d.root, wh, compact_topics=["orders"])
    first = spark.table("tidelog.orders").schema["value"].dataType
    assert "coupon" not in first.fieldNames()

    # v2 adds an optional field; the second run's files have it, the first run's do not
    d.register(2, 2, V2)
    d.register(1, 3, "string", subject="orders-key")
    d.produce(
        framed(2, V2, order(3, coupon="SAVE")),
        b"plain text",
        framed(99, V2, order(4)),
        framed(1, V1, order(5))[:-3],  # truncated
        None,  # a tombstone: null, no error
        framed(1, V1, order(6)),
    )
    d.roll()
    d.close()
    export(spark, d.root, wh, compact_topics=["orders"])

    table = spark.table("tidelog.orders")
    value = table.schema["value"].dataType
    assert value.fieldNames() == [f["name"] for f in V2["fields"]]
    types = {f.name: f.dataType for f in value.fields}
    assert types["id"] == T.LongType() and types["qty"] == T.IntegerType()
    assert types["amount"] == T.DecimalType(10, 2) and types["day"] == T.DateType()
    assert types["at"] == T.TimestampType() and types["status"] == T.StringType()
    assert types["tags"] == T.ArrayType(T.StringType()) and types["attrs"] == T.MapType(T.StringType(), T.LongType())
    assert types["ship_to"] == T.StructType([T.StructField("city", T.StringType())])
    assert table.schema["value_raw"].dataType == T.BinaryType() and table.schema["_error"].dataType == T.StringType()

    rows = {r.offset: r for r in table.collect()}
    assert sorted(rows) == list(range(8))
    good = {0: 1, 1: 2, 2: 3, 7: 6}
    for offset, n in good.items():
        r = rows[offset]
        assert r["_error"] is None and r.value_raw is None
        v = r.value
        assert (v.id, v.qty, v.amount, v.day) == (n, n * 10, decimal.Decimal(f"{n}.25"), dt.date(2025, 1, n))
        assert v.at == dt.datetime(2025, 1, 1, 12, n)  # the session's time zone is UTC
        assert (v.status, v.tags, v.attrs, v.ship_to.city) == (
            "PAID" if n % 2 else "NEW",
            [f"t{n}"],
            {"k": n},
            f"city-{n}",
        )
        assert v.note == (None if n % 2 else f"note-{n}")
        assert v.coupon == ("SAVE" if n == 3 else None)
    errors = {o: rows[o]["_error"] for o in (3, 4, 5)}
    assert "not in Confluent's framing" in errors[3]
    assert "unknown schema id 99" in errors[4]
    assert "Avro decode failure (schema id 1)" in errors[5]
    for o in (3, 4, 5):
        assert rows[o].value is None and bytes(rows[o].value_raw)
    assert bytes(rows[3].value_raw) == b"plain text"
    assert rows[6].value is None and rows[6].value_raw is None and rows[6]["_error"] is None

    # `_latest`: the first run's version (v1's narrower struct) merged with the new rows
    latest = spark.table("tidelog.orders_latest")
    assert latest.schema["value"].dataType == value
    assert [(r.offset, r.value.id, r.value.coupon) for r in latest.collect()] == [(7, 6, None)]

    # the union is recorded for later runs; a later session attaches the table with it
    doc = json.loads((wh / "_tidelog" / "manifest.json").read_text())
    recorded = doc["topics"]["orders"]["formats"]["value"]
    assert recorded["format"] == "registry" and len(recorded["schemas"]) == 2
    from tidelog.spark_export.session import attach_tables

    spark.sql("DROP TABLE tidelog.orders")
    attach_tables(spark, wh)
    assert spark.table("tidelog.orders").where("value.coupon = 'SAVE'").count() == 1

    # the data source decodes the same way
    df = spark.read.format("tidelog").option("topic", "orders").option("valueFormat", "registry").load(str(d.root))
    got = {r.offset: (r.value and r.value.id, r["_error"] is not None) for r in df.collect()}
    assert got == {o: (good.get(o), o in (3, 4, 5)) for o in range(8)}
    # keys too (these are not framed: every row says so, beside its value's error)
    df = df.sparkSession.read.format("tidelog").options(topic="orders", valueFormat="registry", keyFormat="registry")
    r = df.load(str(d.root)).where("offset = 3").first()
    assert r.key is None and bytes(r.key_raw) == b"k" and bytes(r.value_raw) == b"plain text"
    assert (
        r["_error"].startswith("key: not in Confluent's framing")
        and "; value: not in Confluent's framing" in r["_error"]
    )


def test_a_table_keeps_its_format(catalog, tmp_path):
    from tidelog.spark_export.job import ExportJob, ExportOptions
    from tidelog.spark_export.manifest import TableFormatError

    d, wh = Data(tmp_path / "data"), tmp_path / "wh"
    d.register(1, 1, V1)
    d.produce(framed(1, V1, order(1)))
    d.roll()
    d.close()
    ExportJob(catalog, ExportOptions([d.root], wh)).run()  # raw
    with pytest.raises(TableFormatError, match="keeps the --key-format/--value-format"):
        export(catalog, d.root, wh)


def test_union_of_versions_and_conflicts():
    import pyarrow as pa

    from tidelog.spark_export import avro_arrow as A

    t1, t2 = A.arrow_type(json.dumps(V1)), A.arrow_type(json.dumps(V2))
    merged = A.merge(t2, t1)
    assert [f.name for f in merged] == [f["name"] for f in V2["fields"]]
    assert A.merge(pa.int32(), pa.int64()) == pa.int64() and A.merge(pa.int64(), pa.float32()) == pa.float64()
    changed = {**V1, "fields": [{"name": "id", "type": "string"}]}
    with pytest.raises(A.SchemaConflict, match="field id"):
        A.merge(t1, A.arrow_type(json.dumps(changed)))
    linked = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}
    assert A.arrow_type(json.dumps(linked)) == pa.struct([("next", pa.string())])


def test_schemas_over_the_rest_api():
    """`--schema-registry-url`: the versions of the subject (deleted ones too) through Confluent's paths."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tidelog.spark_export import registry_schemas as rs

    docs = {
        "/subjects/orders-value/versions?deleted=true": [1, 2],
        "/subjects/orders-value/versions/1?deleted=true": {
            "subject": "orders-value",
            "version": 1,
            "id": 1,
            "schema": json.dumps(V1),
            "deleted": True,
        },
        "/subjects/orders-value/versions/2?deleted=true": {
            "subject": "orders-value",
            "version": 2,
            "id": 2,
            "schema": json.dumps(V2),
        },
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(docs[self.path]).encode() if self.path in docs else b"{}"
            self.send_response(200 if self.path in docs else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        state = rs.state_from_url(url, ["orders-value", "orders-key"])
    finally:
        server.shutdown()
    formats, schemas = rs.formats(state, "orders", ["value"])
    (field,) = formats.fields
    assert sorted(field.writers) == [1, 2] and len(schemas["value"]["schemas"]) == 2
    assert [f.name for f in field.type] == [f["name"] for f in V2["fields"]]
    from tidelog.spark_export.typed import decode_one

    assert decode_one(framed(1, V1, order(1)), field)["id"] == 1
    with pytest.raises(rs.NoSchema):
        rs.formats(state, "orders", ["key"])
