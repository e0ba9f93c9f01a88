"""`--value-format json`: plain JSON values (and keys) produced through a real broker become a
struct whose type is inferred from the data and grows across runs; a field first seen after the
sample still lands in the table's type and rows in the same run, and a value that conflicts with
the recorded type is flagged, not widened."""

from __future__ import annotations

import json
import logging

import pytest

pytest.importorskip("pyspark")
from typed_broker import TypedBroker, export, rows_by_offset

from tidelog.spark_export.json_infer import SAMPLE_RECORDS


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = TypedBroker(tmp_path_factory.mktemp("json") / "data")
    yield b
    b.stop()


def event(n: int, **extra) -> bytes:
    body = {"id": n, "user": {"name": f"u{n}"}, "tags": [f"t{n % 3}"], "score": n if n % 2 else n + 0.5, "gone": None}
    return json.dumps({**body, **extra}).encode()


def test_json_values_get_an_inferred_type_that_grows(catalog, broker, tmp_path, caplog):
    from pyspark.sql import types as T

    spark, topic, wh = catalog, "events_json", tmp_path / "wh"
    broker.create(topic, config={"segment.bytes": "32768"})  # several segments: several task groups
    n_first = SAMPLE_RECORDS + 500
    # past the sample: a field nobody sampled (nested in a new struct), and one inside `user`
    values = [event(n) for n in range(SAMPLE_RECORDS)]
    values += [event(n, late={"x": n}, user={"name": f"u{n}", "age": n}) for n in range(SAMPLE_RECORDS, n_first)]
    keys = [json.dumps({"k": n % 7}).encode() for n in range(n_first)]
    first = broker.produce(topic, values, keys=keys)
    (not_json,) = broker.produce(topic, [b"{oops"], keys=[b"[1]"])
    broker.roll(topic)
    with caplog.at_level(logging.INFO, logger="tidelog.spark_export"):
        export(spark, broker, wh, topic, value_format="json", key_format="json")
    assert any("writing those again" in r.getMessage() for r in caplog.records)

    table = spark.table(f"tidelog.`{topic}`")
    value = table.schema["value"].dataType
    assert value.fieldNames() == ["id", "user", "tags", "score", "late"]  # `gone` is only ever null
    types = {f.name: f.dataType for f in value.fields}
    assert types["id"] == T.LongType() and types["score"] == T.DoubleType()  # int and double: double
    assert types["user"] == T.StructType([T.StructField("name", T.StringType()), T.StructField("age", T.LongType())])
    assert types["tags"] == T.ArrayType(T.StringType())
    assert types["late"] == T.StructType([T.StructField("x", T.LongType())])
    assert table.schema["key"].dataType == T.StructType([T.StructField("k", T.LongType())])
    rows = rows_by_offset(spark, topic)
    flagged = {o for o, r in rows.items() if r["_error"] is not None}
    assert flagged == {not_json}, [rows[o]["_error"] for o in sorted(flagged)[:3]]
    for o, n in zip(first, range(n_first)):
        v = rows[o].value
        assert (v.id, v.user.name, v.score, rows[o].key.k) == (n, f"u{n}", n if n % 2 else n + 0.5, n % 7)
        late = n >= SAMPLE_RECORDS
        assert (v.late and v.late.x, v.user.age) == ((n, n) if late else (None, None))
    r = rows[not_json]
    assert r["_error"].startswith("key: (the value): expected struct<k: int64>, got list; value: not JSON")
    assert r.value is None and bytes(r.value_raw) == b"{oops" and r.key is None and bytes(r.key_raw) == b"[1]"

    # the second run: a new field, a value that conflicts with the recorded type, an int where a
    # double was recorded (fits)
    second = broker.produce(topic, [event(9000, coupon="SAVE"), event(9001, id="nine"), event(9002, score=7)])
    broker.roll(topic)
    export(spark, broker, wh, topic)  # the table's formats
    table = spark.table(f"tidelog.`{topic}`")
    assert table.schema["value"].dataType.fieldNames() == ["id", "user", "tags", "score", "late", "coupon"]
    rows = rows_by_offset(spark, topic)
    added, conflict, fits = (rows[o] for o in second)
    assert added["_error"] is None and added.value.coupon == "SAVE" and added.value.id == 9000
    assert conflict.value.id is None and conflict.value.user.name == "u9001"  # the rest of the value kept
    assert conflict["_error"] == "value: id: expected int64, got str" and bytes(conflict.value_raw)
    assert fits["_error"] is None and fits.value.score == 7.0
    assert rows[first[0]].value.coupon is None  # the first run's files read under the grown type
    entry = json.loads((wh / "_tidelog" / "manifest.json").read_text())["topics"][topic]["formats"]["value"]
    assert entry["format"] == "json" and entry["type"] == table.schema["value"].dataType.simpleString()

    # the data source samples the first records and has no second pass: what it did not sample is flagged
    df = spark.read.format("tidelog").options(topic=topic, valueFormat="json").load(str(broker.data_dir))
    assert "late" not in df.schema["value"].dataType.fieldNames()
    late = df.where("_error = 'value: not in the column type yet: user.age, late'")
    assert late.count() == n_first - SAMPLE_RECORDS and late.where("value_raw IS NOT NULL").count() == late.count()
