"""tidelog's streams group record codec (`tidelog.groups.streams_records`) against Apache Kafka 4.3.1.

The golden vectors were printed by Kafka 4.3.1 itself: `java/records/StreamsRecordVectors.java vectors`
builds each record with Kafka's generated classes and serializes it with GroupCoordinatorRecordSerde.
The fast tests check tidelog's bytes against them without a JVM, then round trips and malformed input;
the interop test has Kafka's serde decode what tidelog encodes (random records included) and
re-serialize it into the same bytes.

To regenerate the vectors:

    mvn -B -q -f java/records/pom.xml dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
    java -cp "$(cat java/records/target/classpath.txt)" java/records/StreamsRecordVectors.java vectors
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tidelog.groups.records import RecordFormatError
from tidelog.groups.streams_records import (
    CopartitionGroup,
    Endpoint,
    EpochTaskIds,
    KeyValue,
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMemberMetadataValue,
    StreamsGroupMetadataKey,
    StreamsGroupMetadataValue,
    StreamsGroupPartitionMetadataKey,
    StreamsGroupRecordKey,
    StreamsGroupRecordValue,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTargetAssignmentMetadataValue,
    StreamsGroupTopologyKey,
    StreamsGroupTopologyValue,
    Subtopology,
    TaskIds,
    TopicInfo,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

ROOT = Path(__file__).resolve().parents[2]
JAVA_DIR = ROOT / "java" / "records"
JAVA_SOURCE = JAVA_DIR / "StreamsRecordVectors.java"

# name -> (key hex, value hex or None for a tombstone), as `StreamsRecordVectors.java vectors` printed them.
KAFKA_VECTORS: dict[str, tuple[str, str | None]] = {
    "metadata": (
        "00110003617070",
        "0000000000031234567890abcdef00",
    ),
    "metadata_validated": (
        "00110003617070",
        ("000000000004ffffffffffffffff02000400000000011902156e756d2e7374616e6462792e7265706c69636173023000"),
    ),
    "metadata_null_configs": (
        "0011000e6772c3bc7070652de697a5e69cac",
        "00007fffffff000000000000000001010100",
    ),
    "metadata_tombstone": (
        "00110003617070",
        None,
    ),
    "member": (
        "0013000361707000036d2d31",
        (
            "000000001c6170702d53747265616d5468726561642d312d636f6e73756d65720b2f3132372e302e302e31000493e000"
            "0000001135643363346232612d70726f63657373ff0100"
        ),
    ),
    "member_endpoint": (
        "0013000361707000036d2d31",
        (
            "000008696e73742dc3bc077261636b2d610101ffffffffffffffff010107686f73742d31ffff000303617a0565752d31"
            "00057261636b010000"
        ),
    ),
    "member_tombstone": (
        "0013000361707000036d2d31",
        None,
    ),
    "target_metadata": (
        "00140003617070",
        "00000000000700",
    ),
    "target_metadata_timestamp": (
        "00140003617070",
        "00000000000801000800000199c82cc000",
    ),
    "target_metadata_tombstone": (
        "00140003617070",
        None,
    ),
    "target_member": (
        "0015000361707000036d2d31",
        "00000302300300000000000000010002310200000001000202310200000000000100",
    ),
    "target_member_empty": (
        "0015000361707000036d2d31",
        "000001010100",
    ),
    "target_member_tombstone": (
        "0015000361707000036d2d31",
        None,
    ),
    "current_assignment": (
        "0016000361707000036d2d31",
        (
            "000000000005000000040102023003000000000000000101000903000000030000000502023102000000010001020231"
            "02000000000100050200000002010100"
        ),
    ),
    "current_assignment_null_epochs": (
        "0016000361707000036d2d31",
        "000000000000000000007f020230020000000201000100010101010100",
    ),
    "current_assignment_tombstone": (
        "0016000361707000036d2d31",
        None,
    ),
    "topology": (
        "00170003617070",
        (
            "000000000000030230020677632d696e010102396170702d4b53545245414d2d4147475245474154452d53544154452d"
            "53544f52452d303030303030303030332d7265706172746974696f6e0101000231010102376170702d4b53545245414d"
            "2d4147475245474154452d53544154452d53544f52452d303030303030303030332d6368616e67656c6f670000000000"
            "03020f636c65616e75702e706f6c69637908636f6d7061637400000102396170702d4b53545245414d2d414747524547"
            "4154452d53544154452d53544f52452d303030303030303030332d7265706172746974696f6e000000000000030f636c"
            "65616e75702e706f6c6963790764656c657465000e7365676d656e742e62797465730935323432383830300000020102"
            "00010300007fff000000"
        ),
    ),
    "topology_empty": (
        "00170003617070",
        "0000fffffff90100",
    ),
    "topology_tombstone": (
        "00170003617070",
        None,
    ),
    "unknown_tags_target_metadata": (
        "00140003617070",
        "0000000000090200080000000000000001c801020102",
    ),
}

REPARTITION = "app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
CHANGELOG = "app-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"
GK = StreamsGroupMetadataKey("app")
MK = StreamsGroupMemberMetadataKey("app", "m-1")
TK = StreamsGroupTargetAssignmentMetadataKey("app")
TMK = StreamsGroupTargetAssignmentMemberKey("app", "m-1")
CK = StreamsGroupCurrentMemberAssignmentKey("app", "m-1")
PK = StreamsGroupTopologyKey("app")

# the same records as tidelog's values (None: a tombstone)
RECORDS: dict[str, tuple[StreamsGroupRecordKey, StreamsGroupRecordValue | None]] = {
    "metadata": (GK, StreamsGroupMetadataValue(3, 0x1234567890ABCDEF)),
    "metadata_validated": (
        GK,
        StreamsGroupMetadataValue(4, -1, 0, (KeyValue("num.standby.replicas", "0"),)),
    ),
    "metadata_null_configs": (
        StreamsGroupMetadataKey("grüppe-日本"),
        StreamsGroupMetadataValue(2**31 - 1, 0, -1, None),
    ),
    "metadata_tombstone": (GK, None),
    "member": (
        MK,
        StreamsGroupMemberMetadataValue(
            None, None, "app-StreamThread-1-consumer", "/127.0.0.1", 300000, 0, "5d3c4b2a-process", None, ()
        ),
    ),
    "member_endpoint": (
        MK,
        StreamsGroupMemberMetadataValue(
            "inst-ü",
            "rack-a",
            "",
            "",
            -1,
            -1,
            "",
            Endpoint("host-1", 65535),
            (KeyValue("az", "eu-1"), KeyValue("rack", "")),
        ),
    ),
    "member_tombstone": (MK, None),
    "target_metadata": (TK, StreamsGroupTargetAssignmentMetadataValue(7)),
    "target_metadata_timestamp": (TK, StreamsGroupTargetAssignmentMetadataValue(8, 1760000000000)),
    "target_metadata_tombstone": (TK, None),
    "target_member": (
        TMK,
        StreamsGroupTargetAssignmentMemberValue((TaskIds("0", (0, 1)), TaskIds("1", (1,))), (TaskIds("1", (0,)),), ()),
    ),
    "target_member_empty": (TMK, StreamsGroupTargetAssignmentMemberValue((), (), ())),
    "target_member_tombstone": (TMK, None),
    "current_assignment": (
        CK,
        StreamsGroupCurrentMemberAssignmentValue(
            5,
            4,
            1,
            (EpochTaskIds("0", (0, 1), (3, 5)),),
            (EpochTaskIds("1", (1,), ()),),
            (),
            (EpochTaskIds("1", (0,), (2,)),),
            (),
            (),
        ),
    ),
    "current_assignment_null_epochs": (
        CK,
        StreamsGroupCurrentMemberAssignmentValue(0, 0, 127, (EpochTaskIds("0", (2,), None),), (), (), (), (), ()),
    ),
    "current_assignment_tombstone": (CK, None),
    "topology": (
        PK,
        StreamsGroupTopologyValue(
            0,
            (
                Subtopology("0", ("wc-in",), (), (), (REPARTITION,), (), ()),
                Subtopology(
                    "1",
                    (),
                    (),
                    (TopicInfo(CHANGELOG, 0, 3, (KeyValue("cleanup.policy", "compact"),)),),
                    (),
                    (
                        TopicInfo(
                            REPARTITION,
                            0,
                            0,
                            (KeyValue("cleanup.policy", "delete"), KeyValue("segment.bytes", "52428800")),
                        ),
                    ),
                    (CopartitionGroup((), (1,), (0, 32767)),),
                ),
            ),
        ),
    ),
    "topology_empty": (PK, StreamsGroupTopologyValue(-7, ())),
    "topology_tombstone": (PK, None),
}


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_tidelog_writes_kafkas_bytes(name: str) -> None:
    key, value = RECORDS[name]
    key_hex, value_hex = KAFKA_VECTORS[name]
    assert encode_key(key).hex() == key_hex
    assert (None if value is None else encode_value(value).hex()) == value_hex


@pytest.mark.parametrize("name", sorted(KAFKA_VECTORS))
def test_tidelog_reads_kafkas_bytes(name: str) -> None:
    key_hex, value_hex = KAFKA_VECTORS[name]
    key = decode_key(bytes.fromhex(key_hex))
    if name == "unknown_tags_target_metadata":
        assert decode_value(key, bytes.fromhex(value_hex or "")) == StreamsGroupTargetAssignmentMetadataValue(9, 1)
        return
    assert key == RECORDS[name][0]
    if value_hex is not None:
        assert decode_value(key, bytes.fromhex(value_hex)) == RECORDS[name][1]


def test_absent_tags_read_as_kafkas_defaults() -> None:
    # no tag 0/1: validated epoch -1, configs empty (not null); no assignment epochs: () (not None)
    assert decode_value(GK, bytes.fromhex("000000000003000000000000000000")) == StreamsGroupMetadataValue(3, 0, -1, ())
    value = decode_value(CK, bytes.fromhex("0000000000020000000101020230020000000000010101010100"))
    assert isinstance(value, StreamsGroupCurrentMemberAssignmentValue)
    assert value.active_tasks == (EpochTaskIds("0", (0,), ()),)


def test_partition_metadata_key_is_read_and_its_value_refused() -> None:
    key = decode_key(bytes.fromhex("00120003617070"))
    assert key == StreamsGroupPartitionMetadataKey("app")
    with pytest.raises(RecordFormatError):
        decode_value(key, b"\x00\x00\x01\x00")


@pytest.mark.parametrize("name", [n for n, (_, v) in KAFKA_VECTORS.items() if v is not None])
def test_truncated_values_raise_record_format_error(name: str) -> None:
    key_hex, value_hex = KAFKA_VECTORS[name]
    key, value = decode_key(bytes.fromhex(key_hex)), bytes.fromhex(value_hex or "")
    for cut in range(len(value)):
        with pytest.raises(RecordFormatError):
            decode_value(key, value[:cut])
    with pytest.raises(RecordFormatError):
        decode_value(key, value + b"\x00")


@given(st.binary(max_size=64), st.sampled_from([GK, MK, TK, TMK, CK, PK]))
def test_arbitrary_bytes_decode_or_raise_record_format_error(raw: bytes, key: StreamsGroupRecordKey) -> None:
    for decode in (lambda: decode_key(raw), lambda: decode_value(key, b"\x00\x00" + raw)):
        try:
            decode()
        except RecordFormatError:
            pass


# ---- Kafka decodes what tidelog encodes (needs java and mvn) ------------------------------------


def _random_records(rng: random.Random, n: int) -> list[tuple[StreamsGroupRecordKey, StreamsGroupRecordValue]]:
    def s() -> str:
        return "".join(rng.choice("abcü-日_.0") for _ in range(rng.randrange(0, 12)))

    def kvs() -> tuple[KeyValue, ...]:
        return tuple(KeyValue(s(), s()) for _ in range(rng.randrange(3)))

    def ints(lo: int = -(2**31), hi: int = 2**31 - 1) -> tuple[int, ...]:
        return tuple(rng.randint(lo, hi) for _ in range(rng.randrange(4)))

    def epoch_tasks() -> tuple[EpochTaskIds, ...]:
        out = []
        for _ in range(rng.randrange(3)):
            ps = ints()
            epochs = rng.choice([None, (), tuple(rng.randint(0, 99) for _ in ps)])
            out.append(EpochTaskIds(s(), ps, epochs if epochs != () or not ps else ()))
        return tuple(out)

    def infos() -> tuple[TopicInfo, ...]:
        return tuple(
            TopicInfo(s(), rng.randint(-(2**31), 2**31 - 1), rng.randint(-(2**15), 2**15 - 1), kvs())
            for _ in range(rng.randrange(3))
        )

    out: list[tuple[StreamsGroupRecordKey, StreamsGroupRecordValue]] = []
    for _ in range(n):
        g, m = s(), s()
        kind = rng.randrange(6)
        if kind == 0:
            configs = rng.choice([None, (), kvs()])
            out.append(
                (
                    StreamsGroupMetadataKey(g),
                    StreamsGroupMetadataValue(
                        rng.randint(0, 99), rng.getrandbits(64) - 2**63, rng.randint(-1, 3), configs
                    ),
                )
            )
        elif kind == 1:
            endpoint = rng.choice([None, Endpoint(s(), rng.randint(0, 65535))])
            out.append(
                (
                    StreamsGroupMemberMetadataKey(g, m),
                    StreamsGroupMemberMetadataValue(
                        rng.choice([None, s()]), rng.choice([None, s()]), s(), s(), -1, 0, s(), endpoint, kvs()
                    ),
                )
            )
        elif kind == 2:
            out.append(
                (
                    StreamsGroupTargetAssignmentMetadataKey(g),
                    StreamsGroupTargetAssignmentMetadataValue(rng.randint(0, 99), rng.choice([0, 1760000000000])),
                )
            )
        elif kind == 3:
            tasks = [tuple(TaskIds(s(), ints()) for _ in range(rng.randrange(3))) for _ in range(3)]
            out.append((StreamsGroupTargetAssignmentMemberKey(g, m), StreamsGroupTargetAssignmentMemberValue(*tasks)))
        elif kind == 4:
            lists = [epoch_tasks() for _ in range(6)]
            out.append(
                (
                    StreamsGroupCurrentMemberAssignmentKey(g, m),
                    StreamsGroupCurrentMemberAssignmentValue(rng.randint(0, 9), rng.randint(0, 9), 2, *lists),
                )
            )
        else:
            subs = tuple(
                Subtopology(
                    s(),
                    tuple(s() for _ in range(rng.randrange(3))),
                    (),
                    infos(),
                    tuple(s() for _ in range(rng.randrange(2))),
                    infos(),
                    tuple(CopartitionGroup(ints(0, 9), (), ints(-(2**15), 2**15 - 1)) for _ in range(rng.randrange(2))),
                )
                for _ in range(rng.randrange(3))
            )
            out.append((StreamsGroupTopologyKey(g), StreamsGroupTopologyValue(rng.randint(0, 9), subs)))
    return out


@pytest.mark.interop
def test_kafka_decodes_what_tidelog_encodes() -> None:
    if shutil.which("java") is None or not (JAVA_DIR / "target" / "classpath.txt").exists():
        subprocess.run(
            ["mvn", "-B", "-q", "-f", str(JAVA_DIR / "pom.xml"), "dependency:build-classpath"]
            + [f"-Dmdep.outputFile={JAVA_DIR / 'target' / 'classpath.txt'}"],
            check=True,
            timeout=600,
        )
    command = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp"]
    command += [(JAVA_DIR / "target" / "classpath.txt").read_text().strip(), str(JAVA_SOURCE)]
    printed = subprocess.run([*command, "vectors"], capture_output=True, text=True, timeout=300, check=True)
    assert {
        n: (k, None if v == "-" else v) for n, k, v in (line.split(" ") for line in printed.stdout.splitlines())
    } == (KAFKA_VECTORS)
    records = [(k, v) for k, v in RECORDS.values() if v is not None] + _random_records(random.Random(1071), 300)
    lines = [f"{encode_key(k).hex()} {encode_value(v).hex()}" for k, v in records]
    decoded = subprocess.run([*command, "decode"], input="\n".join(lines), capture_output=True, text=True, timeout=300)
    assert decoded.returncode == 0, decoded.stderr
    assert decoded.stdout.splitlines() == lines
