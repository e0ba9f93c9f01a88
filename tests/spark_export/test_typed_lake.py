"""Typed columns in every table format, end to end: confluent-kafka's AvroSerializer writes two
versions of a schema through a real broker's registry (the second adds an optional field, a field
to a nested record and one to the records of an array); `--value-format registry` exports them in
two runs to a Parquet, a Delta and an Iceberg table each (the Delta and Iceberg second runs crash
after writing their files and are completed by a re-run). The tables' columns are the union of
the versions, read back in Spark with the right types, the first run's rows null in the new
fields; undecodable records keep their bytes in `value_raw` and say why in `_error`."""

from __future__ import annotations

import copy
import datetime as dt
import decimal
import json
import time
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from registry.registry_urls import registry_url
from test_typed_tables import framed

pytest.importorskip("pyspark")
pytest.importorskip("pyiceberg")
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tidelog.spark_export.job import ExportJob, ExportOptions, SimulatedCrash

pytestmark = pytest.mark.timeout(900)

FORMATS = ("parquet", "delta", "iceberg")
HOUR = 3_600_000
ADDRESS = {"type": "record", "name": "Address", "fields": [{"name": "city", "type": "string"}]}
LINE = {"type": "record", "name": "Line", "fields": [{"name": "sku", "type": "string"}]}
V1 = {
    "type": "record",
    "name": "Placed",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "qty", "type": "int"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}},
        {"name": "ship_to", "type": ADDRESS},
        {"name": "lines", "type": {"type": "array", "items": LINE}},
    ],
}
OPTIONAL = {"type": ["null", "string"], "default": None}


def v2() -> dict:
    """V1 + `coupon`, `ship_to.zip` and `lines[].discount`, all optional (BACKWARD compatible)."""
    s = copy.deepcopy(V1)
    fields = {f["name"]: f for f in s["fields"]}
    fields["ship_to"]["type"]["fields"].append({"name": "zip", **OPTIONAL})
    fields["lines"]["type"]["items"]["fields"].append({"name": "discount", "type": ["null", "double"], "default": None})
    s["fields"].append({"name": "coupon", **OPTIONAL})
    return s


def placed(n: int, **v2_fields) -> dict:
    zip_code, discount = v2_fields.pop("zip", None), v2_fields.pop("discount", None)
    ship_to = {"city": f"city-{n}", **({"zip": zip_code} if zip_code else {})}
    line = {"sku": f"sku-{n}", **({"discount": discount} if discount is not None else {})}
    return {
        "id": n,
        "qty": n * 10,
        "amount": decimal.Decimal(f"{n}.25"),
        "at": dt.datetime(2025, 1, 1, 12, n, tzinfo=dt.UTC),
        "attrs": {"k": n},
        "ship_to": ship_to,
        "lines": [line],
        **v2_fields,
    }


class Orders:
    """The topic `orders` on a real broker with its schema registry; what was produced, by offset."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker
        self.registry = SchemaRegistryClient({"url": registry_url(broker.log_path)})
        self.sent: dict[int, tuple[bytes, object]] = {}  # offset -> (key, the value as produced)
        self.clock = int(time.time() * 1000) - 24 * HOUR  # the sentinels stay in the past
        self.sentinel = -1  # the offset of the last one, in the active segment: never exported
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        config = {"segment.ms": str(HOUR), "retention.ms": "-1"}
        for f in admin.create_topics([NewTopic("orders", 1, 1, config=config)]).values():
            f.result(30)

    def produce(self, schema: dict, records: list[tuple[bytes, dict | bytes | None]]) -> None:
        """`records` (dicts serialized in `schema` by AvroSerializer, which registers it; bytes
        and None as they are), then a sentinel two segment.ms later: it rolls the segment, which
        closes `records` (and the previous sentinel) for the export."""
        serialize = AvroSerializer(self.registry, json.dumps(schema))
        ctx = SerializationContext("orders", MessageField.VALUE)
        p = Producer({"bootstrap.servers": self.broker.bootstrap, "linger.ms": 5})
        for n, (key, value) in enumerate([*records, (b"s", placed(9))]):
            self.clock += 2 * HOUR + 1 if n == len(records) else 1000
            payload = serialize(value, ctx) if isinstance(value, dict) else value

            def delivered(err, msg, value=value):
                assert err is None, err
                self.sent[msg.offset()] = (msg.key(), value)
                if msg.key() == b"s":
                    self.sentinel = msg.offset()

            p.produce("orders", key=key, value=payload, timestamp=self.clock, on_delivery=delivered)
            p.flush(30)  # one record a batch: offsets in the order produced
        assert p.flush(30) == 0


def export(spark, data: Path, warehouse: Path, table_format: str, crash_at: str | None = None):
    options = ExportOptions(
        [data],
        warehouse,
        topics=["orders"],
        compact_topics=["orders"],
        table_format=table_format,
        value_format="registry",
        crash_at=crash_at,
    )
    return ExportJob(spark, options).run()


def read(spark, table_format: str, warehouse: Path, name: str, **options):
    """A table of `warehouse` as Spark reads it: by name (Parquet, Delta), or through the
    `tidelog_iceberg` data source (this session's spark_catalog is Delta's: see test_iceberg)."""
    if table_format == "iceberg":
        df = spark.read.format("tidelog_iceberg").option("warehouse", str(warehouse)).option("table", name)
        for k, v in options.items():
            df = df.option(k, v)
        return df.load()
    from tidelog.spark_export.session import attach_tables

    attach_tables(spark, warehouse)
    return spark.table(f"tidelog.{name}")


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    """Two runs into a warehouse of each format; what was exported, by offset; each table's value
    fields after the first run. The tests share it, so they take `spark`, not `catalog`: dropping
    the in-memory catalog's `tidelog` database deletes its directory, one of the warehouses'."""
    root = tmp_path_factory.mktemp("typed-lake")
    broker = BrokerProcess(
        root / "data", {"schema.registry.listeners": "http://127.0.0.1:0", "log.cleaner.enable": "false"}
    ).start()
    try:
        orders = Orders(broker)
        orders.produce(V1, [(b"a", placed(1)), (b"b", placed(2)), (b"c", placed(3))])
        warehouses = {f: root / f"wh-{f}" for f in FORMATS}
        first = {}
        for f, wh in warehouses.items():
            export(spark, broker.data_dir, wh, f)
            first[f] = read(spark, f, wh, "orders").schema["value"].dataType.fieldNames()
        orders.produce(
            v2(),
            [
                (b"a", placed(4, coupon="SAVE", zip="75001", discount=0.5)),
                (b"d", b"plain text"),
                (b"e", framed(9999, V1, placed(5))),
                (b"c", None),
            ],
        )
        for f, wh in warehouses.items():
            if f != "parquet":  # files written under the wider union, not committed: completed by the re-run
                with pytest.raises(SimulatedCrash):
                    export(spark, broker.data_dir, wh, f, crash_at="written")
            export(spark, broker.data_dir, wh, f)
        exported = {o: kv for o, kv in orders.sent.items() if o != orders.sentinel}
        yield warehouses, exported, first
    finally:
        broker.stop()
        if spark.catalog.databaseExists("tidelog"):  # as the `catalog` fixture, once for the module
            for t in spark.catalog.listTables("tidelog"):
                spark.sql(f"DROP TABLE IF EXISTS tidelog.`{t.name}`")
            spark.sql("DROP DATABASE IF EXISTS tidelog")


def expected_value(value) -> dict | None:
    """A produced value as the typed column holds it: every field of the union, absent ones null."""
    if not isinstance(value, dict):
        return None
    lines = [{"discount": None, **line} for line in value["lines"]]
    return {
        "coupon": None,
        **value,
        "at": value["at"].replace(tzinfo=None),  # the session's time zone is UTC
        "ship_to": {"zip": None, **value["ship_to"]},
        "lines": lines,
    }


def as_dict(row) -> dict | None:
    return None if row is None else row.asDict(recursive=True)


@pytest.mark.parametrize("table_format", FORMATS)
def test_two_avro_versions_become_one_typed_table(spark, lake, table_format):
    from pyspark.sql import types as T

    warehouses, sent, first = lake
    wh = warehouses[table_format]
    assert "coupon" not in first[table_format] and "id" in first[table_format]
    table = read(spark, table_format, wh, "orders")
    value = table.schema["value"].dataType
    types = {f.name: f.dataType for f in value.fields}
    assert list(types) == ["id", "qty", "amount", "at", "attrs", "ship_to", "lines", "coupon"]
    assert types["id"] == T.LongType() and types["qty"] == T.IntegerType()
    assert types["amount"] == T.DecimalType(10, 2) and types["at"] == T.TimestampType()
    assert types["attrs"] == T.MapType(T.StringType(), T.LongType())
    assert types["ship_to"] == T.StructType(
        [T.StructField("city", T.StringType()), T.StructField("zip", T.StringType())]
    )
    line = T.StructType([T.StructField("sku", T.StringType()), T.StructField("discount", T.DoubleType())])
    assert types["lines"] == T.ArrayType(line) and types["coupon"] == T.StringType()
    assert table.schema["value_raw"].dataType == T.BinaryType() and table.schema["_error"].dataType == T.StringType()

    rows = {r.offset: r for r in table.collect()}
    assert sorted(rows) == sorted(sent)  # each record once, the first sentinel included
    for offset, (key, produced) in sent.items():
        r = rows[offset]
        assert bytes(r.key) == key
        if isinstance(produced, dict):  # decoded: run 1's rows (V1) have null in V2's fields
            assert as_dict(r.value) == expected_value(produced) and r["_error"] is None and r.value_raw is None
    errors = {bytes(rows[o].key): rows[o] for o in sent if isinstance(sent[o][1], bytes)}
    assert "not in Confluent's framing" in errors[b"d"]["_error"]
    assert "unknown schema id 9999" in errors[b"e"]["_error"]
    for k, r in errors.items():
        assert r.value is None and bytes(r.value_raw) == dict(sent.values())[k]
    (tombstone,) = [rows[o] for o in sent if sent[o][1] is None]
    assert tombstone.value is None and tombstone.value_raw is None and tombstone["_error"] is None

    # `_latest`: the newest record per key (c's tombstone deleted it; d, e kept undecoded); b's
    # row, written by the first run in V1's shape, reads with V2's fields null
    latest = read(spark, table_format, wh, "orders_latest")
    assert latest.schema["value"].dataType == value
    newest = {bytes(r.key): r for r in latest.collect()}
    assert sorted(newest) == [b"a", b"b", b"d", b"e", b"s"]
    assert newest[b"a"].value.coupon == "SAVE" and newest[b"a"].value.ship_to.zip == "75001"
    assert as_dict(newest[b"b"].value) == expected_value(placed(2))
    assert bytes(newest[b"d"].value_raw) == b"plain text" and newest[b"e"].value is None


def delta_log(location: Path) -> dict[int, list[dict]]:
    return {
        int(f.stem): [json.loads(line) for line in f.read_text().splitlines()]
        for f in location.glob("_delta_log/*.json")
    }


def test_delta_widens_the_schema_in_the_commit_of_the_run(spark, lake):
    """Run 2's commit of the append table holds its files, the widened schema (metaData) and its
    txn together; each run id is committed once (run 2 crashed after writing its files)."""
    warehouses, _sent, _first = lake
    wh = warehouses["delta"]
    runs = [r["run_id"] for r in json.loads((wh / "_tidelog" / "manifest.json").read_text())["runs"]]
    for name in ("orders", "orders_latest"):
        commits = delta_log(wh / "tidelog.db" / name)
        ids = [a["commitInfo"].get("userMetadata") for v in sorted(commits) for a in commits[v] if "commitInfo" in a]
        assert [i for i in ids if i] == runs, name
        last = commits[max(commits)]
        kinds = {k for a in last for k in a}
        assert {"metaData", "txn"} <= kinds, (name, kinds)
        assert {"add"} <= kinds or name == "orders_latest"
        schema = json.loads(next(a["metaData"]["schemaString"] for a in last if "metaData" in a))
        value = next(f["type"] for f in schema["fields"] if f["name"] == "value")
        assert [f["name"] for f in value["fields"]][-1] == "coupon"
        assert [a["txn"]["version"] for a in last if "txn" in a] == [2]
        assert not [a for a in last if "remove" in a and name == "orders"]  # an append: nothing replaced
    import pyarrow as pa
    from deltalake import DeltaTable

    main = wh / "tidelog.db" / "orders"
    named = set(pa.table(DeltaTable(str(main)).get_add_actions()).column("path").to_pylist())
    on_disk = {f.relative_to(main).as_posix() for f in main.rglob("*.parquet")}
    assert on_disk == named  # the crashed attempt's files were deleted


def test_iceberg_widens_the_schema_in_the_snapshot_of_the_run(spark, lake):
    """Run 2's snapshot has the widened schema (new nested fields with fresh ids, in the name
    mapping that reads the id-less files); run 1's snapshot still reads in its own schema; each
    run id in one snapshot per table; a plain Iceberg reader (pyiceberg) reads the union too."""
    import pyarrow.parquet as pq

    from tidelog.spark_export.iceberg import IcebergTables, load_catalog
    from tidelog.spark_export.iceberg_source import snapshots

    warehouses, sent, _first = lake
    wh = warehouses["iceberg"]
    runs = [r["run_id"] for r in json.loads((wh / "_tidelog" / "manifest.json").read_text())["runs"]]
    for name in ("orders", "orders_latest"):
        t = load_catalog(wh).load_table(("tidelog", name))
        snaps = snapshots(wh, name)
        assert [s["run_id"] for s in snaps] == runs, name
        one, two = (t.snapshot_by_id(s["snapshot_id"]) for s in snaps)
        old, new = t.schemas()[one.schema_id], t.schemas()[two.schema_id]
        assert two.schema_id == t.schema().schema_id != one.schema_id
        added = {
            n: new.find_field(n).field_id for n in ("value.coupon", "value.ship_to.zip", "value.lines.element.discount")
        }
        assert min(added.values()) > old.highest_field_id
        for n in added:
            with pytest.raises(ValueError):
                old.find_field(n)
        mapping = json.dumps(json.loads(t.properties["schema.name-mapping.default"]))
        assert all(f'"field-id": {i}' in mapping for i in added.values())
        # run 1's files: V1's narrower value and no field ids (the name mapping gives them)
        schema = pq.read_schema(IcebergTables.added_files(t, one)[0])
        assert "coupon" not in [f.name for f in schema.field("value").type]
        assert not [f for f in schema if f.metadata and b"PARQUET:field_id" in f.metadata]

    before = read(spark, "iceberg", wh, "orders", **{"snapshot-id": str(snapshots(wh, "orders")[0]["snapshot_id"])})
    assert "coupon" not in before.schema["value"].dataType.fieldNames() and before.count() == 3
    arrow = load_catalog(wh).load_table(("tidelog", "orders")).scan().to_arrow()
    coupons = dict(zip(arrow["offset"].to_pylist(), [v and v["coupon"] for v in arrow["value"].to_pylist()]))
    assert coupons == {o: (v.get("coupon") if isinstance(v, dict) else None) for o, (_k, v) in sent.items()}
