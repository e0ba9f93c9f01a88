"""Typed columns of JSON Schema and Protobuf values (`--value-format registry`): confluent-kafka's
JSONSerializer and ProtobufSerializer produce through a real broker with its registry, two runs
export two versions of the schema to Parquet, and Spark reads the table back by name with the
union of both versions as its type; records that do not decode land in `value_raw`/`_error`."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyspark")
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from typed_broker import TypedBroker, export, proto_classes, rows_by_offset


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


# ---------------------------------------------------------------------------------------------
# Protobuf


def proto_order(cls, n: int, **extra):
    m = cls(id=n, lines=[{"sku": f"s{n}", "qty": n}], status=n % 2, big=2**64 - n, **extra)
    m.attrs["k"] = n
    m.at.FromMilliseconds(1_767_225_600_000 + n)
    m.ship.city = f"city-{n}"
    if n % 2:
        m.card = f"card-{n}"
    else:
        m.cash, m.note = n, f"note-{n}"
    return m


def test_protobuf_values_become_a_struct_that_evolves(catalog, broker, tmp_path):
    import datetime as dt
    import decimal

    from pyspark.sql import types as T

    spark, topic, wh = catalog, "orders_proto", tmp_path / "wh"
    client = SchemaRegistryClient({"url": broker.url})
    broker.create(topic)
    conf = {"use.deprecated.format": False}
    order1, line1 = proto_classes(1)
    first = broker.produce(
        topic, [proto_order(order1, 1), proto_order(order1, 2)], ProtobufSerializer(order1, client, conf)
    )
    sentinel = broker.roll(topic)
    export(spark, broker, wh, topic, value_format="registry")
    assert "coupon" not in spark.table(f"tidelog.`{topic}`").schema["value"].dataType.fieldNames()
    assert client.get_subjects() and "shop/address.proto" in client.get_subjects()  # the reference

    order2, _line2 = proto_classes(2)
    good = broker.produce(
        topic, [proto_order(order2, 3, coupon="SAVE"), proto_order(order2, 4)], ProtobufSerializer(order2, client, conf)
    )
    v2_id = client.get_latest_version(f"{topic}-value").schema_id
    # a record of the file's other message (not one the column holds), a truncated body
    (other,) = broker.produce(topic, [line1(sku="x", qty=1)], ProtobufSerializer(line1, client, conf))
    (truncated,) = broker.produce(topic, [framed(v2_id, bytes([2, 2]) + b"\x0a\x05ab")])
    old = broker.produce(topic, [proto_order(order1, 5)], ProtobufSerializer(order1, client, conf))
    broker.roll(topic)
    export(spark, broker, wh, topic)

    value = spark.table(f"tidelog.`{topic}`").schema["value"].dataType
    assert value.fieldNames() == [
        "id",
        "lines",
        "attrs",
        "status",
        "card",
        "cash",
        "at",
        "ship",
        "note",
        "big",
        "coupon",
    ]
    types = {f.name: f.dataType for f in value.fields}
    line = T.StructType([T.StructField("sku", T.StringType()), T.StructField("qty", T.IntegerType())])
    assert types["id"] == T.LongType() and types["lines"] == T.ArrayType(line)
    assert types["attrs"] == T.MapType(T.StringType(), T.LongType()) and types["status"] == T.StringType()
    assert types["card"] == T.StringType() and types["cash"] == T.IntegerType() and types["at"] == T.TimestampType()
    assert types["ship"] == T.StructType([T.StructField("city", T.StringType())])
    assert types["big"] == T.DecimalType(20, 0) and types["note"] == T.StringType()

    rows = rows_by_offset(spark, topic)
    assert sorted(rows) == sorted([*first, sentinel, *good, other, truncated, *old])
    for offset, n in zip([*first, *good, *old], [1, 2, 3, 4, 5]):
        r = rows[offset]
        assert r["_error"] is None and r.value_raw is None, r["_error"]
        v = r.value
        assert (v.id, v.status, v.attrs, v.ship.city) == (n, "PAID" if n % 2 else "NEW", {"k": n}, f"city-{n}")
        assert [(x.sku, x.qty) for x in v.lines] == [(f"s{n}", n)] and v.big == decimal.Decimal(2**64 - n)
        assert v.at == dt.datetime(2026, 1, 1, 0, 0, 0, n * 1000)  # the session's time zone is UTC
        # the oneof: one member set, the other null; proto3 optional: null when unset
        assert (v.card, v.cash, v.note) == ((f"card-{n}", None, None) if n % 2 else (None, n, f"note-{n}"))
        assert v.coupon == {3: "SAVE", 4: ""}.get(n)  # proto3: "" when v2 does not set it; null in v1 records
    assert "not in Confluent's framing" in rows[sentinel]["_error"]
    assert rows[other].value is None and "message shop.Line" in rows[other]["_error"]
    assert rows[truncated].value is None and f"Protobuf decode failure (schema id {v2_id})" in rows[truncated]["_error"]
    assert bytes(rows[other].value_raw) and bytes(rows[truncated].value_raw)


# ---------------------------------------------------------------------------------------------
# Subject name strategies

ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "id", "type": "long"}]}
ORDER["fields"].append({"name": "amount", "type": "double"})
REFUND = {
    "type": "record",
    "name": "Refund",
    "namespace": "shop",
    "fields": [{"name": "id", "type": "long"}, {"name": "reason", "type": "string"}],
}
ORDER_KEY = {"type": "record", "name": "OrderKey", "namespace": "shop", "fields": [{"name": "shop", "type": "string"}]}


def test_record_name_strategy_gives_one_struct_of_every_record_type(catalog, broker, tmp_path):
    from confluent_kafka.schema_registry import record_subject_name_strategy
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from pyspark.sql import types as T

    from tidelog.spark_export.subjects import NoSubjects

    spark, topic, wh = catalog, "payments_rn", tmp_path / "wh"
    client = SchemaRegistryClient({"url": broker.url})
    broker.create(topic)
    conf = {"subject.name.strategy": record_subject_name_strategy}
    order, refund, key = (AvroSerializer(client, json.dumps(s), conf=conf) for s in (ORDER, REFUND, ORDER_KEY))
    orders = broker.produce(topic, [{"id": 1, "amount": 1.5}], order, key, [{"shop": "a"}])
    refunds = broker.produce(topic, [{"id": 2, "reason": "late"}], refund, key, [{"shop": "b"}])
    broker.roll(topic)
    assert {"shop.Order", "shop.Refund", "shop.OrderKey"} <= set(client.get_subjects())

    typed = {"value_format": "registry", "key_format": "registry"}
    keys = {"key_subject_strategy": "record", "key_subjects": ["shop.OrderKey"]}
    with pytest.raises(NoSubjects, match="--value-subject"):  # record names are not the topic's to tell
        export(spark, broker, wh, topic, **typed, **keys, value_subject_strategy="record")
    export(
        spark,
        broker,
        wh,
        topic,
        **typed,
        **keys,
        value_subject_strategy="record",
        value_subjects=["shop.Order", "shop.Refund"],
    )
    more = broker.produce(topic, [{"id": 3, "reason": "lost"}], refund, key, [{"shop": "c"}])
    broker.roll(topic)
    export(spark, broker, wh, topic)  # the table's formats and subjects

    schema = spark.table(f"tidelog.`{topic}`").schema
    assert schema["value"].dataType == T.StructType(
        [T.StructField(n, t) for n, t in (("id", T.LongType()), ("amount", T.DoubleType()), ("reason", T.StringType()))]
    )
    assert schema["key"].dataType == T.StructType([T.StructField("shop", T.StringType())])
    rows = rows_by_offset(spark, topic)
    got = {o: (r.key.shop, r.value.id, r.value.amount, r.value.reason) for o, r in rows.items() if r["_error"] is None}
    assert got == {orders[0]: ("a", 1, 1.5, None), refunds[0]: ("b", 2, None, "late"), more[0]: ("c", 3, None, "lost")}
    entry = json.loads((wh / "_tidelog" / "manifest.json").read_text())["topics"][topic]["formats"]
    assert (entry["value"]["strategy"], entry["value"]["subjects"]) == ("record", ["shop.Order", "shop.Refund"])
    df = spark.read.format("tidelog").options(
        topic=topic, valueFormat="registry", valueSubjectStrategy="record", valueSubjects="shop.Order,shop.Refund"
    )
    assert df.load(str(broker.data_dir)).where("value.reason IS NOT NULL").count() == 2


def test_topic_record_name_strategy_finds_the_subjects_by_prefix(catalog, broker, tmp_path):
    from confluent_kafka.schema_registry import topic_record_subject_name_strategy

    spark, topic, wh = catalog, "orders_tr", tmp_path / "wh"
    client = SchemaRegistryClient({"url": broker.url})
    broker.create(topic)
    conf = {"use.deprecated.format": False, "subject.name.strategy": topic_record_subject_name_strategy}
    order, line = proto_classes(1)
    orders = broker.produce(topic, [proto_order(order, 1)], ProtobufSerializer(order, client, conf))
    lines = broker.produce(topic, [line(sku="x", qty=2)], ProtobufSerializer(line, client, conf))
    broker.roll(topic)
    assert {f"{topic}-shop.Order", f"{topic}-shop.Line"} <= set(client.get_subjects())
    export(spark, broker, wh, topic, value_format="registry", value_subject_strategy="topic-record")

    value = spark.table(f"tidelog.`{topic}`").schema["value"].dataType
    order_fields = ["id", "lines", "attrs", "status", "card", "cash", "at", "ship", "note", "big"]
    assert sorted(value.fieldNames()) == sorted([*order_fields, "sku", "qty"])  # Order's and Line's
    rows = rows_by_offset(spark, topic)
    o, li = rows[orders[0]], rows[lines[0]]
    assert o["_error"] is None and (o.value.id, o.value.ship.city, o.value.sku) == (1, "city-1", None)
    assert li["_error"] is None and (li.value.sku, li.value.qty, li.value.id) == ("x", 2, None)
