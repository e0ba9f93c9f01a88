"""Seed frames for routed APIs that no captured client frame exercises, built from their kio
schemas: every field set to a plain value (0, "fuzz", one array item, ...), encoded by kio's own
writer with a request header, so hypothesis mutates a structurally valid request of every API."""

from __future__ import annotations

import datetime
import io
import struct
import uuid
from dataclasses import MISSING, fields

from kio.serial import entity_writer
from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field

from tidelog.wire.schemas import request_schema

_VALUES = {
    "int8": 0,
    "int16": 0,
    "int32": 1,
    "int64": 0,
    "uint16": 0,
    "uint32": 0,
    "float64": 0.0,
    "bool": False,
    "string": "fuzz",
    "bytes": b"",
    "records": None,
    "uuid": uuid.UUID(int=1),
    "timedelta_i32": datetime.timedelta(milliseconds=1000),
    "timedelta_i64": datetime.timedelta(milliseconds=1000),
}


def _instance(cls):
    kw = {}
    for f in fields(cls):
        c = classify_field(f)
        kafka_type = f.metadata.get("kafka_type")
        if isinstance(c, EntityTupleField):
            kw[f.name] = (_instance(c.type_),)
        elif isinstance(c, EntityField):
            kw[f.name] = _instance(c.type_)
        elif f.default is not MISSING and kafka_type not in ("string",):
            continue
        elif isinstance(c, PrimitiveTupleField):
            kw[f.name] = (c.type_(_VALUES[kafka_type]),) if kafka_type in _VALUES else ()
        else:
            v = _VALUES.get(kafka_type, 0)
            try:
                kw[f.name] = c.type_(v) if not isinstance(v, (datetime.timedelta, uuid.UUID)) and v is not None else v
            except TypeError:
                kw[f.name] = v
    return cls(**kw)


def seed_frame(api_key: int, version: int) -> bytes | None:
    cls = request_schema(api_key, version)
    if cls is None:
        return None
    try:
        buf = io.BytesIO()
        entity_writer(cls)(buf, _instance(cls))
    except Exception:  # noqa: BLE001 - a schema this simple builder cannot fill: no seed
        return None
    head = struct.pack(">hhih", api_key, version, 0x1234, 4) + b"fuzz"
    if cls.__flexible__:
        head += b"\x00"
    return head + buf.getvalue()


def schema_seeds(version_ranges) -> list[bytes]:
    out = []
    for key, lo, hi in version_ranges:
        if key in (0, 1, 2):  # tidelog's own codecs: seeded from captures
            continue
        for v in range(lo, hi + 1):
            f = seed_frame(key, v)
            if f is not None:
                out.append(f)
    return out
