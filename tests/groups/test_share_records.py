"""tidelog's share group record codec (`tidelog.groups.share_records`) against Apache Kafka 4.3.1.

The golden vectors below were printed by Kafka 4.3.1 itself: `java/records/ShareRecordVectors.java
group-vectors` builds each record with Kafka's generated classes and serializes it with
GroupCoordinatorRecordSerde. The one exception is type 9 (ShareGroupPartitionMetadata), which only
Kafka 4.0 wrote and 4.3.1 has no class for: its bytes are printed by 4.3.1's classes of the same
layout (checked once against kafka-group-coordinator-4.0.0's own). The fast tests check tidelog's
bytes against the vectors without a JVM; round trips, malformed input and forged lengths follow. The
interop tests run the Java program: it must still print these vectors, Kafka must decode every record
tidelog encodes (the tagged field set and unset, nulls, empty lists, random values) into the same
fields and re-serialize it into the same bytes, and it must refuse type 9 as an unknown record type
(which its loader skips).

To regenerate the vectors (java/records/pom.xml resolves Kafka 4.3.1 from Maven Central):

    mvn -B -q -f java/records/pom.xml dependency:build-classpath -Dmdep.outputFile=target/classpath.txt
    java -cp "$(cat java/records/target/classpath.txt)" java/records/ShareRecordVectors.java group-vectors
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
from tidelog.groups.share_records import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupPartitionMetadataKey,
    ShareGroupRecordKey,
    ShareGroupRecordValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
    TargetTopicPartitions,
    TopicInfo,
    TopicPartitionsInfo,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)

ROOT = Path(__file__).resolve().parents[2]
JAVA_DIR = ROOT / "java" / "records"
JAVA_SOURCE = JAVA_DIR / "ShareRecordVectors.java"

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# ---- Kafka 4.3.1's bytes ----------------------------------------------------------------------

# name -> (key hex, value hex or None for a tombstone), as `ShareRecordVectors.java group-vectors` printed them.
KAFKA_VECTORS: dict[str, tuple[str, str | None]] = {
    "partition_metadata": (
        "00090003677270",
        "0000020d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d076f726465727300000003010000",
    ),
    "partition_metadata_tombstone": (
        "00090003677270",
        None,
    ),
    "member": (
        "000a000367727000086d656d6265722d31",
        "00000009636c69656e742d310a2f31302e302e302e3103076f7264657273097061796d656e747300",
    ),
    "member_rack": (
        "000a000e6772c3bc7070652de697a5e69cac00046d2dc3bc",
        "0000077261636b2d6101010100",
    ),
    "member_empty_rack": (
        "000a00000000",
        "0000010263026802027400",
    ),
    "member_long": (
        "000a000367727000086d656d6265722d31",
        (
            "000083017272727272727272727272727272727272727272727272727272727272727272727272727272727272727272"
            "727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272727272"
            "7272727272727272727272727272727272727272727272727272727272727272727272727272c9016363636363636363"
            "636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363"
            "636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363"
            "636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363"
            "636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363636363"
            "026883010374300374310374320374330374340374350374360374370374380374390474313004743131047431320474"
            "313304743134047431350474313604743137047431380474313904743230047432310474323204743233047432340474"
            "323504743236047432370474323804743239047433300474333104743332047433330474333404743335047433360474"
            "333704743338047433390474343004743431047434320474343304743434047434350474343604743437047434380474"
            "343904743530047435310474353204743533047435340474353504743536047435370474353804743539047436300474"
            "363104743632047436330474363404743635047436360474363704743638047436390474373004743731047437320474"
            "373304743734047437350474373604743737047437380474373904743830047438310474383204743833047438340474"
            "383504743836047438370474383804743839047439300474393104743932047439330474393404743935047439360474"
            "393704743938047439390574313030057431303105743130320574313033057431303405743130350574313036057431"
            "303705743130380574313039057431313005743131310574313132057431313305743131340574313135057431313605"
            "743131370574313138057431313905743132300574313231057431323205743132330574313234057431323505743132"
            "3605743132370574313238057431323900"
        ),
    ),
    "member_tombstone": (
        "000a000367727000086d656d6265722d31",
        None,
    ),
    "metadata": (
        "000b0003677270",
        "000000000005000000000000000000",
    ),
    "metadata_hash": (
        "000b000e6772c3bc7070652de697a5e69cac",
        "00000000002a1234567890abcdef00",
    ),
    "metadata_extremes": (
        "000b0000",
        "000080000000800000000000000000",
    ),
    "metadata_tombstone": (
        "000b0003677270",
        None,
    ),
    "target_metadata": (
        "000c0003677270",
        "00000000000700",
    ),
    "target_metadata_timestamp": (
        "000c0003677270",
        "00000000000801000800000199c82cc000",
    ),
    "target_metadata_extremes": (
        "000c0003677270",
        "00007fffffff0100088000000000000000",
    ),
    "target_metadata_tombstone": (
        "000c0003677270",
        None,
    ),
    "target_member": (
        "000d000367727000086d656d6265722d31",
        (
            "0000040d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d0400000000000000020000000400f1e2d3c4b5a649788695a4b3c2d1e0"
            "ff010000000000000000000000000000000000037fffffffffffffff0000"
        ),
    ),
    "target_member_empty": (
        "000d000367727000086d656d6265722d31",
        "00000100",
    ),
    "target_member_tombstone": (
        "000d000367727000086d656d6265722d31",
        None,
    ),
    "current_assignment": (
        "000e000367727000086d656d6265722d31",
        (
            "00000000000a0000000900030d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d03000000000000000100f1e2d3c4b5a649788695"
            "a4b3c2d1e0ff02000000070000"
        ),
    ),
    "current_assignment_none": (
        "000e000367727000086d656d6265722d31",
        "000000000000000000007f0100",
    ),
    "current_assignment_long": (
        "000e000367727000086d656d6265722d31",
        (
            "00007fffffff8000000080030d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d4700000000000000010000000200000003000000"
            "0400000005000000060000000700000008000000090000000a0000000b0000000c0000000d0000000e0000000f000000"
            "100000001100000012000000130000001400000015000000160000001700000018000000190000001a0000001b000000"
            "1c0000001d0000001e0000001f0000002000000021000000220000002300000024000000250000002600000027000000"
            "28000000290000002a0000002b0000002c0000002d0000002e0000002f00000030000000310000003200000033000000"
            "3400000035000000360000003700000038000000390000003a0000003b0000003c0000003d0000003e0000003f000000"
            "4000000041000000420000004300000044000000450000000000000000000000000000000000010000"
        ),
    ),
    "current_assignment_tombstone": (
        "000e000367727000086d656d6265722d31",
        None,
    ),
    "state_partition_metadata": (
        "000f0003677270",
        (
            "000002f1e2d3c4b5a649788695a4b3c2d1e0ff097061796d656e747303000000030000000400030d5a3b2c4e6f4a1b9c"
            "8d7e6f5a4b3c2d076f726465727304000000000000000100000002000000000000000000000000000000000001010002"
            "0000000000000000000000000000000108676f6e652dc3bc0000"
        ),
    ),
    "state_partition_metadata_empty": (
        "000f0003677270",
        "000001010100",
    ),
    "state_partition_metadata_long": (
        "000f0003677270",
        (
            "000001020d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d97016f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f"
            "6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f"
            "6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f"
            "6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f6f4700000000000000010000000200000003000000"
            "0400000005000000060000000700000008000000090000000a0000000b0000000c0000000d0000000e0000000f000000"
            "100000001100000012000000130000001400000015000000160000001700000018000000190000001a0000001b000000"
            "1c0000001d0000001e0000001f0000002000000021000000220000002300000024000000250000002600000027000000"
            "28000000290000002a0000002b0000002c0000002d0000002e0000002f00000030000000310000003200000033000000"
            "3400000035000000360000003700000038000000390000003a0000003b0000003c0000003d0000003e0000003f000000"
            "4000000041000000420000004300000044000000450003f1e2d3c4b5a649788695a4b3c2d1e0ff800178787878787878"
            "787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878"
            "787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878787878"
            "787878787878787878787878787878787878787878787878000d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d81017979797979"
            "797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979"
            "797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979797979"
            "7979797979797979797979797979797979797979797979797979790000"
        ),
    ),
    "state_partition_metadata_tombstone": (
        "000f0003677270",
        None,
    ),
    "unknown_tags_metadata": (
        "000b0003677270",
        "0000000000060000000000000063010303010203",
    ),
    "unknown_tags_target_metadata": (
        "000c0003677270",
        "0000000000090200080000000000000001c80100",
    ),
    "unknown_tags_member": (
        "000a000367727000086d656d6265722d31",
        "00000002630268020274020001aa820102bbcc",
    ),
    "unknown_tags_target_member": (
        "000d000367727000086d656d6265722d31",
        "0000020d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d020000000001000305050501070107",
    ),
    "unknown_tags_current_assignment": (
        "000e000367727000086d656d6265722d31",
        "000000000004000000030002f1e2d3c4b5a649788695a4b3c2d1e0ff020000000501010001000101",
    ),
    "unknown_tags_state_partition_metadata": (
        "000f0003677270",
        (
            "0000020d5a3b2c4e6f4a1b9c8d7e6f5a4b3c2d0261020000000101020202020102f1e2d3c4b5a649788695a4b3c2d1e0"
            "ff0262010001000109020909"
        ),
    ),
}

TOPIC_A = uuid.UUID("0d5a3b2c-4e6f-4a1b-9c8d-7e6f5a4b3c2d")
TOPIC_B = uuid.UUID("f1e2d3c4-b5a6-4978-8695-a4b3c2d1e0ff")
TOPIC_ONE = uuid.UUID(int=1)
ZERO_UUID = uuid.UUID(int=0)

PK = ShareGroupPartitionMetadataKey("grp")
MK = ShareGroupMemberMetadataKey("grp", "member-1")
GK = ShareGroupMetadataKey("grp")
TK = ShareGroupTargetAssignmentMetadataKey("grp")
TMK = ShareGroupTargetAssignmentMemberKey("grp", "member-1")
CK = ShareGroupCurrentMemberAssignmentKey("grp", "member-1")
SK = ShareGroupStatePartitionMetadataKey("grp")

# The same records as tidelog values (ShareRecordVectors.java builds them field by field alike).
CASES: dict[str, tuple[ShareGroupRecordKey, ShareGroupRecordValue | None]] = {
    "partition_metadata_tombstone": (PK, None),
    "member": (MK, ShareGroupMemberMetadataValue(None, "client-1", "/10.0.0.1", ("orders", "payments"))),
    "member_rack": (
        ShareGroupMemberMetadataKey("grüppe-日本", "m-ü"),
        ShareGroupMemberMetadataValue("rack-a", "", "", ()),
    ),
    "member_empty_rack": (ShareGroupMemberMetadataKey("", ""), ShareGroupMemberMetadataValue("", "c", "h", ("t",))),
    "member_long": (
        MK,
        ShareGroupMemberMetadataValue("r" * 130, "c" * 200, "h", tuple(f"t{i}" for i in range(130))),
    ),
    "member_tombstone": (MK, None),
    "metadata": (GK, ShareGroupMetadataValue(5)),
    "metadata_hash": (ShareGroupMetadataKey("grüppe-日本"), ShareGroupMetadataValue(42, 0x1234567890ABCDEF)),
    "metadata_extremes": (ShareGroupMetadataKey(""), ShareGroupMetadataValue(INT32_MIN, INT64_MIN)),
    "metadata_tombstone": (GK, None),
    "target_metadata": (TK, ShareGroupTargetAssignmentMetadataValue(7)),
    "target_metadata_timestamp": (TK, ShareGroupTargetAssignmentMetadataValue(8, 1760000000000)),
    "target_metadata_extremes": (TK, ShareGroupTargetAssignmentMetadataValue(INT32_MAX, INT64_MIN)),
    "target_metadata_tombstone": (TK, None),
    "target_member": (
        TMK,
        ShareGroupTargetAssignmentMemberValue(
            (
                TargetTopicPartitions(TOPIC_A, (0, 2, 4)),
                TargetTopicPartitions(TOPIC_B, ()),
                TargetTopicPartitions(ZERO_UUID, (INT32_MAX, -1)),
            )
        ),
    ),
    "target_member_empty": (TMK, ShareGroupTargetAssignmentMemberValue(())),
    "target_member_tombstone": (TMK, None),
    "current_assignment": (
        CK,
        ShareGroupCurrentMemberAssignmentValue(
            10, 9, 0, (TargetTopicPartitions(TOPIC_A, (0, 1)), TargetTopicPartitions(TOPIC_B, (7,)))
        ),
    ),
    "current_assignment_none": (CK, ShareGroupCurrentMemberAssignmentValue(0, 0, 127, ())),
    "current_assignment_long": (
        CK,
        ShareGroupCurrentMemberAssignmentValue(
            INT32_MAX,
            INT32_MIN,
            -128,
            (TargetTopicPartitions(TOPIC_A, tuple(range(70))), TargetTopicPartitions(ZERO_UUID, ())),
        ),
    ),
    "current_assignment_tombstone": (CK, None),
    "state_partition_metadata": (
        SK,
        ShareGroupStatePartitionMetadataValue(
            (TopicPartitionsInfo(TOPIC_B, "payments", (3, 4)),),
            (TopicPartitionsInfo(TOPIC_A, "orders", (0, 1, 2)), TopicPartitionsInfo(ZERO_UUID, "", ())),
            (TopicInfo(TOPIC_ONE, "gone-ü"),),
        ),
    ),
    "state_partition_metadata_empty": (SK, ShareGroupStatePartitionMetadataValue((), (), ())),
    "state_partition_metadata_long": (
        SK,
        ShareGroupStatePartitionMetadataValue(
            (),
            (TopicPartitionsInfo(TOPIC_A, "o" * 150, tuple(range(70))),),
            (TopicInfo(TOPIC_B, "x" * 127), TopicInfo(TOPIC_A, "y" * 128)),
        ),
    ),
    "state_partition_metadata_tombstone": (SK, None),
}

# Records with tagged fields unknown to Kafka 4.3.1 (as a later Kafka might write): tidelog skips
# them, at the top level and inside nested structs, and reads the rest.
UNKNOWN_TAGS: dict[str, tuple[ShareGroupRecordKey, ShareGroupRecordValue]] = {
    "unknown_tags_metadata": (GK, ShareGroupMetadataValue(6, 99)),
    "unknown_tags_target_metadata": (TK, ShareGroupTargetAssignmentMetadataValue(9, 1)),
    "unknown_tags_member": (MK, ShareGroupMemberMetadataValue(None, "c", "h", ("t",))),
    "unknown_tags_target_member": (
        TMK,
        ShareGroupTargetAssignmentMemberValue((TargetTopicPartitions(TOPIC_A, (0,)),)),
    ),
    "unknown_tags_current_assignment": (
        CK,
        ShareGroupCurrentMemberAssignmentValue(4, 3, 0, (TargetTopicPartitions(TOPIC_B, (5,)),)),
    ),
    "unknown_tags_state_partition_metadata": (
        SK,
        ShareGroupStatePartitionMetadataValue(
            (TopicPartitionsInfo(TOPIC_A, "a", (1,)),), (), (TopicInfo(TOPIC_B, "b"),)
        ),
    ),
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
    assert key == PK
    with pytest.raises(RecordFormatError):
        decode_value(key, bytes.fromhex(value_hex))


def test_kafkas_defaults() -> None:
    """metadata_hash is an ordinary field, written even when 0; assignment_timestamp is tagged and
    left out when 0; a null rack id and Kafka's default "" are distinct values."""
    assert encode_value(ShareGroupMetadataValue(5)) == bytes.fromhex("0000" + "00000005" + "00" * 8 + "00")
    assert encode_value(ShareGroupTargetAssignmentMetadataValue(7)) == bytes.fromhex("0000" + "00000007" + "00")
    null_rack = encode_value(ShareGroupMemberMetadataValue(None, "c", "h", ()))
    empty_rack = encode_value(ShareGroupMemberMetadataValue("", "c", "h", ()))
    assert (null_rack[2], empty_rack[2]) == (0, 1)
    assert decode_value(MK, null_rack).rack_id is None
    assert decode_value(MK, empty_rack).rack_id == ""


# Kafka 4.0's TopicPartitionsInfo (A, "orders", [0]) and TopicInfo (B, "b"), each with its empty tags.
_V40_INITIALIZED = TOPIC_A.hex + "07" + b"orders".hex() + "02" + "00000000" + "00"
_V40_DELETING = TOPIC_B.hex + "02" + "62" + "00"


@pytest.mark.parametrize(
    ("key", "data"),
    [
        # Kafka 4.0's ShareGroupMetadataValue: the epoch alone, no metadata hash
        (GK, bytes.fromhex("0000" + "00000005" + "00")),
        # Kafka 4.0's ShareGroupStatePartitionMetadataValue: initialized and deleting topics only
        (SK, bytes.fromhex("0000" + "01" + "01" + "00")),
        (SK, bytes.fromhex("0000" + "02" + _V40_INITIALIZED + "01" + "00")),
        (SK, bytes.fromhex("0000" + "01" + "02" + _V40_DELETING + "00")),
        (SK, bytes.fromhex("0000" + "02" + _V40_INITIALIZED + "02" + _V40_DELETING + "00")),
    ],
)
def test_kafka_40_layouts_are_refused(key: ShareGroupRecordKey, data: bytes) -> None:
    """Kafka 4.1 changed types 11 and 15 in place (value version 0 still): a record Kafka 4.0 wrote
    is refused, as Kafka 4.1+ refuses it."""
    with pytest.raises(RecordFormatError):
        decode_value(key, data)


# ---- round trips -------------------------------------------------------------------------------

texts = st.text(max_size=12)
int8s = st.integers(-128, 127)
int32s = st.integers(INT32_MIN, INT32_MAX)
int64s = st.integers(INT64_MIN, INT64_MAX)
topic_ids = st.uuids() | st.just(ZERO_UUID)
int32_lists = st.lists(int32s, max_size=6).map(tuple)

keys = st.one_of(
    st.builds(ShareGroupPartitionMetadataKey, texts),
    st.builds(ShareGroupMemberMetadataKey, texts, texts),
    st.builds(ShareGroupMetadataKey, texts),
    st.builds(ShareGroupTargetAssignmentMetadataKey, texts),
    st.builds(ShareGroupTargetAssignmentMemberKey, texts, texts),
    st.builds(ShareGroupCurrentMemberAssignmentKey, texts, texts),
    st.builds(ShareGroupStatePartitionMetadataKey, texts),
)
topic_partitions = st.lists(st.builds(TargetTopicPartitions, topic_ids, int32_lists), max_size=3).map(tuple)
topic_partitions_infos = st.lists(st.builds(TopicPartitionsInfo, topic_ids, texts, int32_lists), max_size=3).map(tuple)
values = st.one_of(
    st.builds(ShareGroupMemberMetadataValue, st.none() | texts, texts, texts, st.lists(texts, max_size=4).map(tuple)),
    st.builds(ShareGroupMetadataValue, int32s, int64s),
    st.builds(ShareGroupTargetAssignmentMetadataValue, int32s, int64s),
    st.builds(ShareGroupTargetAssignmentMemberValue, topic_partitions),
    st.builds(ShareGroupCurrentMemberAssignmentValue, int32s, int32s, int8s, topic_partitions),
    st.builds(
        ShareGroupStatePartitionMetadataValue,
        topic_partitions_infos,
        topic_partitions_infos,
        st.lists(st.builds(TopicInfo, topic_ids, texts), max_size=3).map(tuple),
    ),
)
KEY_FOR = {
    ShareGroupMemberMetadataValue: MK,
    ShareGroupMetadataValue: GK,
    ShareGroupTargetAssignmentMetadataValue: TK,
    ShareGroupTargetAssignmentMemberValue: TMK,
    ShareGroupCurrentMemberAssignmentValue: CK,
    ShareGroupStatePartitionMetadataValue: SK,
}


@settings(max_examples=200, deadline=None)
@given(keys)
def test_key_round_trip(key: ShareGroupRecordKey) -> None:
    data = encode_key(key)
    assert decode_key(data) == key
    assert int.from_bytes(data[:2], "big") == key.record_type


@settings(max_examples=300, deadline=None)
@given(values)
def test_value_round_trip(value: ShareGroupRecordValue) -> None:
    data = encode_value(value)
    assert decode_value(KEY_FOR[type(value)], data) == value
    assert data[:2] == b"\x00\x00"


@settings(max_examples=100, deadline=None)
@given(values, st.data())
def test_truncated_and_extended_values_are_refused(value: ShareGroupRecordValue, data: st.DataObject) -> None:
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


@pytest.mark.parametrize(
    ("key", "data"),
    [
        # unknown value version, a version with nothing after it
        (GK, bytes.fromhex("0001" + "00000005" + "0000000000000000" + "00")),
        (GK, b"\xff\xff"),
        # trailing bytes after the value
        (GK, bytes.fromhex("0000" + "00000005" + "0000000000000000" + "0000")),
        # a tagged AssignmentTimestamp whose size is not 8 (7 and 9)
        (TK, bytes.fromhex("0000" + "00000007" + "010007" + "1234567890abcd")),
        (TK, bytes.fromhex("0000" + "00000007" + "010009" + "1234567890abcdef00")),
        # tags out of order / repeated
        (TK, bytes.fromhex("0000" + "00000007" + "0203000100")),
        (TK, bytes.fromhex("0000" + "00000007" + "0201000100")),
        # a forged tag count, array count and string length far beyond the bytes there
        (GK, bytes.fromhex("0000" + "00000005" + "0000000000000000" + "ffffffff0f")),
        (MK, bytes.fromhex("0000" + "00" + "0263" + "0268" + "ffffffff0f")),
        (MK, bytes.fromhex("0000" + "ffffffff0f")),
        (TMK, bytes.fromhex("0000ffffffff0f")),
        (CK, bytes.fromhex("0000" + "00000001" + "00000000" + "00" + "ffffffff0f")),
        (CK, bytes.fromhex("0000" + "00000001" + "00000000" + "00" + "02" + TOPIC_A.hex + "ffffffff0f")),
        (SK, bytes.fromhex("0000ffffffff0f")),
        (SK, bytes.fromhex("0000" + "01" + "01" + "02" + TOPIC_A.hex + "ffffffff0f")),
        # a varint longer than 5 bytes
        (TMK, bytes.fromhex("0000ffffffffff0f")),
        # null where Kafka forbids it: client id, a subscribed topic name, the topic list, a topic name
        (MK, bytes.fromhex("0000" + "00" + "00" + "0268" + "01" + "00")),
        (MK, bytes.fromhex("0000" + "00" + "0263" + "0268" + "02" + "00" + "00")),
        (TMK, bytes.fromhex("0000" + "00" + "00")),
        (CK, bytes.fromhex("0000" + "00000001" + "00000000" + "00" + "00" + "00")),
        (SK, bytes.fromhex("0000" + "02" + TOPIC_A.hex + "00" + "01" + "00" + "01" + "01" + "00")),
        (SK, bytes.fromhex("0000" + "01" + "01" + "02" + TOPIC_A.hex + "00" + "00" + "00")),
        # invalid UTF-8 in the client id and in a topic name
        (MK, bytes.fromhex("0000" + "00" + "03c328" + "0268" + "01" + "00")),
        (SK, bytes.fromhex("0000" + "01" + "01" + "02" + TOPIC_A.hex + "02ff" + "00" + "00")),
    ],
)
def test_malformed_values_are_refused(key: ShareGroupRecordKey, data: bytes) -> None:
    with pytest.raises(RecordFormatError):
        decode_value(key, data)


def test_strings_over_32767_bytes_are_refused_both_ways() -> None:
    long = "x" * 0x8000
    with pytest.raises(RecordFormatError):
        encode_key(ShareGroupMetadataKey(long))
    with pytest.raises(RecordFormatError):
        encode_key(ShareGroupMemberMetadataKey("grp", long))
    with pytest.raises(RecordFormatError):
        encode_value(ShareGroupMemberMetadataValue(None, long, "h", ()))
    with pytest.raises(RecordFormatError):
        encode_value(ShareGroupStatePartitionMetadataValue((), (), (TopicInfo(TOPIC_A, long),)))
    ok = encode_value(ShareGroupMemberMetadataValue("x" * 0x7FFF, "c", "h", ()))
    assert decode_value(MK, ok).rack_id == "x" * 0x7FFF
    # the same value one byte longer, as a forged length: Kafka refuses it on read too
    forged = b"\x00\x00" + bytes([0x81, 0x80, 0x02]) + b"x" * 0x8000 + bytes.fromhex("0263026801" + "00")
    with pytest.raises(RecordFormatError):
        decode_value(MK, forged)


def test_out_of_range_fields_are_refused_on_write() -> None:
    for value in (
        ShareGroupMetadataValue(INT32_MAX + 1),
        ShareGroupMetadataValue(0, INT64_MAX + 1),
        ShareGroupTargetAssignmentMetadataValue(0, INT64_MIN - 1),
        ShareGroupCurrentMemberAssignmentValue(0, 0, 128, ()),
        ShareGroupTargetAssignmentMemberValue((TargetTopicPartitions(TOPIC_A, (INT32_MIN - 1,)),)),
        ShareGroupStatePartitionMetadataValue((TopicPartitionsInfo(TOPIC_A, "t", (INT32_MAX + 1,)),), (), ()),
        ShareGroupMemberMetadataValue(None, "\ud800", "h", ()),
    ):
        with pytest.raises(RecordFormatError):
            encode_value(value)
    with pytest.raises(RecordFormatError):
        encode_key(ShareGroupMemberMetadataKey("grp", "\udfff"))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\x00\x00\x00\x03grp",  # record type 0: a classic offset commit key
        b"\x00\x03\x00\x03grp",  # record type 3: a consumer group's
        b"\x00\x08\x00\x03grp\x00\x01m",  # record type 8: a consumer group's
        b"\x00\x10\x00\x03grp\x00\x01r",  # record type 16: a consumer group's
        b"\x00\x11\x00\x03grp",  # record type 17: a streams group's
        b"\x00\x0b\xff\xff",  # null group
        b"\x00\x0b\x00\x04grp",  # truncated group
        b"\x00\x0b\x00\x03grp\x00",  # trailing byte
        b"\x00\x0b\x00\x02\xc3\x28",  # invalid UTF-8
        b"\x00\x0a\x00\x03grp",  # member key without a member id
        b"\x00\x0e\x00\x03grp\xff\xff",  # null member id
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
    target = data.draw(st.sampled_from(["key", PK, *KEY_FOR.values()]))
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
def test_arbitrary_bytes_decode_or_raise_record_format_error(raw: bytes, key: ShareGroupRecordKey) -> None:
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


def _tps_json(tps: tuple[TargetTopicPartitions, ...]) -> list[dict[str, Any]]:
    return [{"topicId": str(tp.topic_id), "partitions": list(tp.partitions)} for tp in tps]


def _infos_json(infos: tuple[TopicPartitionsInfo, ...]) -> list[dict[str, Any]]:
    return [{"topicId": str(t.topic_id), "topicName": t.topic_name, "partitions": list(t.partitions)} for t in infos]


def _kafka_json(key: ShareGroupRecordKey, value: ShareGroupRecordValue | None) -> dict[str, Any]:
    """What ShareRecordVectors.java prints for a record Kafka decoded (less the re-serialized bytes)."""
    k: dict[str, Any] = {"groupId": key.group}
    if isinstance(
        key, ShareGroupMemberMetadataKey | ShareGroupTargetAssignmentMemberKey | ShareGroupCurrentMemberAssignmentKey
    ):
        k["memberId"] = key.member_id
    v: dict[str, Any] | None
    if value is None:
        v = None
    elif isinstance(value, ShareGroupMemberMetadataValue):
        v = {
            "rackId": value.rack_id,
            "clientId": value.client_id,
            "clientHost": value.client_host,
            "subscribedTopicNames": list(value.subscribed_topic_names),
        }
    elif isinstance(value, ShareGroupMetadataValue):
        v = {"epoch": value.epoch, "metadataHash": value.metadata_hash}
    elif isinstance(value, ShareGroupTargetAssignmentMetadataValue):
        v = {"assignmentEpoch": value.assignment_epoch, "assignmentTimestamp": value.assignment_timestamp}
    elif isinstance(value, ShareGroupTargetAssignmentMemberValue):
        v = {"topicPartitions": _tps_json(value.topic_partitions)}
    elif isinstance(value, ShareGroupCurrentMemberAssignmentValue):
        v = {
            "memberEpoch": value.member_epoch,
            "previousMemberEpoch": value.previous_member_epoch,
            "state": value.state,
            "assignedPartitions": _tps_json(value.assigned_partitions),
        }
    else:
        v = {
            "initializingTopics": _infos_json(value.initializing_topics),
            "initializedTopics": _infos_json(value.initialized_topics),
            "deletingTopics": [{"topicId": str(t.topic_id), "topicName": t.topic_name} for t in value.deleting_topics],
        }
    return {"type": key.record_type, "key": k, "value": v}


def _random_records(rng: random.Random, n: int) -> list[tuple[ShareGroupRecordKey, ShareGroupRecordValue]]:
    """Varied records: nulls, empties, non-ASCII and astral text, extremes, long lists."""
    alphabet = "abc-_.*^$ü日本\U0001f600"

    def text() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 3, 8, 140])))

    def i32() -> int:
        return rng.choice([0, -1, 1, INT32_MIN, INT32_MAX, rng.randint(INT32_MIN, INT32_MAX)])

    def i64() -> int:
        return rng.choice([0, -1, 1, INT64_MIN, INT64_MAX, rng.randint(INT64_MIN, INT64_MAX)])

    def ints(most: int = 5) -> tuple[int, ...]:
        return tuple(i32() for _ in range(rng.choice([0, 1, 2, most])))

    def topic_id() -> uuid.UUID:
        return ZERO_UUID if rng.random() < 0.1 else uuid.UUID(int=rng.getrandbits(128))

    def tps() -> tuple[TargetTopicPartitions, ...]:
        return tuple(TargetTopicPartitions(topic_id(), ints(70)) for _ in range(rng.randint(0, 3)))

    def infos() -> tuple[TopicPartitionsInfo, ...]:
        return tuple(TopicPartitionsInfo(topic_id(), text(), ints(70)) for _ in range(rng.randint(0, 3)))

    out: list[tuple[ShareGroupRecordKey, ShareGroupRecordValue]] = []
    for i in range(n):
        group, member = text(), text()
        kind = i % 6
        if kind == 0:
            value = ShareGroupMemberMetadataValue(
                None if rng.random() < 0.3 else text(),
                text(),
                text(),
                tuple(text() for _ in range(rng.choice([0, 1, 3, 130]))),
            )
            out.append((ShareGroupMemberMetadataKey(group, member), value))
        elif kind == 1:
            out.append((ShareGroupMetadataKey(group), ShareGroupMetadataValue(i32(), i64())))
        elif kind == 2:
            out.append(
                (ShareGroupTargetAssignmentMetadataKey(group), ShareGroupTargetAssignmentMetadataValue(i32(), i64()))
            )
        elif kind == 3:
            out.append(
                (ShareGroupTargetAssignmentMemberKey(group, member), ShareGroupTargetAssignmentMemberValue(tps()))
            )
        elif kind == 4:
            value = ShareGroupCurrentMemberAssignmentValue(i32(), i32(), rng.randint(-128, 127), tps())
            out.append((ShareGroupCurrentMemberAssignmentKey(group, member), value))
        else:
            deleting = tuple(TopicInfo(topic_id(), text()) for _ in range(rng.randint(0, 3)))
            value = ShareGroupStatePartitionMetadataValue(infos(), infos(), deleting)
            out.append((ShareGroupStatePartitionMetadataKey(group), value))
    return out


@pytest.mark.interop
def test_kafka_still_prints_these_vectors(record_vectors: list[str]) -> None:
    printed = {}
    for line in _run_java(record_vectors, "group-vectors"):
        name, key_hex, value_hex = line.split(" ")
        printed[name] = (key_hex, None if value_hex == "-" else value_hex)
    assert printed == KAFKA_VECTORS


@pytest.mark.interop
def test_kafka_decodes_what_tidelog_encodes(record_vectors: list[str]) -> None:
    records: list[tuple[ShareGroupRecordKey, ShareGroupRecordValue | None]] = [
        (k, v) for k, v in CASES.values() if not isinstance(k, ShareGroupPartitionMetadataKey)
    ]
    records += list(UNKNOWN_TAGS.values())
    records += _random_records(random.Random(932), 300)
    encoded = [(encode_key(k).hex(), None if v is None else encode_value(v).hex()) for k, v in records]
    lines = _run_java(record_vectors, "group-decode", stdin="".join(f"{k} {v or '-'}\n" for k, v in encoded))
    assert len(lines) == len(records)
    for (key, value), (key_hex, value_hex), line in zip(records, encoded, lines):
        got = json.loads(line)
        assert "error" not in got, (key, value, got)
        # Kafka read the same fields ...
        assert {n: got[n] for n in ("type", "key", "value")} == _kafka_json(key, value)
        # ... and writes them back as the very bytes tidelog wrote.
        assert (got["keyHex"], got["valueHex"]) == (key_hex, value_hex)


@pytest.mark.interop
def test_kafka_skips_partition_metadata_as_an_unknown_record_type(record_vectors: list[str]) -> None:
    """Kafka 4.3.1's serde refuses type 9 as an unknown record type, the one error its loader skips
    (a record of any other malformed kind fails the load)."""
    key_hex = encode_key(PK).hex()
    value_hex = KAFKA_VECTORS["partition_metadata"][1]
    lines = _run_java(record_vectors, "group-decode", stdin=f"{key_hex} {value_hex}\n{key_hex} -\n")
    assert len(lines) == 2
    for line in lines:
        assert json.loads(line)["error"].startswith("UnknownRecordTypeException"), line
