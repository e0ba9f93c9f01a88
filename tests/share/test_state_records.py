"""tidelog's `__share_group_state` record codec (`tidelog.share.state_records`) against Apache Kafka 4.3.1.

The golden vectors below were printed by Kafka 4.3.1 itself: `java/records/ShareRecordVectors.java
state-vectors` builds each record with Kafka's generated classes and serializes it with the share
coordinator's ShareCoordinatorRecordSerde. The fast tests check tidelog's bytes against them without a
JVM; round trips, malformed input and forged lengths follow. The interop tests run the Java program:
it must still print these vectors, and Kafka must decode every record tidelog encodes (the tagged
field set and unset, empty lists, random values) into the same fields, and re-serialize it into the
same bytes.

To regenerate the vectors (java/records/pom.xml resolves Kafka 4.3.1 from Maven Central):

    mvn -B -q -f java/records/pom.xml dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
    java -cp "$(cat java/records/target/classpath.txt)" java/records/ShareRecordVectors.java state-vectors
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidelog.groups.records import RecordFormatError
from tidelog.share.state_records import (
    DELIVERY_STATE_ACKNOWLEDGED,
    DELIVERY_STATE_ARCHIVED,
    DELIVERY_STATE_AVAILABLE,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareStateRecordKey,
    ShareStateRecordValue,
    ShareUpdateKey,
    ShareUpdateValue,
    StateBatch,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

ROOT = Path(__file__).resolve().parents[2]
JAVA_DIR = ROOT / "java" / "records"
JAVA_SOURCE = JAVA_DIR / "ShareRecordVectors.java"

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# ---- Kafka 4.3.1's bytes ----------------------------------------------------------------------

# name -> (key hex, value hex or None for a tombstone), as `ShareRecordVectors.java state-vectors` printed them.
KAFKA_VECTORS: dict[str, tuple[str, str | None]] = {
    "snapshot": (
        "000000036772700d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d00000003",
        (
            "0000000000020000000100000005000000000000006400000199c82cc00000000199c82cc4d204000000000000006400"
            "0000000000006d00000100000000000000006e000000000000006e02000300000000000000006f000000000000007804"
            "00050000"
        ),
    ),
    "snapshot_delivery_complete_count": (
        "000000036772700d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d00000003",
        (
            "000000000003000000010000000500000000000000c800000199c82cc00000000199c82cd62e0200000000000000cb00"
            "000000000000d10200010001000400000007"
        ),
    ),
    "snapshot_delivery_complete_count_zero": (
        "000000036772700d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d00000003",
        "00000000000000000000000000000000000000000000000000000000000000000000000000000101000400000000",
    ),
    "snapshot_extremes": (
        "0000000e6772c3bc7070652de697a5e69cac000000000000000000000000000000007fffffff",
        (
            "00007fffffff80000000ffffffff7fffffffffffffff8000000000000000ffffffffffffffff0380000000000000007f"
            "ffffffffffffff80800000ffffffffffffffffffffffffffffffff7f7fff0001000480000000"
        ),
    ),
    "snapshot_long": (
        (
            "000000c86767676767676767676767676767676767676767676767676767676767676767676767676767676767676767"
            "676767676767676767676767676767676767676767676767676767676767676767676767676767676767676767676767"
            "676767676767676767676767676767676767676767676767676767676767676767676767676767676767676767676767"
            "676767676767676767676767676767676767676767676767676767676767676767676767676767676767676767676767"
            "676767676767676767676767f1e2d3c4b5a649788695a4b3c2d1e0ff00000000"
        ),
        (
            "000000000046000000020000000900000000000000000000000000000001000000000000000247000000000000000000"
            "000000000003e70000000000000000000003e800000000000007cf0100010000000000000007d00000000000000bb702"
            "0002000000000000000bb80000000000000f9f030003000000000000000fa00000000000001387040004000000000000"
            "001388000000000000176f0000050000000000000017700000000000001b57010006000000000000001b580000000000"
            "001f3f020007000000000000001f400000000000002327030008000000000000002328000000000000270f0400090000"
            "000000000027100000000000002af700000a000000000000002af80000000000002edf01000b000000000000002ee000"
            "000000000032c702000c0000000000000032c800000000000036af03000d0000000000000036b00000000000003a9704"
            "000e000000000000003a980000000000003e7f00000f000000000000003e800000000000004267010010000000000000"
            "004268000000000000464f0200110000000000000046500000000000004a37030012000000000000004a380000000000"
            "004e1f040013000000000000004e20000000000000520700001400000000000000520800000000000055ef0100150000"
            "000000000055f000000000000059d70200160000000000000059d80000000000005dbf030017000000000000005dc000"
            "000000000061a70400180000000000000061a8000000000000658f000019000000000000006590000000000000697701"
            "001a0000000000000069780000000000006d5f02001b000000000000006d60000000000000714703001c000000000000"
            "007148000000000000752f04001d000000000000007530000000000000791700001e0000000000000079180000000000"
            "007cff01001f000000000000007d0000000000000080e70200200000000000000080e800000000000084cf0300210000"
            "000000000084d000000000000088b70400220000000000000088b80000000000008c9f000023000000000000008ca000"
            "00000000009087010024000000000000009088000000000000946f020025000000000000009470000000000000985703"
            "00260000000000000098580000000000009c3f040027000000000000009c40000000000000a027000028000000000000"
            "00a028000000000000a40f01002900000000000000a410000000000000a7f702002a00000000000000a7f80000000000"
            "00abdf03002b00000000000000abe0000000000000afc704002c00000000000000afc8000000000000b3af00002d0000"
            "0000000000b3b0000000000000b79701002e00000000000000b798000000000000bb7f02002f00000000000000bb8000"
            "0000000000bf6703003000000000000000bf68000000000000c34f04003100000000000000c350000000000000c73700"
            "003200000000000000c738000000000000cb1f01003300000000000000cb20000000000000cf07020034000000000000"
            "00cf08000000000000d2ef03003500000000000000d2f0000000000000d6d704003600000000000000d6d80000000000"
            "00dabf00003700000000000000dac0000000000000dea701003800000000000000dea8000000000000e28f0200390000"
            "0000000000e290000000000000e67703003a00000000000000e678000000000000ea5f04003b00000000000000ea6000"
            "0000000000ee4700003c00000000000000ee48000000000000f22f01003d00000000000000f230000000000000f61702"
            "003e00000000000000f618000000000000f9ff03003f00000000000000fa00000000000000fde7040040000000000000"
            "00fde800000000000101cf0000410000000000000101d000000000000105b70100420000000000000105b80000000000"
            "01099f0200430000000000000109a00000000000010d87030044000000000000010d88000000000001116f0400450001"
            "00040000012c"
        ),
    ),
    "snapshot_tombstone": (
        "000000036772700d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d00000003",
        None,
    ),
    "update": (
        "000100036772700d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d00000003",
        (
            "00000000000200000005000000000000006e03000000000000006e000000000000006e02000100000000000000006f00"
            "000000000000730000020000"
        ),
    ),
    "update_no_start_offset": (
        "000100036772700d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d00000003",
        "00000000000200000005ffffffffffffffff0200000000000000740000000000000074040006000100040000000c",
    ),
    "update_empty": (
        "0001000000000000000000000000000000000000ffffffff",
        "0000800000007fffffff8000000000000000010100047fffffff",
    ),
    "update_tombstone": (
        "000100036772700d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d00000003",
        None,
    ),
    "unknown_tags_snapshot": (
        "000000036772700d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d00000003",
        (
            "00000000000100000001000000010000000000000005000000000000000a000000000000001402000000000000000500"
            "000000000000060200010100020102030004000000010101aaac0200"
        ),
    ),
    "unknown_tags_update": (
        "000100036772700d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d00000003",
        ("00000000000100000001ffffffffffffffff02000000000000000700000000000000070400020105010501020400000000"),
    ),
}

TOPIC_A = uuid.UUID("0d5a3b2c-4e6f-4a1b-9c8d-7e6f5a4b3c2d")
TOPIC_B = uuid.UUID("f1e2d3c4-b5a6-4978-8695-a4b3c2d1e0ff")
ZERO_UUID = uuid.UUID(int=0)

SK = ShareSnapshotKey("grp", TOPIC_A, 3)
UK = ShareUpdateKey("grp", TOPIC_A, 3)
AVAILABLE, ACKED, ARCHIVED = DELIVERY_STATE_AVAILABLE, DELIVERY_STATE_ACKNOWLEDGED, DELIVERY_STATE_ARCHIVED

# The same records as tidelog values (ShareRecordVectors.java builds them field by field alike).
CASES: dict[str, tuple[ShareStateRecordKey, ShareStateRecordValue | None]] = {
    "snapshot": (
        SK,
        ShareSnapshotValue(
            2,
            1,
            5,
            100,
            1760000000000,
            1760000001234,
            (StateBatch(100, 109, AVAILABLE, 1), StateBatch(110, 110, ACKED, 3), StateBatch(111, 120, ARCHIVED, 5)),
        ),
    ),
    "snapshot_delivery_complete_count": (
        SK,
        ShareSnapshotValue(3, 1, 5, 200, 1760000000000, 1760000005678, (StateBatch(203, 209, ACKED, 1),), 7),
    ),
    "snapshot_delivery_complete_count_zero": (SK, ShareSnapshotValue(0, 0, 0, 0, 0, 0, (), 0)),
    "snapshot_extremes": (
        ShareSnapshotKey("grüppe-日本", ZERO_UUID, INT32_MAX),
        ShareSnapshotValue(
            INT32_MAX,
            INT32_MIN,
            -1,
            INT64_MAX,
            INT64_MIN,
            -1,
            (StateBatch(INT64_MIN, INT64_MAX, -128, INT16_MIN), StateBatch(-1, -1, 127, INT16_MAX)),
            INT32_MIN,
        ),
    ),
    "snapshot_long": (
        ShareSnapshotKey("g" * 200, TOPIC_B, 0),
        ShareSnapshotValue(
            70, 2, 9, 0, 1, 2, tuple(StateBatch(1000 * i, 1000 * i + 999, i % 5, i) for i in range(70)), 300
        ),
    ),
    "snapshot_tombstone": (SK, None),
    "update": (UK, ShareUpdateValue(2, 5, 110, (StateBatch(110, 110, ACKED, 1), StateBatch(111, 115, AVAILABLE, 2)))),
    "update_no_start_offset": (UK, ShareUpdateValue(2, 5, -1, (StateBatch(116, 116, ARCHIVED, 6),), 12)),
    "update_empty": (
        ShareUpdateKey("", ZERO_UUID, -1),
        ShareUpdateValue(INT32_MIN, INT32_MAX, INT64_MIN, (), INT32_MAX),
    ),
    "update_tombstone": (UK, None),
}

# Records with tagged fields unknown to Kafka 4.3.1 (as a later Kafka might write): tidelog skips
# them, in the value and in its batches, and reads the rest.
UNKNOWN_TAGS: dict[str, tuple[ShareStateRecordKey, ShareStateRecordValue]] = {
    "unknown_tags_snapshot": (SK, ShareSnapshotValue(1, 1, 1, 5, 10, 20, (StateBatch(5, 6, ACKED, 1),), 1)),
    "unknown_tags_update": (UK, ShareUpdateValue(1, 1, -1, (StateBatch(7, 7, ARCHIVED, 2),))),
}


def test_every_vector_is_checked() -> None:
    assert set(KAFKA_VECTORS) == set(CASES) | set(UNKNOWN_TAGS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_encodes_as_kafka(name: str) -> None:
    key, value = CASES[name]
    key_hex, value_hex = KAFKA_VECTORS[name]
    assert encode_key(key).hex() == key_hex
    assert (None if value is None else encode_value(value).hex()) == value_hex


@pytest.mark.parametrize("name", sorted(CASES))
def test_decodes_kafkas_bytes(name: str) -> None:
    key, value = CASES[name]
    key_hex, value_hex = KAFKA_VECTORS[name]
    assert decode_key(bytes.fromhex(key_hex)) == key
    if value_hex is not None:
        assert decode_value(key, bytes.fromhex(value_hex)) == value


@pytest.mark.parametrize("name", sorted(UNKNOWN_TAGS))
def test_skips_unknown_tagged_fields(name: str) -> None:
    key, value = UNKNOWN_TAGS[name]
    key_hex, value_hex = KAFKA_VECTORS[name]
    assert value_hex is not None
    assert decode_key(bytes.fromhex(key_hex)) == key
    assert decode_value(key, bytes.fromhex(value_hex)) == value
    assert encode_value(value) != bytes.fromhex(value_hex)  # what tidelog writes: no unknown tags


def test_delivery_complete_count_is_left_out_only_when_minus_one() -> None:
    """Kafka's default, -1, is left out of the bytes and is what a record without the tag (from Kafka
    <= 4.1) reads as; any other count, 0 included, is written as tag 0 of size 4."""
    without = encode_value(ShareUpdateValue(1, 2, 3, ()))
    assert without.endswith(b"\x01\x00")  # no batches, no tags
    zero = encode_value(ShareUpdateValue(1, 2, 3, (), 0))
    assert zero == without[:-1] + bytes.fromhex("010004" + "00000000")
    assert decode_value(UK, without).delivery_complete_count == -1
    assert decode_value(UK, zero).delivery_complete_count == 0


# ---- round trips -------------------------------------------------------------------------------

texts = st.text(max_size=12)
int8s = st.integers(-128, 127)
int16s = st.integers(INT16_MIN, INT16_MAX)
int32s = st.integers(INT32_MIN, INT32_MAX)
int64s = st.integers(INT64_MIN, INT64_MAX)
topic_ids = st.uuids() | st.just(ZERO_UUID)
batches = st.lists(st.builds(StateBatch, int64s, int64s, int8s, int16s), max_size=4).map(tuple)

keys = st.one_of(
    st.builds(ShareSnapshotKey, texts, topic_ids, int32s),
    st.builds(ShareUpdateKey, texts, topic_ids, int32s),
)
values = st.one_of(
    st.builds(ShareSnapshotValue, int32s, int32s, int32s, int64s, int64s, int64s, batches, int32s),
    st.builds(ShareUpdateValue, int32s, int32s, int64s, batches, int32s),
)
KEY_FOR = {ShareSnapshotValue: SK, ShareUpdateValue: UK}


@settings(max_examples=200, deadline=None)
@given(keys)
def test_key_round_trip(key: ShareStateRecordKey) -> None:
    data = encode_key(key)
    assert decode_key(data) == key
    assert int.from_bytes(data[:2], "big") == key.record_type


@settings(max_examples=300, deadline=None)
@given(values)
def test_value_round_trip(value: ShareStateRecordValue) -> None:
    data = encode_value(value)
    assert decode_value(KEY_FOR[type(value)], data) == value
    assert data[:2] == b"\x00\x00"


@settings(max_examples=100, deadline=None)
@given(values, st.data())
def test_truncated_and_extended_values_are_refused(value: ShareStateRecordValue, data: st.DataObject) -> None:
    encoded = encode_value(value)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    key = KEY_FOR[type(value)]
    with pytest.raises(RecordFormatError):
        decode_value(key, encoded[:cut])
    with pytest.raises(RecordFormatError):
        decode_value(key, encoded + b"\x00")


# ---- malformed input ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(KAFKA_VECTORS))
def test_every_truncation_is_refused(name: str) -> None:
    key_hex, value_hex = KAFKA_VECTORS[name]
    key_bytes = bytes.fromhex(key_hex)
    for n in range(len(key_bytes)):
        with pytest.raises(RecordFormatError):
            decode_key(key_bytes[:n])
    if value_hex is None:
        return
    key = decode_key(key_bytes)
    value_bytes = bytes.fromhex(value_hex)
    for n in range(len(value_bytes)):
        with pytest.raises(RecordFormatError):
            decode_value(key, value_bytes[:n])


_UPDATE_HEAD = "0000" + "00000001" + "00000002" + "0000000000000003"  # version, epochs, start offset
_BATCH = "0000000000000005" + "0000000000000006" + "02" + "0001"  # offsets 5-6, acknowledged, once


@pytest.mark.parametrize(
    ("key", "data"),
    [
        # unknown value version, a version with nothing after it
        (UK, bytes.fromhex("0001" + _UPDATE_HEAD[4:] + "01" + "00")),
        (SK, b"\xff\xff"),
        # trailing bytes after the value
        (UK, bytes.fromhex(_UPDATE_HEAD + "01" + "00" + "00")),
        # a snapshot read as an update and an update read as a snapshot: the lengths disagree
        (SK, bytes.fromhex(_UPDATE_HEAD + "02" + _BATCH + "00" + "00")),
        (UK, bytes.fromhex(KAFKA_VECTORS["snapshot"][1] or "")),
        # a tagged DeliveryCompleteCount whose size is not 4 (3 and 5)
        (UK, bytes.fromhex(_UPDATE_HEAD + "01" + "010003" + "000007")),
        (UK, bytes.fromhex(_UPDATE_HEAD + "01" + "010005" + "0000000700")),
        # tags out of order / repeated, in the value and in a batch
        (UK, bytes.fromhex(_UPDATE_HEAD + "01" + "02" + "0300" + "0100")),
        (UK, bytes.fromhex(_UPDATE_HEAD + "01" + "02" + "0004" + "00000001" + "0004" + "00000002")),
        (UK, bytes.fromhex(_UPDATE_HEAD + "02" + _BATCH + "02" + "0500" + "0500" + "00")),
        # a forged batch count and tag count far beyond the bytes there
        (UK, bytes.fromhex(_UPDATE_HEAD + "ffffffff0f")),
        (SK, bytes.fromhex("0000" + "00" * 36 + "ffffffff0f")),
        (UK, bytes.fromhex(_UPDATE_HEAD + "01" + "ffffffff0f")),
        (UK, bytes.fromhex(_UPDATE_HEAD + "02" + _BATCH + "ffffffff0f" + "00")),
        # a varint longer than 5 bytes
        (UK, bytes.fromhex(_UPDATE_HEAD + "ffffffffff0f")),
        # null batches (Kafka forbids it)
        (UK, bytes.fromhex(_UPDATE_HEAD + "00" + "00")),
        # a batch cut short inside the array
        (UK, bytes.fromhex(_UPDATE_HEAD + "04" + _BATCH + "00" + _BATCH + "00" + "00")),
    ],
)
def test_malformed_values_are_refused(key: ShareStateRecordKey, data: bytes) -> None:
    with pytest.raises(RecordFormatError):
        decode_value(key, data)


def test_out_of_range_fields_are_refused_on_write() -> None:
    for value in (
        ShareSnapshotValue(INT32_MAX + 1, 0, 0, 0, 0, 0, ()),
        ShareSnapshotValue(0, 0, 0, 0, INT64_MIN - 1, 0, ()),
        ShareSnapshotValue(0, 0, 0, 0, 0, 0, (), INT32_MAX + 1),
        ShareUpdateValue(0, 0, INT64_MAX + 1, ()),
        ShareUpdateValue(0, 0, 0, (StateBatch(0, 0, 128, 0),)),
        ShareUpdateValue(0, 0, 0, (StateBatch(0, 0, 0, INT16_MAX + 1),)),
        ShareUpdateValue(0, 0, 0, (StateBatch(INT64_MIN - 1, 0, 0, 0),)),
    ):
        with pytest.raises(RecordFormatError):
            encode_value(value)
    for key in (
        ShareSnapshotKey("grp", TOPIC_A, INT32_MAX + 1),
        ShareUpdateKey("x" * 0x8000, TOPIC_A, 0),
        ShareUpdateKey("\ud800", TOPIC_A, 0),
    ):
        with pytest.raises(RecordFormatError):
            encode_key(key)
    assert decode_key(encode_key(ShareUpdateKey("x" * 0x7FFF, TOPIC_A, 0))).group == "x" * 0x7FFF


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\x00\x02\x00\x03grp" + TOPIC_A.bytes + b"\x00\x00\x00\x03",  # record type 2: none in __share_group_state
        b"\xff\xff\x00\x03grp" + TOPIC_A.bytes + b"\x00\x00\x00\x03",  # record type -1
        b"\x00\x00\xff\xff" + TOPIC_A.bytes + b"\x00\x00\x00\x03",  # null group
        b"\x00\x00\x80\x00" + TOPIC_A.bytes + b"\x00\x00\x00\x03",  # a negative length other than -1
        b"\x00\x00\x00\x03grp" + TOPIC_A.bytes + b"\x00\x00\x00",  # truncated partition
        b"\x00\x00\x00\x03grp" + TOPIC_A.bytes[:15],  # truncated topic id
        b"\x00\x01\x00\x03grp" + TOPIC_A.bytes + b"\x00\x00\x00\x03\x00",  # trailing byte
        b"\x00\x00\x00\x02\xc3\x28" + TOPIC_A.bytes + b"\x00\x00\x00\x03",  # invalid UTF-8
    ],
)
def test_malformed_keys_are_refused(data: bytes) -> None:
    with pytest.raises(RecordFormatError):
        decode_key(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(KAFKA_VECTORS)), st.data())
def test_mutated_kafka_bytes_decode_or_raise_record_format_error(name: str, data: st.DataObject) -> None:
    key_hex, value_hex = KAFKA_VECTORS[name]
    raw = bytearray(bytes.fromhex(value_hex or key_hex))
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    target = data.draw(st.sampled_from(["key", SK, UK]))
    try:
        if target == "key":
            decode_key(bytes(raw))
        else:
            assert not isinstance(target, str)
            decode_value(target, bytes(raw))
    except RecordFormatError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80), st.sampled_from([SK, UK]))
def test_arbitrary_bytes_decode_or_raise_record_format_error(raw: bytes, key: ShareStateRecordKey) -> None:
    for decode in (lambda: decode_key(raw), lambda: decode_value(key, b"\x00\x00" + raw)):
        try:
            decode()
        except RecordFormatError:
            pass


# ---- Kafka decodes what tidelog encodes (needs java and mvn) ------------------------------------


def _kafka_classpath() -> str:
    """Kafka 4.3.1's group and share coordinators and their dependencies, resolved by java/records/pom.xml."""
    pom = JAVA_DIR / "pom.xml"
    out = JAVA_DIR / "target" / "classpath.txt"
    if not out.exists() or out.stat().st_mtime < pom.stat().st_mtime:
        subprocess.run(
            ["mvn", "-B", "-q", "-f", str(pom), "dependency:build-classpath", f"-Dmdep.outputFile={out}"],
            check=True,
            timeout=600,
        )
    return out.read_text().strip()


@pytest.fixture(scope="module")
def record_vectors() -> list[str]:
    """The command line that runs ShareRecordVectors.java (Java 11+ compiles a single source file itself)."""
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("java and mvn are needed to run Kafka's record classes")
    return ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", _kafka_classpath(), str(JAVA_SOURCE)]


def _run_java(command: list[str], *args: str, stdin: str = "") -> list[str]:
    proc = subprocess.run([*command, *args], input=stdin, capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def _kafka_json(key: ShareStateRecordKey, value: ShareStateRecordValue | None) -> dict[str, Any]:
    """What ShareRecordVectors.java prints for a record Kafka decoded (less the re-serialized bytes)."""
    k = {"groupId": key.group, "topicId": str(key.topic_id), "partition": key.partition}
    v: dict[str, Any] | None
    if value is None:
        v = None
    else:
        v = {"snapshotEpoch": value.snapshot_epoch}
        if isinstance(value, ShareSnapshotValue):
            v["stateEpoch"] = value.state_epoch
        v["leaderEpoch"] = value.leader_epoch
        v["startOffset"] = value.start_offset
        v["deliveryCompleteCount"] = value.delivery_complete_count
        if isinstance(value, ShareSnapshotValue):
            v["createTimestamp"] = value.create_timestamp
            v["writeTimestamp"] = value.write_timestamp
        v["stateBatches"] = [
            {
                "firstOffset": b.first_offset,
                "lastOffset": b.last_offset,
                "deliveryState": b.delivery_state,
                "deliveryCount": b.delivery_count,
            }
            for b in value.state_batches
        ]
    return {"type": key.record_type, "key": k, "value": v}


def _random_records(rng: random.Random, n: int) -> list[tuple[ShareStateRecordKey, ShareStateRecordValue | None]]:
    """Varied records: tombstones, empties, non-ASCII and astral text, extremes, long batch lists."""
    alphabet = "abc-_.*^$ü日本\U0001f600"

    def text() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 3, 8, 140])))

    def i16() -> int:
        return rng.choice([0, -1, 1, INT16_MIN, INT16_MAX, rng.randint(INT16_MIN, INT16_MAX)])

    def i32() -> int:
        return rng.choice([0, -1, 1, INT32_MIN, INT32_MAX, rng.randint(INT32_MIN, INT32_MAX)])

    def i64() -> int:
        return rng.choice([0, -1, 1, INT64_MIN, INT64_MAX, rng.randint(INT64_MIN, INT64_MAX)])

    def topic_id() -> uuid.UUID:
        return ZERO_UUID if rng.random() < 0.1 else uuid.UUID(int=rng.getrandbits(128))

    def state_batches() -> tuple[StateBatch, ...]:
        n = rng.choice([0, 1, 3, 70])
        return tuple(StateBatch(i64(), i64(), rng.choice([0, 2, 4, rng.randint(-128, 127)]), i16()) for _ in range(n))

    def count() -> int:
        return rng.choice([-1, -1, 0, i32()])

    out: list[tuple[ShareStateRecordKey, ShareStateRecordValue | None]] = []
    for i in range(n):
        group, tid, partition = text(), topic_id(), i32()
        kind = i % 5
        if kind == 0:
            out.append((ShareSnapshotKey(group, tid, partition), None))
        elif kind in (1, 2):
            value = ShareSnapshotValue(i32(), i32(), i32(), i64(), i64(), i64(), state_batches(), count())
            out.append((ShareSnapshotKey(group, tid, partition), value))
        else:
            out.append(
                (ShareUpdateKey(group, tid, partition), ShareUpdateValue(i32(), i32(), i64(), state_batches(), count()))
            )
    return out


@pytest.mark.interop
def test_kafka_still_prints_these_vectors(record_vectors: list[str]) -> None:
    printed = {}
    for line in _run_java(record_vectors, "state-vectors"):
        name, key_hex, value_hex = line.split(" ")
        printed[name] = (key_hex, None if value_hex == "-" else value_hex)
    assert printed == KAFKA_VECTORS


@pytest.mark.interop
def test_kafka_decodes_what_tidelog_encodes(record_vectors: list[str]) -> None:
    records: list[tuple[ShareStateRecordKey, ShareStateRecordValue | None]] = list(CASES.values())
    records += list(UNKNOWN_TAGS.values())
    records += _random_records(random.Random(932), 300)
    encoded = [(encode_key(k).hex(), None if v is None else encode_value(v).hex()) for k, v in records]
    lines = _run_java(record_vectors, "state-decode", stdin="".join(f"{k} {v or '-'}\n" for k, v in encoded))
    assert len(lines) == len(records)
    for (key, value), (key_hex, value_hex), line in zip(records, encoded, lines):
        got = json.loads(line)
        assert "error" not in got, (key, value, got)
        # Kafka read the same fields ...
        assert {n: got[n] for n in ("type", "key", "value")} == _kafka_json(key, value)
        # ... and writes them back as the very bytes tidelog wrote.
        assert (got["keyHex"], got["valueHex"]) == (key_hex, value_hex)
