"""Control-plane message schemas: kio's generated classes, plus the old versions kio dropped.

kio (Kafka 4.x schemas) no longer carries some versions that real clients still send
(CreateTopics v0-1, DeleteTopics v0, DescribeConfigs v0, OffsetCommit v0-1, OffsetFetch v0,
WriteTxnMarkers v0 ...).
Those are *derived* here from the oldest kio class of the same API by a declarative edit —
fields dropped or replaced at a dotted path — so that kio's reader and writer serve them
unchanged. The edits restate facts of the protocol (which field appeared in which version).
"""

from __future__ import annotations

import dataclasses
import datetime
import typing
from dataclasses import dataclass, field, fields
from functools import cache
from types import EllipsisType, NoneType, UnionType
from typing import Any

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.request_header.v1.header import RequestHeader as _ReqHeaderV1
from kio.schema.response_header.v0.header import ResponseHeader as _RespHeaderV0

__all__ = ["request_schema", "response_schema", "Derivation", "DERIVED"]


@dataclass(frozen=True)
class Derivation:
    """Version `version` of an API = kio's version `base`, with these edits.

    `drop`: dotted field paths removed. `replace`: dotted path -> list of (name, kafka_type,
    python type, default) fields that stand in place of the named field.
    """

    base: int
    drop: tuple[str, ...] = ()
    replace: tuple[tuple[str, tuple[tuple[str, str, object, object], ...]], ...] = ()


_NO_DEFAULT = dataclasses.MISSING
# (api_key, version, is_request) -> Derivation
DERIVED: dict[tuple[int, int, bool], Derivation] = {
    # CreateTopics: v1 added validate_only (request) and error_message (response); v2 throttle.
    (19, 1, True): Derivation(base=2),
    (19, 0, True): Derivation(base=2, drop=("validate_only",)),
    (19, 1, False): Derivation(base=2, drop=("throttle_time",)),
    (19, 0, False): Derivation(base=2, drop=("throttle_time", "topics.error_message")),
    # DeleteTopics: v1 added throttle_time to the response.
    (20, 0, True): Derivation(base=1),
    (20, 0, False): Derivation(base=1, drop=("throttle_time",)),
    # WriteTxnMarkers v0: the fields of v1, which only made the message flexible.
    (27, 0, True): Derivation(base=1),
    (27, 0, False): Derivation(base=1),
    # DescribeConfigs: v1 added include_synonyms, synonyms and config_source (was is_default).
    (32, 0, True): Derivation(base=1, drop=("include_synonyms",)),
    (32, 0, False): Derivation(
        base=1,
        drop=("results.configs.synonyms",),
        replace=(("results.configs.config_source", (("is_default", "bool", bool, False),)),),
    ),
    # OffsetCommit v0-1: v1 added generation_id, member_id and per-partition commit_timestamp;
    # v2 replaced commit_timestamp with a request-level retention_time.
    (8, 1, True): Derivation(
        base=2,
        drop=("retention_time",),
        replace=(
            (
                "topics.partitions.committed_metadata",
                (
                    ("commit_timestamp", "int64", int, -1),
                    ("committed_metadata", "string", str | None, _NO_DEFAULT),
                ),
            ),
        ),
    ),
    (8, 0, True): Derivation(
        base=2,
        drop=("retention_time", "generation_id_or_member_epoch", "member_id"),
    ),
    (8, 1, False): Derivation(base=2),
    (8, 0, False): Derivation(base=2),
    # OffsetForLeaderEpoch: v1 added leader_epoch to the response, v2 current_leader_epoch to the
    # request and throttle_time to the response.
    (23, 1, True): Derivation(base=2, drop=("topics.partitions.current_leader_epoch",)),
    (23, 0, True): Derivation(base=2, drop=("topics.partitions.current_leader_epoch",)),
    (23, 1, False): Derivation(base=2, drop=("throttle_time",)),
    (23, 0, False): Derivation(base=2, drop=("throttle_time", "topics.partitions.leader_epoch")),
    # OffsetFetch v0 = v1 on the wire (v0 read offsets from ZooKeeper).
    (9, 0, True): Derivation(base=1),
    (9, 0, False): Derivation(base=1),
}


def _split_path(path: str) -> tuple[str, str]:
    head, _, rest = path.partition(".")
    return head, rest


def _inner_entity(tp: object) -> type | None:
    """The dataclass inside `X`, `X | None`, `tuple[X, ...]` or `tuple[X, ...] | None`."""
    origin = typing.get_origin(tp)
    if origin in (UnionType, typing.Union):
        members = [a for a in typing.get_args(tp) if a is not NoneType]
        return _inner_entity(members[0]) if len(members) == 1 else None
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is EllipsisType or (len(args) == 2 and args[1] is Ellipsis):
            return _inner_entity(args[0])
        return None
    return tp if isinstance(tp, type) and dataclasses.is_dataclass(tp) else None


def _retype(tp: object, old: type, new: type) -> object:
    if tp is old:
        return new
    origin = typing.get_origin(tp)
    if origin in (UnionType, typing.Union):
        args = tuple(_retype(a, old, new) for a in typing.get_args(tp))
        out = args[0]
        for a in args[1:]:
            out = out | a  # type: ignore[operator]  # typing objects support | at run time
        return out
    if origin is tuple:
        return tuple[_retype(typing.get_args(tp)[0], old, new), ...]  # type: ignore[misc]  # a type built at run time
    return tp


def _derive_class(
    base: type,
    version: int,
    flexible: bool,
    drop: set[str],
    replace: dict[str, tuple[tuple[str, str, object, object], ...]],
) -> type:
    new_fields: list[tuple[str, object, Any]] = []
    for f in fields(base):
        if f.name in drop:
            continue
        if f.name in replace:
            for name, kafka_type, py_type, default in replace[f.name]:
                extra: dict[str, object] = {} if default is _NO_DEFAULT else {"default": default}
                new_fields.append((name, py_type, field(metadata={"kafka_type": kafka_type}, **extra)))  # type: ignore[call-overload]  # default only when given
            continue
        tp = f.type
        inner = _inner_entity(tp)
        sub_drop = {rest for p in drop for head, rest in [_split_path(p)] if head == f.name and rest}
        sub_replace = {
            rest: v for p, v in replace.items() for head, rest in [_split_path(p)] if head == f.name and rest
        }
        if inner is not None:
            new_inner = _derive_class(inner, version, flexible, sub_drop, sub_replace)
            tp = _retype(tp, inner, new_inner)
        kw: dict[str, Any] = {"metadata": f.metadata}
        if f.default is not dataclasses.MISSING:
            kw["default"] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # pragma: no cover - kio uses defaults
            kw["default_factory"] = f.default_factory
        new_fields.append((f.name, tp, field(**kw)))
    base_type: Any = getattr(base, "__type__")
    ns = {
        "__type__": base_type,
        "__version__": version,
        "__flexible__": flexible,
        "__api_key__": getattr(base, "__api_key__"),
        "__header_schema__": _ReqHeaderV1 if base_type.name == "request" else _RespHeaderV0,
    }
    cls = dataclasses.make_dataclass(base.__name__, new_fields, namespace=ns, frozen=True, slots=True, kw_only=True)
    for k, v in ns.items():  # ClassVars, not fields
        setattr(cls, k, v)
    cls.__module__ = __name__
    cls.__derived_from__ = base  # type: ignore[attr-defined]  # control.build names fields of all versions
    return cls


def _split_paths(paths: Any) -> tuple[set[str], dict[str, Any]]:
    return set(paths), dict(paths) if paths and isinstance(next(iter(paths)), tuple) else {}


@cache
def _derived(api_key: int, version: int, is_request: bool) -> type | None:
    d = DERIVED.get((api_key, version, is_request))
    if d is None:
        return None
    loader = load_request_schema if is_request else load_response_schema
    base = loader(api_key, d.base)
    return _derive_class(base, version, False, set(d.drop), dict(d.replace))


@cache
def request_schema(api_key: int, version: int) -> type | None:
    try:
        return load_request_schema(api_key, version)
    except KioIndexError:
        return _derived(api_key, version, True)


@cache
def response_schema(api_key: int, version: int) -> type | None:
    try:
        return load_response_schema(api_key, version)
    except KioIndexError:
        return _derived(api_key, version, False)


def epoch_ms_to_datetime(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
