"""tidelog's KIP-848 record codec (`tidelog.groups.consumer_records`) against Apache Kafka 4.3.1.

The golden vectors below were printed by Kafka 4.3.1 itself: `java/records/RecordVectors.java vectors`
builds each record with Kafka's generated classes and serializes it with GroupCoordinatorRecordSerde.
The fast tests check tidelog's bytes against them without a JVM; round trips, malformed input and
forged lengths follow. The interop tests run the Java program: it must still print these vectors, and
Kafka must decode every record tidelog encodes (tagged fields set and unset, nulls, empty lists,
random values) into the same fields, and re-serialize it into the same bytes.

To regenerate the vectors (java/records/pom.xml resolves Kafka 4.3.1 from Maven Central):

    mvn -B -q -f java/records/pom.xml dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
    java -cp "$(cat java/records/target/classpath.txt)" java/records/RecordVectors.java vectors
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

from tidelog.groups.consumer_records import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupRecordKey,
    ConsumerGroupRecordValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    TargetTopicPartitions,
    TopicPartitions,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from tidelog.groups.records import RecordFormatError

ROOT = Path(__file__).resolve().parents[2]
JAVA_DIR = ROOT / "java" / "records"
JAVA_SOURCE = JAVA_DIR / "RecordVectors.java"

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# ---- Kafka 4.3.1's bytes ----------------------------------------------------------------------

# name -> (key hex, value hex or None for a tombstone), as `RecordVectors.java vectors` printed them.
KAFKA_VECTORS: dict[str, tuple[str, str | None]] = {
    "metadata": (
        "00030003677270",
        "00000000000500",
    ),
    "metadata_hash": (
        "0003000e6772c3bc7070652de697a5e69cac",
        "00000000002a0100081234567890abcdef",
    ),
    "metadata_extremes": (
        "00030000",
        "0000800000000100088000000000000000",
    ),
    "metadata_tombstone": (
        "00030003677270",
        None,
    ),
    "partition_metadata": (
        "00040003677270",
        "0000020d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d076f726465727300000003010000",
    ),
    "partition_metadata_tombstone": (
        "00040003677270",
        None,
    ),
    "member_consumer": (
        "0005000367727000086d656d6265722d31",
        (
            "0000000009636c69656e742d310a2f31302e302e302e3103076f7264657273097061796d656e747300000493e008756e"
            "69666f726d01000100"
        ),
    ),
    "member_static_regex": (
        "0005000367727000046d2dc3bc",
        "000007696e73742d37077261636b2d610101010a6f72646572732d2e2a0000afc80001000100",
    ),
    "member_classic": (
        "0005000367727000086d656d6265722d31",
        (
            "00000269000872646b61666b610b2f3132372e302e302e31020274000000ea600672616e6765010026010000afc80306"
            "72616e67650b000300000001000174ff000b726f756e64726f62696e010000"
        ),
    ),
    "member_classic_default": (
        "0005000367727000086d656d6265722d31",
        "00000002720263026802026101ffffffff0100",
    ),
    "member_long": (
        "0005000367727000086d656d6265722d31",
        (
            "00000000c901636363636363636363636363636363636363636363636363636363636363636363636363636363636363"
            "636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363"
            "636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363"
            "636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363"
            "636363636363636363636363636302688301037430037431037432037433037434037435037436037437037438037439"
            "047431300474313104743132047431330474313404743135047431360474313704743138047431390474323004743231"
            "047432320474323304743234047432350474323604743237047432380474323904743330047433310474333204743333"
            "047433340474333504743336047433370474333804743339047434300474343104743432047434330474343404743435"
            "047434360474343704743438047434390474353004743531047435320474353304743534047435350474353604743537"
            "047435380474353904743630047436310474363204743633047436340474363504743636047436370474363804743639"
            "047437300474373104743732047437330474373404743735047437360474373704743738047437390474383004743831"
            "047438320474383304743834047438350474383604743837047438380474383904743930047439310474393204743933"
            "047439340474393504743936047439370474393804743939057431303005743130310574313032057431303305743130"
            "340574313035057431303605743130370574313038057431303905743131300574313131057431313205743131330574"
            "313134057431313505743131360574313137057431313805743131390574313230057431323105743132320574313233"
            "057431323405743132350574313236057431323705743132380574313239007fffffff000100b3010100002710021363"
            "6f6f70657261746976652d737469636b7997010000000000000000000000000000000000000000000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
            "000000000000000000000000000000000000000000000000000000"
        ),
    ),
    "member_tombstone": (
        "0005000367727000086d656d6265722d31",
        None,
    ),
    "target_metadata": (
        "00060003677270",
        "00000000000700",
    ),
    "target_metadata_timestamp": (
        "00060003677270",
        "00000000000801000800000199c82cc000",
    ),
    "target_metadata_tombstone": (
        "00060003677270",
        None,
    ),
    "target_member": (
        "0007000367727000086d656d6265722d31",
        (
            "0000040d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d0400000000000000020000000400f1e2d3c4b5a649788695a4b3c2d1e0"
            "ff010000000000000000000000000000000000037fffffffffffffff0000"
        ),
    ),
    "target_member_empty": (
        "0007000367727000086d656d6265722d31",
        "00000100",
    ),
    "target_member_tombstone": (
        "0007000367727000086d656d6265722d31",
        None,
    ),
    "current_assignment": (
        "0008000367727000086d656d6265722d31",
        (
            "00000000000a0000000900030d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d0300000000000000010100090300000005000000"
            "09f1e2d3c4b5a649788695a4b3c2d1e0ff0200000007010005020000000a0100"
        ),
    ),
    "current_assignment_null_epochs": (
        "0008000367727000086d656d6265722d31",
        (
            "0000000000030000000201020d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d02000000030100010002f1e2d3c4b5a649788695"
            "a4b3c2d1e0ff03000000010000000201000903000000040000000400"
        ),
    ),
    "current_assignment_empty_epochs": (
        "0008000367727000086d656d6265722d31",
        (
            "0000fffffffffffffffe02020d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d010002f1e2d3c4b5a649788695a4b3c2d1e0ff02"
            "000000000000"
        ),
    ),
    "current_assignment_none": (
        "0008000367727000086d656d6265722d31",
        "000000000000000000007f010100",
    ),
    "current_assignment_long": (
        "0008000367727000086d656d6265722d31",
        (
            "00007fffffff8000000080020d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d2900000000000000010000000200000003000000"
            "0400000005000000060000000700000008000000090000000a0000000b0000000c0000000d0000000e0000000f000000"
            "100000001100000012000000130000001400000015000000160000001700000018000000190000001a0000001b000000"
            "1c0000001d0000001e0000001f00000020000000210000002200000023000000240000002500000026000000270100a1"
            "0129000003e8000003e9000003ea000003eb000003ec000003ed000003ee000003ef000003f0000003f1000003f20000"
            "03f3000003f4000003f5000003f6000003f7000003f8000003f9000003fa000003fb000003fc000003fd000003fe0000"
            "03ff000004000000040100000402000004030000040400000405000004060000040700000408000004090000040a0000"
            "040b0000040c0000040d0000040e0000040f0100"
        ),
    ),
    "current_assignment_tombstone": (
        "0008000367727000086d656d6265722d31",
        None,
    ),
    "regex": (
        "00100003677270000b5e6f72646572732d2e2a24",
        "0000030a6f72646572732d65750a6f72646572732d7573000000000000000c00000199c82cc07b00",
    ),
    "regex_empty": (
        "00100001670000",
        "0000017fffffffffffffffffffffffffffffff00",
    ),
    "regex_tombstone": (
        "00100003677270000b5e6f72646572732d2e2a24",
        None,
    ),
    "unknown_tags_metadata": (
        "00030003677270",
        "00000000000602000800000000000000630303010203",
    ),
    "unknown_tags_target_metadata": (
        "00060003677270",
        "00000000000901c80100",
    ),
    "unknown_tags_member": (
        "0005000367727000086d656d6265722d31",
        ("000000000263026802027400000003e8000300170100007530020672616e676502090101010701000208080101aa820102bbcc"),
    ),
    "unknown_tags_current_assignment": (
        "0008000367727000086d656d6265722d31",
        (
            "0000000000040000000300020d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d0200000001020005020000000204010402f1e2d3"
            "c4b5a649788695a4b3c2d1e0ff020000000501010001000101"
        ),
    ),
    "unknown_tags_target_member": (
        "0007000367727000086d656d6265722d31",
        "0000020d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d020000000001000305050501070107",
    ),
    "unknown_tags_regex": (
        "00100003677270000b5e6f72646572732d2e2a24",
        "00000202780000000000000001000000000000000201000100",
    ),
}

TOPIC_A = uuid.UUID("0d5a3b2c-4e6f-4a1b-9c8d-7e6f5a4b3c2d")
TOPIC_B = uuid.UUID("f1e2d3c4-b5a6-4978-8695-a4b3c2d1e0ff")
ZERO_UUID = uuid.UUID(int=0)

GK = ConsumerGroupMetadataKey("grp")
MK = ConsumerGroupMemberMetadataKey("grp", "member-1")
TK = ConsumerGroupTargetAssignmentMetadataKey("grp")
TMK = ConsumerGroupTargetAssignmentMemberKey("grp", "member-1")
CK = ConsumerGroupCurrentMemberAssignmentKey("grp", "member-1")
RK = ConsumerGroupRegularExpressionKey("grp", "^orders-.*$")

# The same records as tidelog values (RecordVectors.java builds them field by field alike).
CASES: dict[str, tuple[ConsumerGroupRecordKey, ConsumerGroupRecordValue | None]] = {
    "metadata": (GK, ConsumerGroupMetadataValue(5)),
    "metadata_hash": (ConsumerGroupMetadataKey("grüppe-日本"), ConsumerGroupMetadataValue(42, 0x1234567890ABCDEF)),
    "metadata_extremes": (ConsumerGroupMetadataKey(""), ConsumerGroupMetadataValue(INT32_MIN, INT64_MIN)),
    "metadata_tombstone": (GK, None),
    "partition_metadata_tombstone": (ConsumerGroupPartitionMetadataKey("grp"), None),
    "member_consumer": (
        MK,
        ConsumerGroupMemberMetadataValue(
            instance_id=None,
            rack_id=None,
            client_id="client-1",
            client_host="/10.0.0.1",
            subscribed_topic_names=("orders", "payments"),
            subscribed_topic_regex=None,
            rebalance_timeout_ms=300000,
            server_assignor="uniform",
            classic_member_metadata=None,
        ),
    ),
    "member_static_regex": (
        ConsumerGroupMemberMetadataKey("grp", "m-ü"),
        ConsumerGroupMemberMetadataValue("inst-7", "rack-a", "", "", (), "orders-.*", 45000, None, None),
    ),
    "member_classic": (
        MK,
        ConsumerGroupMemberMetadataValue(
            "i",
            None,
            "rdkafka",
            "/127.0.0.1",
            ("t",),
            None,
            60000,
            "range",
            ClassicMemberMetadata(
                45000,
                (
                    ClassicProtocol("range", bytes([0, 3, 0, 0, 0, 1, 0, 1, ord("t"), 0xFF])),
                    ClassicProtocol("roundrobin", b""),
                ),
            ),
        ),
    ),
    "member_classic_default": (
        MK,
        ConsumerGroupMemberMetadataValue(None, "r", "c", "h", ("a",), "", -1, "", ClassicMemberMetadata(0)),
    ),
    "member_long": (
        MK,
        ConsumerGroupMemberMetadataValue(
            None,
            None,
            "c" * 200,
            "h",
            tuple(f"t{i}" for i in range(130)),
            None,
            INT32_MAX,
            None,
            ClassicMemberMetadata(10000, (ClassicProtocol("cooperative-sticky", bytes(150)),)),
        ),
    ),
    "member_tombstone": (MK, None),
    "target_metadata": (TK, ConsumerGroupTargetAssignmentMetadataValue(7)),
    "target_metadata_timestamp": (TK, ConsumerGroupTargetAssignmentMetadataValue(8, 1760000000000)),
    "target_metadata_tombstone": (TK, None),
    "target_member": (
        TMK,
        ConsumerGroupTargetAssignmentMemberValue(
            (
                TargetTopicPartitions(TOPIC_A, (0, 2, 4)),
                TargetTopicPartitions(TOPIC_B, ()),
                TargetTopicPartitions(ZERO_UUID, (INT32_MAX, -1)),
            )
        ),
    ),
    "target_member_empty": (TMK, ConsumerGroupTargetAssignmentMemberValue(())),
    "target_member_tombstone": (TMK, None),
    "current_assignment": (
        CK,
        ConsumerGroupCurrentMemberAssignmentValue(
            10, 9, 0, (TopicPartitions(TOPIC_A, (0, 1), (5, 9)), TopicPartitions(TOPIC_B, (7,), (10,))), ()
        ),
    ),
    "current_assignment_null_epochs": (
        CK,
        ConsumerGroupCurrentMemberAssignmentValue(
            3, 2, 1, (TopicPartitions(TOPIC_A, (3,), None),), (TopicPartitions(TOPIC_B, (1, 2), (4, 4)),)
        ),
    ),
    "current_assignment_empty_epochs": (
        CK,
        ConsumerGroupCurrentMemberAssignmentValue(
            -1, -2, 2, (TopicPartitions(TOPIC_A, (), ()),), (TopicPartitions(TOPIC_B, (0,), ()),)
        ),
    ),
    "current_assignment_none": (CK, ConsumerGroupCurrentMemberAssignmentValue(0, 0, 127, (), ())),
    "current_assignment_long": (
        CK,
        ConsumerGroupCurrentMemberAssignmentValue(
            INT32_MAX,
            INT32_MIN,
            -128,
            (TopicPartitions(TOPIC_A, tuple(range(40)), tuple(range(1000, 1040))),),
            (),
        ),
    ),
    "current_assignment_tombstone": (CK, None),
    "regex": (RK, ConsumerGroupRegularExpressionValue(("orders-eu", "orders-us"), 12, 1760000000123)),
    "regex_empty": (ConsumerGroupRegularExpressionKey("g", ""), ConsumerGroupRegularExpressionValue((), INT64_MAX, -1)),
    "regex_tombstone": (RK, None),
}

# Records with tagged fields unknown to Kafka 4.3.1 (as a later Kafka might write): tidelog skips
# them, at the top level and inside nested structs, and reads the rest.
UNKNOWN_TAGS: dict[str, tuple[ConsumerGroupRecordKey, ConsumerGroupRecordValue]] = {
    "unknown_tags_metadata": (GK, ConsumerGroupMetadataValue(6, 99)),
    "unknown_tags_target_metadata": (TK, ConsumerGroupTargetAssignmentMetadataValue(9)),
    "unknown_tags_member": (
        MK,
        ConsumerGroupMemberMetadataValue(
            None,
            None,
            "c",
            "h",
            ("t",),
            None,
            1000,
            None,
            ClassicMemberMetadata(30000, (ClassicProtocol("range", b"\x09"),)),
        ),
    ),
    "unknown_tags_current_assignment": (
        CK,
        ConsumerGroupCurrentMemberAssignmentValue(
            4, 3, 0, (TopicPartitions(TOPIC_A, (1,), (2,)),), (TopicPartitions(TOPIC_B, (5,), ()),)
        ),
    ),
    "unknown_tags_target_member": (
        TMK,
        ConsumerGroupTargetAssignmentMemberValue((TargetTopicPartitions(TOPIC_A, (0,)),)),
    ),
    "unknown_tags_regex": (RK, ConsumerGroupRegularExpressionValue(("x",), 1, 2)),
}


def test_every_vector_is_checked() -> None:
    assert set(KAFKA_VECTORS) == set(CASES) | set(UNKNOWN_TAGS) | {"partition_metadata"}


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


def test_partition_metadata_key_is_read_and_its_value_refused() -> None:
    key_hex, value_hex = KAFKA_VECTORS["partition_metadata"]
    assert value_hex is not None
    key = decode_key(bytes.fromhex(key_hex))
    assert key == ConsumerGroupPartitionMetadataKey("grp")
    with pytest.raises(RecordFormatError):
        decode_value(key, bytes.fromhex(value_hex))


def test_kafkas_defaults_and_nulls_stay_distinct() -> None:
    """Null ClassicMemberMetadata / AssignmentEpochs are written (tag 0, size 1, null marker); Kafka's
    defaults (the empty struct, the empty list) are left out and are what a missing tag reads as."""
    consumer = CASES["member_consumer"][1]
    assert isinstance(consumer, ConsumerGroupMemberMetadataValue)
    null_tag = encode_value(consumer)
    assert null_tag.endswith(bytes.fromhex("01000100"))  # one tag: 0, size 1, marker 0
    default = encode_value(
        ConsumerGroupMemberMetadataValue(
            None,
            None,
            "client-1",
            "/10.0.0.1",
            ("orders", "payments"),
            None,
            300000,
            "uniform",
            ClassicMemberMetadata(0),
        )
    )
    assert default == null_tag[:-4] + b"\x00"
    assert decode_value(MK, default).classic_member_metadata == ClassicMemberMetadata(0)
    tp_null = TopicPartitions(TOPIC_A, (1,), None)
    tp_empty = TopicPartitions(TOPIC_A, (1,), ())
    v_null = encode_value(ConsumerGroupCurrentMemberAssignmentValue(1, 0, 0, (tp_null,), ()))
    v_empty = encode_value(ConsumerGroupCurrentMemberAssignmentValue(1, 0, 0, (tp_empty,), ()))
    assert len(v_null) == len(v_empty) + 3
    assert decode_value(CK, v_null).assigned_partitions == (tp_null,)
    assert decode_value(CK, v_empty).assigned_partitions == (tp_empty,)


# ---- round trips -------------------------------------------------------------------------------

texts = st.text(max_size=12)
int8s = st.integers(-128, 127)
int32s = st.integers(INT32_MIN, INT32_MAX)
int64s = st.integers(INT64_MIN, INT64_MAX)
topic_ids = st.uuids() | st.just(ZERO_UUID)
int32_lists = st.lists(int32s, max_size=6).map(tuple)

keys = st.one_of(
    st.builds(ConsumerGroupMetadataKey, texts),
    st.builds(ConsumerGroupPartitionMetadataKey, texts),
    st.builds(ConsumerGroupMemberMetadataKey, texts, texts),
    st.builds(ConsumerGroupTargetAssignmentMetadataKey, texts),
    st.builds(ConsumerGroupTargetAssignmentMemberKey, texts, texts),
    st.builds(ConsumerGroupCurrentMemberAssignmentKey, texts, texts),
    st.builds(ConsumerGroupRegularExpressionKey, texts, texts),
)
classic = st.none() | st.builds(
    ClassicMemberMetadata,
    int32s,
    st.lists(st.builds(ClassicProtocol, texts, st.binary(max_size=20)), max_size=3).map(tuple),
)
topic_partitions = st.builds(TopicPartitions, topic_ids, int32_lists, st.none() | int32_lists)
values = st.one_of(
    st.builds(ConsumerGroupMetadataValue, int32s, int64s),
    st.builds(
        ConsumerGroupMemberMetadataValue,
        st.none() | texts,
        st.none() | texts,
        texts,
        texts,
        st.lists(texts, max_size=4).map(tuple),
        st.none() | texts,
        int32s,
        st.none() | texts,
        classic,
    ),
    st.builds(ConsumerGroupTargetAssignmentMetadataValue, int32s, int64s),
    st.builds(
        ConsumerGroupTargetAssignmentMemberValue,
        st.lists(st.builds(TargetTopicPartitions, topic_ids, int32_lists), max_size=3).map(tuple),
    ),
    st.builds(
        ConsumerGroupCurrentMemberAssignmentValue,
        int32s,
        int32s,
        int8s,
        st.lists(topic_partitions, max_size=3).map(tuple),
        st.lists(topic_partitions, max_size=3).map(tuple),
    ),
    st.builds(ConsumerGroupRegularExpressionValue, st.lists(texts, max_size=4).map(tuple), int64s, int64s),
)
KEY_FOR = {
    ConsumerGroupMetadataValue: GK,
    ConsumerGroupMemberMetadataValue: MK,
    ConsumerGroupTargetAssignmentMetadataValue: TK,
    ConsumerGroupTargetAssignmentMemberValue: TMK,
    ConsumerGroupCurrentMemberAssignmentValue: CK,
    ConsumerGroupRegularExpressionValue: RK,
}


@settings(max_examples=200, deadline=None)
@given(keys)
def test_key_round_trip(key: ConsumerGroupRecordKey) -> None:
    data = encode_key(key)
    assert decode_key(data) == key
    assert int.from_bytes(data[:2], "big") == key.record_type


@settings(max_examples=300, deadline=None)
@given(values)
def test_value_round_trip(value: ConsumerGroupRecordValue) -> None:
    data = encode_value(value)
    assert decode_value(KEY_FOR[type(value)], data) == value
    assert data[:2] == b"\x00\x00"


@settings(max_examples=100, deadline=None)
@given(values, st.data())
def test_truncated_and_extended_values_are_refused(value: ConsumerGroupRecordValue, data: st.DataObject) -> None:
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
    if value_hex is None or name == "partition_metadata":
        return
    key = decode_key(key_bytes)
    value_bytes = bytes.fromhex(value_hex)
    for n in range(len(value_bytes)):
        with pytest.raises(RecordFormatError):
            decode_value(key, value_bytes[:n])


def _value(name: str) -> bytes:
    value_hex = KAFKA_VECTORS[name][1]
    assert value_hex is not None
    return bytes.fromhex(value_hex)


@pytest.mark.parametrize(
    ("key", "data"),
    [
        # unknown value version, a version with nothing after it
        (GK, b"\x00\x01\x00\x00\x00\x05\x00"),
        (GK, b"\xff\xff"),
        # trailing bytes after the value
        (GK, bytes.fromhex("0000000000050000")),
        # a tagged MetadataHash whose size is not 8 (7 and 9)
        (GK, bytes.fromhex("0000000000050100071234567890abcd")),
        (GK, bytes.fromhex("0000000000050100091234567890abcdef00")),
        # tags out of order / repeated
        (GK, bytes.fromhex("0000000000050203000100")),
        (GK, bytes.fromhex("00000000000502000100000100")),
        # a forged tag count, array count and string length far beyond the bytes there
        (GK, bytes.fromhex("000000000005ffffffff0f")),
        (MK, bytes.fromhex("0000000002630268ffffffff0f")),
        (TMK, bytes.fromhex("0000ffffffff0f")),
        (RK, bytes.fromhex("000002ffffffff0f")),
        (CK, bytes.fromhex("0000000000010000000000020d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2dffffffff0f")),
        # a varint longer than 5 bytes
        (TMK, bytes.fromhex("0000ffffffffff0f")),
        # null where Kafka forbids it: client id, a subscribed topic name, the topic list
        (MK, bytes.fromhex("0000000000026802010000000000000000")),
        (MK, bytes.fromhex("000000000263026802000000000000000000")),
        (RK, bytes.fromhex("00000000000000000000000000000000000000")),
        # invalid UTF-8 in the client id
        (MK, bytes.fromhex("00000000028002680100ffffffff0000")),
        # assignment epochs: a tagged field whose size disagrees with the array in it
        (
            CK,
            bytes.fromhex("000000000001000000000002" + TOPIC_A.hex + "0200000001" + "0100060200000002" + "00" + "0100"),
        ),
        # the classic member metadata tag: a struct cut short inside its declared size
        (MK, bytes.fromhex("00000000026302680100ffffffff00" + "0100030100ff")),
    ],
)
def test_malformed_values_are_refused(key: ConsumerGroupRecordKey, data: bytes) -> None:
    with pytest.raises(RecordFormatError):
        decode_value(key, data)


def test_strings_over_32767_bytes_are_refused_both_ways() -> None:
    long = "x" * 0x8000
    with pytest.raises(RecordFormatError):
        encode_key(ConsumerGroupMetadataKey(long))
    with pytest.raises(RecordFormatError):
        encode_value(ConsumerGroupRegularExpressionValue((long,), 0, 0))
    ok = encode_value(ConsumerGroupRegularExpressionValue(("x" * 0x7FFF,), 0, 0))
    assert decode_value(RK, ok).topics == ("x" * 0x7FFF,)
    # the same value one byte longer, as a forged length: Kafka refuses it on read too
    forged = b"\x00\x00\x02" + bytes([0x81, 0x80, 0x02]) + b"x" * 0x8000 + bytes(17)
    with pytest.raises(RecordFormatError):
        decode_value(RK, forged)


def test_out_of_range_fields_are_refused_on_write() -> None:
    for value in (
        ConsumerGroupMetadataValue(INT32_MAX + 1),
        ConsumerGroupMetadataValue(0, INT64_MAX + 1),
        ConsumerGroupCurrentMemberAssignmentValue(0, 0, 128, (), ()),
        ConsumerGroupTargetAssignmentMemberValue((TargetTopicPartitions(TOPIC_A, (INT32_MIN - 1,)),)),
        ConsumerGroupMemberMetadataValue(None, None, "\ud800", "h", (), None, 0, None),
    ):
        with pytest.raises(RecordFormatError):
            encode_value(value)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\x00\x00\x00\x03grp",  # record type 0: a classic offset commit key
        b"\x00\x02\x00\x03grp",  # record type 2: a classic group metadata key
        b"\x00\x09\x00\x03grp",  # record type 9: a share group's
        b"\x00\x03\xff\xff",  # null group
        b"\x00\x03\x00\x04grp",  # truncated group
        b"\x00\x03\x00\x03grp\x00",  # trailing byte
        b"\x00\x03\x00\x02\xc3\x28",  # invalid UTF-8
        b"\x00\x05\x00\x03grp",  # member key without a member id
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
    target = data.draw(st.sampled_from(["key", *KEY_FOR.values()]))
    try:
        if target == "key":
            decode_key(bytes(raw))
        else:
            assert not isinstance(target, str)
            decode_value(target, bytes(raw))
    except RecordFormatError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), st.sampled_from(list(KEY_FOR.values())))
def test_arbitrary_bytes_decode_or_raise_record_format_error(raw: bytes, key: ConsumerGroupRecordKey) -> None:
    for decode in (lambda: decode_key(raw), lambda: decode_value(key, b"\x00\x00" + raw)):
        try:
            decode()
        except RecordFormatError:
            pass


# ---- Kafka decodes what tidelog encodes (needs java and mvn) ------------------------------------


def _kafka_classpath() -> str:
    """Kafka 4.3.1's group coordinator and its dependencies, resolved by java/records/pom.xml."""
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
    """The command line that runs RecordVectors.java (Java 11+ compiles a single source file itself)."""
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("java and mvn are needed to run Kafka's record classes")
    return ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", _kafka_classpath(), str(JAVA_SOURCE)]


def _run_java(command: list[str], *args: str, stdin: str = "") -> list[str]:
    proc = subprocess.run([*command, *args], input=stdin, capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def _tp_json(tp: TopicPartitions) -> dict[str, Any]:
    epochs = None if tp.assignment_epochs is None else list(tp.assignment_epochs)
    return {"topicId": str(tp.topic_id), "partitions": list(tp.partitions), "assignmentEpochs": epochs}


def _kafka_json(key: ConsumerGroupRecordKey, value: ConsumerGroupRecordValue | None) -> dict[str, Any]:
    """What RecordVectors.java prints for a record Kafka decoded (less the re-serialized bytes)."""
    k: dict[str, Any] = {"groupId": key.group}
    if isinstance(
        key,
        ConsumerGroupMemberMetadataKey
        | ConsumerGroupTargetAssignmentMemberKey
        | ConsumerGroupCurrentMemberAssignmentKey,
    ):
        k["memberId"] = key.member_id
    elif isinstance(key, ConsumerGroupRegularExpressionKey):
        k["regularExpression"] = key.regular_expression
    v: dict[str, Any] | None
    if value is None:
        v = None
    elif isinstance(value, ConsumerGroupMetadataValue):
        v = {"epoch": value.epoch, "metadataHash": value.metadata_hash}
    elif isinstance(value, ConsumerGroupMemberMetadataValue):
        c = value.classic_member_metadata
        v = {
            "instanceId": value.instance_id,
            "rackId": value.rack_id,
            "clientId": value.client_id,
            "clientHost": value.client_host,
            "subscribedTopicNames": list(value.subscribed_topic_names),
            "subscribedTopicRegex": value.subscribed_topic_regex,
            "rebalanceTimeoutMs": value.rebalance_timeout_ms,
            "serverAssignor": value.server_assignor,
            "classicMemberMetadata": None
            if c is None
            else {
                "sessionTimeoutMs": c.session_timeout_ms,
                "supportedProtocols": [{"name": p.name, "metadata": p.metadata.hex()} for p in c.supported_protocols],
            },
        }
    elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
        v = {"assignmentEpoch": value.assignment_epoch, "assignmentTimestamp": value.assignment_timestamp}
    elif isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
        v = {
            "topicPartitions": [
                {"topicId": str(tp.topic_id), "partitions": list(tp.partitions)} for tp in value.topic_partitions
            ]
        }
    elif isinstance(value, ConsumerGroupCurrentMemberAssignmentValue):
        v = {
            "memberEpoch": value.member_epoch,
            "previousMemberEpoch": value.previous_member_epoch,
            "state": value.state,
            "assignedPartitions": [_tp_json(tp) for tp in value.assigned_partitions],
            "partitionsPendingRevocation": [_tp_json(tp) for tp in value.partitions_pending_revocation],
        }
    else:
        v = {"topics": list(value.topics), "version": value.version, "timestamp": value.timestamp}
    return {"type": key.record_type, "key": k, "value": v}


def _random_records(rng: random.Random, n: int) -> list[tuple[ConsumerGroupRecordKey, ConsumerGroupRecordValue]]:
    """Varied records: nulls, empties, non-ASCII and astral text, extremes, long lists."""
    alphabet = "abc-_.*^$ü日本\U0001f600"

    def text() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 3, 8, 140])))

    def opt() -> str | None:
        return None if rng.random() < 0.3 else text()

    def i32() -> int:
        return rng.choice([0, -1, 1, INT32_MIN, INT32_MAX, rng.randint(INT32_MIN, INT32_MAX)])

    def i64() -> int:
        return rng.choice([0, -1, 1, INT64_MIN, INT64_MAX, rng.randint(INT64_MIN, INT64_MAX)])

    def ints(most: int = 5) -> tuple[int, ...]:
        return tuple(i32() for _ in range(rng.choice([0, 1, 2, most])))

    def topic_id() -> uuid.UUID:
        return ZERO_UUID if rng.random() < 0.1 else uuid.UUID(int=rng.getrandbits(128))

    def tp() -> TopicPartitions:
        parts = ints(40)
        epochs = rng.choice([None, (), tuple(i32() for _ in parts), ints()])
        return TopicPartitions(topic_id(), parts, epochs)

    def classic_metadata() -> ClassicMemberMetadata | None:
        r = rng.random()
        if r < 0.4:
            return None
        if r < 0.5:
            return ClassicMemberMetadata(0)
        protocols = tuple(
            ClassicProtocol(text(), rng.randbytes(rng.choice([0, 4, 200]))) for _ in range(rng.randint(0, 3))
        )
        return ClassicMemberMetadata(i32(), protocols)

    out: list[tuple[ConsumerGroupRecordKey, ConsumerGroupRecordValue]] = []
    for i in range(n):
        group, member = text(), text()
        kind = i % 6
        if kind == 0:
            out.append((ConsumerGroupMetadataKey(group), ConsumerGroupMetadataValue(i32(), i64())))
        elif kind == 1:
            value = ConsumerGroupMemberMetadataValue(
                opt(),
                opt(),
                text(),
                text(),
                tuple(text() for _ in range(rng.choice([0, 1, 3, 130]))),
                opt(),
                i32(),
                opt(),
                classic_metadata(),
            )
            out.append((ConsumerGroupMemberMetadataKey(group, member), value))
        elif kind == 2:
            out.append(
                (
                    ConsumerGroupTargetAssignmentMetadataKey(group),
                    ConsumerGroupTargetAssignmentMetadataValue(i32(), i64()),
                )
            )
        elif kind == 3:
            tps = tuple(TargetTopicPartitions(topic_id(), ints(40)) for _ in range(rng.randint(0, 3)))
            out.append(
                (ConsumerGroupTargetAssignmentMemberKey(group, member), ConsumerGroupTargetAssignmentMemberValue(tps))
            )
        elif kind == 4:
            value = ConsumerGroupCurrentMemberAssignmentValue(
                i32(),
                i32(),
                rng.randint(-128, 127),
                tuple(tp() for _ in range(rng.randint(0, 3))),
                tuple(tp() for _ in range(rng.randint(0, 2))),
            )
            out.append((ConsumerGroupCurrentMemberAssignmentKey(group, member), value))
        else:
            topics = tuple(text() for _ in range(rng.choice([0, 1, 5])))
            out.append(
                (
                    ConsumerGroupRegularExpressionKey(group, text()),
                    ConsumerGroupRegularExpressionValue(topics, i64(), i64()),
                )
            )
    return out


@pytest.mark.interop
def test_kafka_still_prints_these_vectors(record_vectors: list[str]) -> None:
    printed = {}
    for line in _run_java(record_vectors, "vectors"):
        name, key_hex, value_hex = line.split(" ")
        printed[name] = (key_hex, None if value_hex == "-" else value_hex)
    assert printed == KAFKA_VECTORS


@pytest.mark.interop
def test_kafka_decodes_what_tidelog_encodes(record_vectors: list[str]) -> None:
    records: list[tuple[ConsumerGroupRecordKey, ConsumerGroupRecordValue | None]] = list(CASES.values())
    records += list(UNKNOWN_TAGS.values())
    records += _random_records(random.Random(848), 300)
    encoded = [(encode_key(k).hex(), None if v is None else encode_value(v).hex()) for k, v in records]
    lines = _run_java(record_vectors, "decode", stdin="".join(f"{k} {v or '-'}\n" for k, v in encoded))
    assert len(lines) == len(records)
    for (key, value), (key_hex, value_hex), line in zip(records, encoded, lines):
        got = json.loads(line)
        assert "error" not in got, (key, value, got)
        # Kafka read the same fields ...
        assert {n: got[n] for n in ("type", "key", "value")} == _kafka_json(key, value)
        # ... and writes them back as the very bytes tidelog wrote.
        assert (got["keyHex"], got["valueHex"]) == (key_hex, value_hex)
