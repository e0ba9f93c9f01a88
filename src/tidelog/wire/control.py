"""Decode control-plane requests and encode responses through the schemas in `schemas`.

Handlers answer with plain data (dicts, lists, ints) written once for the newest version; `build`
turns that into the response class of whatever version the client asked for, keeping the fields
that version has and filling the rest from defaults. So a handler never branches on version for
the shape of its answer, only for semantics.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import pkgutil
import typing
import uuid
from collections.abc import Callable
from functools import cache
from types import NoneType, UnionType
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from .control_guard import GuardError, check_body
from .schemas import request_schema, response_schema

__all__ = ["decode_request", "encode_response", "build", "ControlDecodeError", "flexible"]


class ControlDecodeError(ValueError):
    pass


@cache
def _reader(api_key: int, version: int) -> Callable[[bytes, int], tuple[Any, int]] | None:
    cls = request_schema(api_key, version)
    return None if cls is None else entity_reader(cls)


@cache
def _writer(cls: type) -> Callable[[io.BytesIO, Any], None]:
    return entity_writer(cls)


@cache
def flexible(api_key: int, version: int) -> bool | None:
    """Whether (api_key, version) uses flexible encoding; None when no schema is known."""
    cls = request_schema(api_key, version)
    return None if cls is None else bool(getattr(cls, "__flexible__"))


def decode_request(api_key: int, version: int, frame: bytes, offset: int, strict: bool = False) -> Any:
    """Decode the request body starting at `offset`.

    Like Kafka's own parser, bytes left after the body are ignored unless `strict` (librdkafka 2.16
    sends three extra bytes after a MetadataRequest v12 for all topics). Golden-vector tests use
    `strict=True`.
    """
    reader = _reader(api_key, version)
    if reader is None:
        raise ControlDecodeError(f"no schema for api {api_key} v{version}")
    try:
        # kio's native reader preallocates from forged counts and aborts the process: walk first.
        check_body(request_schema(api_key, version) or type(None), frame, offset)
    except GuardError as e:
        raise ControlDecodeError(f"api {api_key} v{version}: {e}") from None
    try:
        value, size = reader(frame, offset)
    except Exception as e:  # kio raises several kinds on garbage
        raise ControlDecodeError(f"api {api_key} v{version}: {e}") from e
    if strict and offset + size != len(frame):
        raise ControlDecodeError(f"api {api_key} v{version}: {len(frame) - offset - size} trailing bytes after body")
    return value


def encode_response(api_key: int, version: int, data: Any) -> bytes:
    cls = response_schema(api_key, version)
    if cls is None:
        raise ValueError(f"no response schema for api {api_key} v{version}")
    obj = data if isinstance(data, cls) else build(cls, data, strict=True)
    buf = io.BytesIO()
    _writer(cls)(buf, obj)
    return buf.getvalue()


# ---- building a versioned response from plain data ---------------------------------------

_ZERO = {
    "bool": False,
    "string": "",
    "bytes": b"",
    "records": None,
    "uuid": None,
    "error_code": ErrorCode.none,
    "timedelta_i32": datetime.timedelta(0),
    "timedelta_i64": datetime.timedelta(0),
    "float64": 0.0,
}


@cache
def _plan(cls: type) -> list[tuple[str, str | None, bool, type | None, Any]]:
    hints = typing.get_type_hints(cls)
    plan: list[tuple[str, str | None, bool, type | None, Any]] = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        optional = False
        origin = typing.get_origin(tp)
        if origin in (UnionType, typing.Union):
            args = [a for a in typing.get_args(tp) if a is not NoneType]
            optional = True
            tp = args[0]
            origin = typing.get_origin(tp)
        is_array = origin is tuple
        inner = typing.get_args(tp)[0] if is_array else tp
        entity = inner if isinstance(inner, type) and dataclasses.is_dataclass(inner) else None
        kafka_type = f.metadata.get("kafka_type")
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif optional:
            default = None
        elif is_array:
            default = ()
        else:
            default = _ZERO.get(kafka_type or "", 0)
        plan.append((f.name, kafka_type, is_array, entity, default))
    return plan


def _convert(kafka_type: str | None, value: Any) -> Any:
    if kafka_type == "error_code":
        return value if isinstance(value, ErrorCode) else ErrorCode(int(value))
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return value if isinstance(value, datetime.timedelta) else datetime.timedelta(milliseconds=value)
    if kafka_type == "datetime_i64":
        if isinstance(value, datetime.datetime):
            return value
        return datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)
    if kafka_type == "uuid" and isinstance(value, (bytes, str)):
        return uuid.UUID(bytes=value) if isinstance(value, bytes) else uuid.UUID(value)
    return value


class UnknownFieldError(ValueError):
    """A response (or request) was built with a field no version of its message has."""


@cache
def _known_names(cls: type) -> frozenset[str]:
    """Field names of `cls` in every version of its message: a handler may build one mapping
    for several versions (fields a version lacks are left out), but not a name none has."""
    names = {f.name for f in dataclasses.fields(cls)}
    base = getattr(cls, "__derived_from__", None)  # an old version derived from kio's oldest (`schemas`)
    if base is not None:
        return frozenset(names | _known_names(base))
    parts = cls.__module__.split(".")
    if len(parts) == 5 and parts[:2] == ["kio", "schema"] and parts[3].startswith("v"):
        package = importlib.import_module(".".join(parts[:3]))
        for info in pkgutil.iter_modules(package.__path__):
            if not info.name.startswith("v"):
                continue
            try:
                module = importlib.import_module(f"{'.'.join(parts[:3])}.{info.name}.{parts[4]}")
            except ImportError:
                continue
            other = getattr(module, cls.__name__, None)
            if other is not None and dataclasses.is_dataclass(other):
                names.update(f.name for f in dataclasses.fields(other))
    return frozenset(names)


def build(cls: type, data: Any, strict: bool = False) -> Any:
    """Instantiate `cls` (a kio entity) from a mapping or object with attribute names.

    With `strict` (every response the broker encodes), a mapping with a key that no version of
    the message defines raises `UnknownFieldError`: a misspelt field would otherwise silently
    become its default."""
    if data is None:
        return None
    if strict and isinstance(data, dict):
        unknown = data.keys() - _known_names(cls)
        if unknown:
            raise UnknownFieldError(f"{cls.__module__}.{cls.__name__} has no field {', '.join(sorted(unknown))}")
    get = data.get if isinstance(data, dict) else (lambda k, d=None: getattr(data, k, d))
    kwargs = {}
    missing = object()
    for name, kafka_type, is_array, entity, default in _plan(cls):
        value = get(name, missing)
        if value is missing:
            kwargs[name] = default
            continue
        if value is None:
            kwargs[name] = None
        elif entity is not None:
            kwargs[name] = tuple(build(entity, v, strict) for v in value) if is_array else build(entity, value, strict)
        elif is_array:
            kwargs[name] = tuple(_convert(kafka_type, v) for v in value)
        else:
            kwargs[name] = _convert(kafka_type, value)
    return cls(**kwargs)


def to_plain(obj: Any) -> Any:
    """A kio entity as nested dicts (for logging and tests)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple):
        return [to_plain(x) for x in obj]
    return obj
