"""The `_schemas` record format (Confluent's) and the state it makes (no sockets)."""

from __future__ import annotations

import json

from tidelog.log import schema_records as R
from tidelog.log.schema_state import RegistryState


def schema(subject: str, version: int, sid: int, deleted: bool = False, **kw: object) -> tuple[bytes, bytes]:
    value = R.SchemaValue(subject, version, sid, '"string"', deleted=deleted, **kw)  # type: ignore[arg-type]
    return R.encode_key(R.SchemaKey(subject, version)), R.encode_schema(value)


def test_keys_are_confluents():
    assert R.encode_key(R.SchemaKey("s", 3)) == b'{"keytype":"SCHEMA","subject":"s","version":3,"magic":1}'
    assert R.encode_key(R.ConfigKey(None)) == b'{"keytype":"CONFIG","subject":null,"magic":0}'
    assert R.encode_key(R.ModeKey("s")) == b'{"keytype":"MODE","subject":"s","magic":0}'
    assert R.decode_key(b'{"keytype":"NOOP","magic":0}') == R.OtherKey("NOOP")
    assert R.decode_key(b"not json") is None


def test_values_round_trip_and_avro_has_no_schema_type():
    ref = R.Reference("x.A", "a", 1)
    value = R.SchemaValue("s", 1, 9, "{}", "JSON", (ref,))
    assert R.decode_schema(R.encode_schema(value)) == value
    avro = json.loads(R.encode_schema(R.SchemaValue("s", 1, 9, '"int"')))
    assert avro == {"subject": "s", "version": 1, "id": 9, "schema": '"int"', "deleted": False}


def test_later_records_win_and_tombstones_remove():
    st = RegistryState()
    for k, v in (schema("s", 1, 1), schema("s", 2, 2), schema("t", 1, 1)):
        st.apply(k, v)
    assert [v.version for v in st.versions("s")] == [1, 2] and st.max_id == 2
    st.apply(*schema("s", 1, 1, deleted=True))
    assert [v.version for v in st.versions("s")] == [2]
    assert [v.version for v in st.versions("s", deleted=True)] == [1, 2]
    st.apply(R.encode_key(R.SchemaKey("s", 1)), None)
    assert [v.version for v in st.versions("s", deleted=True)] == [2]
    assert 1 in st.ids  # still named by t's version 1
    st.apply(R.encode_key(R.SchemaKey("t", 1)), None)
    assert 1 not in st.ids and st.subject_names() == ["s"]


def test_config_mode_and_delete_subject():
    st = RegistryState()
    st.apply(R.encode_key(R.ConfigKey(None)), R.encode_config("FULL"))
    st.apply(R.encode_key(R.ConfigKey("s")), R.encode_config("NONE"))
    assert st.compatibility("s") == "NONE" and st.compatibility("other") == "FULL"
    st.apply(R.encode_key(R.ConfigKey("s")), None)
    assert st.compatibility("s") == "FULL"
    st.apply(R.encode_key(R.ModeKey(None)), R.encode_mode("READONLY"))
    assert st.mode("s") == "READONLY"
    st.apply(*schema("s", 1, 1))
    st.apply(*schema("s", 2, 2))
    st.apply(R.encode_key(R.DeleteSubjectKey("s")), b'{"subject":"s","version":1}')
    assert [v.version for v in st.versions("s")] == [2]


def test_unreadable_records_are_skipped():
    st = RegistryState()
    assert not st.apply(b"garbage", b"x")
    assert not st.apply(R.encode_key(R.SchemaKey("s", 1)), b'{"subject": "s"}')
    assert st.apply(b'{"keytype":"NOOP","magic":0}', None)
    assert st.subjects == {}
