"""Generate `wire/responses.py`: one `TypedDict` per control-plane response, from kio's schemas.

A handler answers with plain data written once for every version it serves, and `control.build`
turns it into the class of the version asked for (see `control`). This module types that plain
data: for each API, the union of the fields of *every* version of its response (kio's classes and
the old versions `schemas` derives), nested messages as nested `TypedDict`s. So mypy checks each
handler's answer against the protocol: a field name no version has, or a value of the wrong kind,
is an error before any test runs. Field names, nesting and which versions have a field are protocol
facts read from kio, never typed by hand.

A field is `Required` when every version of the message has it and kio gives it no default: a
handler cannot leave it out. Every other field may be left out (`build` fills its default, or
drops it for the versions that lack it).

Run `python -m tidelog.wire.response_types_gen > src/tidelog/wire/responses.py` after a kio
upgrade or a new API; `tests/wire/test_response_types.py` fails while the file is stale.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable
from types import NoneType, UnionType

from kio.index import KioIndexError, load_response_schema

from .apis import ApiKey
from .schemas import DERIVED, response_schema

# kio's kafka_type of a field -> the Python types `control.build` accepts for it
_SCALAR = {
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "int",
    "uint16": "int",
    "uint32": "int",
    "uint64": "int",
    "float64": "float",
    "bool": "bool",
    "string": "str",
    "bytes": "bytes",
    "records": "bytes",
    "uuid": "uuid.UUID | bytes | str",
    "error_code": "ErrorCode | int",
    "timedelta_i32": "datetime.timedelta | int",
    "timedelta_i64": "datetime.timedelta | int",
    "datetime_i64": "datetime.datetime | int",
}


@dataclasses.dataclass
class _Field:
    name: str
    scalar: str | None  # the Python type of a scalar, None for a nested message
    nested: str | None  # the nested message's path key
    array: bool
    nullable: bool
    versions: set[int]
    has_default: bool


@dataclasses.dataclass
class _Message:
    key: str  # a dotted path from the API's top message: "MetadataResponse.topics.partitions"
    kio_name: str
    fields: dict[str, _Field]
    versions: set[int]


def _versions(api_key: int) -> list[int]:
    out = []
    for v in range(0, 64):
        try:
            load_response_schema(api_key, v)
        except KioIndexError:
            if (api_key, v, False) not in DERIVED:
                continue
        out.append(v)
    return out


def _unwrap(tp: object) -> tuple[object, bool, bool]:
    """(inner type, nullable, array) of a kio field type."""
    nullable = False
    if typing.get_origin(tp) in (UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not NoneType]
        nullable = True
        tp = args[0]
    if typing.get_origin(tp) is tuple:
        return typing.get_args(tp)[0], nullable, True
    return tp, nullable, False


def _walk(cls: type, key: str, version: int, messages: dict[str, _Message]) -> None:
    msg = messages.setdefault(key, _Message(key, cls.__name__, {}, set()))
    msg.versions.add(version)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        inner, nullable, array = _unwrap(hints[f.name])
        is_entity = isinstance(inner, type) and dataclasses.is_dataclass(inner)
        kafka_type = f.metadata.get("kafka_type")
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        entry = msg.fields.get(f.name)
        if entry is None:
            entry = msg.fields[f.name] = _Field(
                f.name,
                None if is_entity else _SCALAR[str(kafka_type)],
                f"{key}.{f.name}" if is_entity else None,
                array,
                nullable,
                set(),
                has_default,
            )
        entry.versions.add(version)
        entry.nullable |= nullable
        entry.has_default |= has_default
        if is_entity:
            assert isinstance(inner, type)
            _walk(inner, f"{key}.{f.name}", version, messages)


def _names(messages: dict[str, _Message], top: str) -> dict[str, str]:
    """A Python name for each message: the top one as kio names it, nested ones by kio's name. In one
    API, messages of one kio name and one shape share their TypedDict (ConsumerGroupDescribe's
    `assignment` and `target_assignment`); of one name and two shapes, each is named by its path."""
    names = {}
    for key, msg in messages.items():
        names[key] = top if key == top.split(".")[0] else msg.kio_name
    by_name: dict[str, list[str]] = {}
    for key, name in names.items():
        by_name.setdefault(name, []).append(key)
    for keys in by_name.values():
        if len({_shape(messages[k], messages) for k in keys}) > 1:
            for k in keys:
                names[k] = top.removesuffix("Response") + "".join(p.title().replace("_", "") for p in k.split(".")[1:])
    return names


def _shape(msg: _Message, messages: dict[str, _Message]) -> tuple[object, ...]:
    return tuple(
        (
            f.name,
            f.scalar or (messages[f.nested].kio_name if f.nested else ""),
            f.array,
            f.nullable,
        )
        for f in msg.fields.values()
    )


def _render(messages: dict[str, _Message], names: dict[str, str]) -> Iterable[str]:
    # nested messages first, so each name is defined before use (readers like that order too)
    done: set[str] = set()
    for key in sorted(messages, key=lambda k: (-k.count("."), k)):
        if names[key] in done:
            continue  # another path of the same name and shape
        done.add(names[key])
        msg = messages[key]
        all_versions = messages[key].versions
        yield ""
        yield ""
        yield f"class {names[key]}(TypedDict, total=False):"
        versions = sorted(msg.versions)
        doc = f'    """`{key}` (versions {_ranges(versions)})."""'
        if len(doc) > 120:  # the line limit: the path on a line of its own
            doc = f'    """`{key}`\n    (versions {_ranges(versions)})."""'
        yield doc
        yield ""
        for f in msg.fields.values():
            tp = f.scalar if f.nested is None else names[f.nested]
            if f.array:
                tp = f"Sequence[{tp}]"
            if f.nullable:
                tp = f"{tp} | None"
            required = f.versions >= all_versions and not f.has_default and not f.nullable
            if required:
                tp = f"Required[{tp}]"
            note = "" if f.versions >= all_versions else f"  # v{_ranges(sorted(f.versions))}"
            yield f"    {f.name}: {tp}{note}"


def _ranges(vs: list[int]) -> str:
    out, start, prev = [], vs[0], vs[0]
    for v in [*vs[1:], None]:  # None ends the last range
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ", ".join(out)


def generate(api_keys: Iterable[int]) -> str:
    lines = [
        '"""Typed plain data of the control-plane responses: generated by `response_types_gen`, do not edit.',
        "",
        "One `TypedDict` per response of each API, with the fields of every version of it; a comment",
        "gives the versions of a field that not all versions have.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import datetime",
        "import uuid",
        "from collections.abc import Sequence",
        "from typing import Required, TypedDict",
        "",
        "from kio.schema.errors import ErrorCode",
    ]
    first = True
    taken: dict[str, int] = {}
    for api_key in sorted(api_keys):
        versions = _versions(api_key)
        messages: dict[str, _Message] = {}
        top = ""
        for v in versions:
            cls = response_schema(api_key, v)
            assert cls is not None
            top = cls.__name__
            _walk(cls, top, v, messages)
        names = _names(messages, top)
        for key, name in list(names.items()):  # two APIs' nested messages of one name: qualify
            if taken.get(name, api_key) != api_key:
                name = top.removesuffix("Response") + name
                names[key] = name
            taken[name] = api_key
        lines.extend([""] if first else ["", ""])
        first = False
        lines.append(f"# ---- {ApiKey(api_key).name} (key {api_key}) " + "-" * max(0, 80 - len(ApiKey(api_key).name)))
        lines.extend(_render(messages, names))
    return "\n".join(lines) + "\n"


# the control-plane APIs the broker serves (tests/wire/test_response_types.py checks the list
# against the routes)
APIS = (
    ApiKey.METADATA,
    ApiKey.OFFSET_COMMIT,
    ApiKey.OFFSET_FETCH,
    ApiKey.FIND_COORDINATOR,
    ApiKey.JOIN_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.DESCRIBE_GROUPS,
    ApiKey.LIST_GROUPS,
    ApiKey.SASL_HANDSHAKE,
    ApiKey.API_VERSIONS,
    ApiKey.CREATE_TOPICS,
    ApiKey.DELETE_TOPICS,
    ApiKey.DELETE_RECORDS,
    ApiKey.INIT_PRODUCER_ID,
    ApiKey.OFFSET_FOR_LEADER_EPOCH,
    ApiKey.ADD_PARTITIONS_TO_TXN,
    ApiKey.ADD_OFFSETS_TO_TXN,
    ApiKey.END_TXN,
    ApiKey.WRITE_TXN_MARKERS,
    ApiKey.TXN_OFFSET_COMMIT,
    ApiKey.DESCRIBE_ACLS,
    ApiKey.CREATE_ACLS,
    ApiKey.DELETE_ACLS,
    ApiKey.DESCRIBE_CONFIGS,
    ApiKey.ALTER_CONFIGS,
    ApiKey.ALTER_REPLICA_LOG_DIRS,
    ApiKey.DESCRIBE_LOG_DIRS,
    ApiKey.SASL_AUTHENTICATE,
    ApiKey.CREATE_PARTITIONS,
    ApiKey.DELETE_GROUPS,
    ApiKey.ELECT_LEADERS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.OFFSET_DELETE,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    ApiKey.DESCRIBE_CLUSTER,
    ApiKey.DESCRIBE_PRODUCERS,
    ApiKey.DESCRIBE_TRANSACTIONS,
    ApiKey.LIST_TRANSACTIONS,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS,
    ApiKey.CONSUMER_GROUP_HEARTBEAT,
    ApiKey.CONSUMER_GROUP_DESCRIBE,
    ApiKey.SHARE_GROUP_HEARTBEAT,
    ApiKey.SHARE_GROUP_DESCRIBE,
    ApiKey.STREAMS_GROUP_HEARTBEAT,
    ApiKey.STREAMS_GROUP_DESCRIBE,
    ApiKey.SHARE_FETCH,
    ApiKey.SHARE_ACKNOWLEDGE,
    ApiKey.INITIALIZE_SHARE_GROUP_STATE,
    ApiKey.READ_SHARE_GROUP_STATE,
    ApiKey.WRITE_SHARE_GROUP_STATE,
    ApiKey.DELETE_SHARE_GROUP_STATE,
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS,
)


def main() -> None:
    print(generate(APIS), end="")


if __name__ == "__main__":
    main()
