"""Typed columns of JSON Schema values (`--value-format registry`): confluent-kafka's
JSONSerializer produces through a real broker with its registry, two runs
export two versions of the schema to Parquet, and Spark reads the table back by name with the
union of both versions as its type; records that do not decode land in `value_raw`/`_error`."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyspark")
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from typed_broker import TypedBroker, export, rows_by_offset


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = TypedBroker(tmp_path_factory.mktemp("typed") / "data")
    yield b
    b.stop()


def framed(schema_id: int, body: bytes) -> bytes:
    return b"\0" + schema_id.to_bytes(4, "big") + body


# ---------------------------------------------------------------------------------------------
# JSON Schema

ADDRESS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "zip": {"type": ["null", "integer"]}},
    "additionalProperties": False,
}
ORDER_V1 = {
    "title": "shop.Order",
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "amount": {"type": "number"},
        "paid": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "ship": {"$ref": "address.json"},
        "note": {"oneOf": [{"type": "null"}, {"type": "string"}]},
        "attrs": {"type": "object", "additionalProperties": {"type": "integer"}},
        "lines": {"type": "array", "items": {"$ref": "#/definitions/Line"}},
        "extra": {},
    },
    "required": ["id"],
    "additionalProperties": False,
    "definitions": {"Line": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}}},
}
ORDER_V2 = {**ORDER_V1, "properties": {**ORDER_V1["properties"], "coupon": {"type": "string"}}}


def json_order(n: int, **extra) -> dict:
    return {
        "id": n,
        "amount": n + 0.5,
        "paid": n % 2 == 1,
        "tags": [f"t{n}"],
        "ship": {"city": f"city-{n}", "zip": None if n % 2 else 1000 + n},
        "note": None if n % 2 else f"note-{n}",
        "attrs": {"k": n},
        "lines": [{"sku": f"s{n}", "qty": n}],
        "extra": {"any": [n, "thing"]},
        **extra,
    }


def test_json_schema_values_become_a_struct_that_evolves(catalog, broker, tmp_path):
    from pyspark.sql import types as T

    spark, topic, wh = catalog, "orders_json", tmp_path / "wh"
    client = SchemaRegistryClient({"url": broker.url})
    broker.create(topic)
    client.register_schema("address", Schema(json.dumps(ADDRESS), "JSON"))
    ref = SchemaReference("address.json", "address", 1)
    schema1 = Schema(json.dumps(ORDER_V1), "JSON", [ref])
    v1 = JSONSerializer(schema1, client)
    first = broker.produce(topic, [json_order(1), json_order(2)], v1)
    sentinel = broker.roll(topic)
    export(spark, broker, wh, topic, value_format="registry")
    value = spark.table(f"tidelog.`{topic}`").schema["value"].dataType
    assert "coupon" not in value.fieldNames() and value["ship"].dataType.fieldNames() == ["city", "zip"]

    schema2 = Schema(json.dumps(ORDER_V2), "JSON", [ref])
    good = broker.produce(topic, [json_order(3, coupon="SAVE"), json_order(4)], JSONSerializer(schema2, client))
    v1_id, v2_id = (client.lookup_schema(f"{topic}-value", s).schema_id for s in (schema1, schema2))
    assert v2_id != v1_id
    bad = broker.produce(
        topic,
        [
            framed(v2_id, b'{"id": 5, "amount": '),  # not JSON
            framed(9999, json.dumps(json_order(6)).encode()),  # no such schema
            framed(v2_id, json.dumps({**json_order(7), "id": "seven", "tags": "x"}).encode()),  # fields that do not fit
        ],
    )
    old = broker.produce(topic, [json_order(8)], v1)  # the older version after the newer one
    broker.roll(topic)
    export(spark, broker, wh, topic)  # the table's format: no option needed

    table = spark.table(f"tidelog.`{topic}`")
    value = table.schema["value"].dataType
    assert value.fieldNames() == [*ORDER_V1["properties"], "coupon"]
    types = {f.name: f.dataType for f in value.fields}
    assert types["id"] == T.LongType() and types["amount"] == T.DoubleType() and types["paid"] == T.BooleanType()
    assert types["tags"] == T.ArrayType(T.StringType()) and types["note"] == T.StringType()
    assert types["ship"] == T.StructType([T.StructField("city", T.StringType()), T.StructField("zip", T.LongType())])
    assert types["attrs"] == T.MapType(T.StringType(), T.LongType()) and types["extra"] == T.StringType()
    assert types["lines"] == T.ArrayType(
        T.StructType([T.StructField("sku", T.StringType()), T.StructField("qty", T.LongType())])
    )
    rows = rows_by_offset(spark, topic)
    assert sorted(rows) == sorted([*first, sentinel, *good, *bad, *old])
    for offset, n in zip([*first, *good, *old], [1, 2, 3, 4, 8]):
        r = rows[offset]
        assert r["_error"] is None and r.value_raw is None, r["_error"]
        v = r.value
        assert (v.id, v.amount, v.paid, v.tags, v.attrs) == (n, n + 0.5, n % 2 == 1, [f"t{n}"], {"k": n})
        assert (v.ship.city, v.ship.zip, v.note) == (f"city-{n}", None if n % 2 else 1000 + n, json_order(n)["note"])
        assert [(line.sku, line.qty) for line in v.lines] == [(f"s{n}", n)]
        assert json.loads(v.extra) == {"any": [n, "thing"]}
        assert v.coupon == ("SAVE" if n == 3 else None)
    assert "not in Confluent's framing" in rows[sentinel]["_error"] and rows[sentinel].value is None
    not_json, unknown, misfit = (rows[o] for o in bad)
    assert not_json.value is None and f"JSON decode failure (schema id {v2_id})" in not_json["_error"]
    assert unknown.value is None and "unknown schema id 9999" in unknown["_error"]
    # a field that does not fit its type is null, the rest of the value kept, the row flagged
    assert misfit.value.id is None and misfit.value.tags is None and misfit.value.ship.city == "city-7"
    assert misfit["_error"] == "value: id: expected int64, got str; tags: expected list<element: string>, got str"
    for r in (not_json, unknown, misfit):
        assert bytes(r.value_raw)

    doc = json.loads((wh / "_tidelog" / "manifest.json").read_text())
    entry = doc["topics"][topic]["formats"]["value"]
    assert entry["format"] == "registry" and entry["type"] == value.simpleString()
    # the data source decodes the same way
    df = spark.read.format("tidelog").options(topic=topic, valueFormat="registry").load(str(broker.data_dir))
    assert df.where("value.coupon = 'SAVE'").count() == 1 and df.where("_error IS NOT NULL").count() == 4
