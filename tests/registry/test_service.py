"""The registry's operations on a broker built by its composition root, in this process, no
socket opened: registration and read-back through `_schemas`, ids under concurrent writes, the
state rebuilt by a second broker on the same directory."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from tidelog.core.config import load_config
from tidelog.registry.errors import RegistryError
from tidelog.registry.service import Registry
from tidelog.server.broker import Broker


@contextlib.asynccontextmanager
async def registry_on(tmp_path):
    b = Broker(
        load_config(
            None,
            [
                f"log.dirs={tmp_path / 'data'}",
                "listeners=PLAINTEXT://127.0.0.1:0",
                "offsets.topic.num.partitions=1",
                "schema.registry.listeners=http://127.0.0.1:0",
            ],
        )
    )
    b.partitions.start()
    assert b.schema_registry is not None
    reg: Registry = b.schema_registry.registry
    reg.start()  # reads _schemas; no listener
    try:
        yield reg, b
    finally:
        reg.stop()
        b.partitions.stop()


def enum(*symbols: str) -> dict[str, object]:
    return {"schema": json.dumps({"type": "enum", "name": "E", "symbols": list(symbols)})}


async def test_writes_are_read_back_from_the_log(tmp_path):
    async with registry_on(tmp_path) as (reg, b):
        assert (await reg.register("s", enum("A"))) == {"id": 1}
        plog = b.partitions.get("_schemas", 0)
        assert plog is not None and plog.log_end_offset == 1
        assert reg.store.position == 1  # applied once read
        assert reg.versions("s") == [1]
        with pytest.raises(RegistryError) as e:
            await reg.register("s", enum("B"))  # BACKWARD: the reader lacks A
        assert e.value.code == 409 and plog.log_end_offset == 1  # nothing written


async def test_concurrent_registrations_get_distinct_increasing_ids(tmp_path):
    async with registry_on(tmp_path) as (reg, _):
        await reg.set_config(None, {"compatibility": "NONE"})
        answers = await asyncio.gather(*(reg.register(f"s{i % 3}", enum(f"S{i}")) for i in range(20)))
        assert sorted(a["id"] for a in answers) == list(range(1, 21))
        assert sum(len(reg.versions(f"s{i}")) for i in range(3)) == 20


async def test_a_new_broker_on_the_same_directory_reads_the_same_state(tmp_path):
    async with registry_on(tmp_path) as (reg, _):
        await reg.register("s", enum("A"))
        await reg.register("s", enum("A", "B"))
        await reg.set_mode("t", {"mode": "READONLY"})
        await reg.delete_version("s", "1")
        before = (reg.versions("s", deleted=True), reg.versions("s"), reg.get_mode("t"), reg.by_id(2))
    async with registry_on(tmp_path) as (reg, _):
        assert (reg.versions("s", deleted=True), reg.versions("s"), reg.get_mode("t"), reg.by_id(2)) == before
        assert (await reg.register("s", enum("A", "B", "C"))) == {"id": 3}
