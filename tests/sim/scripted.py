"""Helpers for scripted simulations: a test writes the fault sequence itself (pause this leader
now, restart that broker without its disk) instead of taking it from a seed, and asserts on the
outcome. Each runs in a fresh simulation loop of its own."""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tidelog.log.records import Record, build_batch, decode_batches

from .checker import converged
from .clients import Client, ClientError
from .cluster import BROKER_DEFAULTS, SimCluster
from .loop import Determinism, SimLoop
from .run import create_topic

logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # dead processes leave pending tasks behind


def simulate(
    body: Callable[[SimCluster], Awaitable[None]],
    seed: int = 0,
    brokers: int = 3,
    overrides: dict[str, str] | None = None,
    base: Path | None = None,
) -> SimCluster:
    """Run `body(sim)` on a fresh simulated cluster; returns the cluster (its `violations`)."""
    loop = SimLoop()
    det = Determinism(loop, seed)
    tmp = Path(tempfile.mkdtemp(prefix="tidelog-simtest-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    sim = SimCluster(loop, seed, base or tmp, brokers, overrides)
    try:
        asyncio.set_event_loop(loop)

        async def main() -> None:
            sim.start()
            await body(sim)

        loop.run_until_complete(main())
    finally:
        try:
            loop.run_until_complete(sim.stop())
        finally:
            det.restore()
            asyncio.set_event_loop(None)
            loop.close()
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return sim


def client(sim: SimCluster, name: str, timeout_s: float = 5.0) -> Client:
    proc = sim.client_process(name)
    return Client(proc, name, sim.bootstrap, sim.net.connector(proc), sim.rng, timeout_s)


async def as_client(c: Client, coro: Awaitable[Any]) -> Any:
    """Run `coro` as the client's process (its sockets are the client's)."""
    return await c.proc.spawn(coro)


async def ready_topic(
    sim: SimCluster, c: Client, topic: str, partitions: int = 1, rf: int = 3, configs: dict[str, str] | None = None
) -> None:
    await as_client(c, create_topic(c, topic, partitions, rf, configs or {"min.insync.replicas": "2"}))
    assert await sim.until(lambda: converged(sim, [topic]) is None, 30), converged(sim, [topic])
    await as_client(c, c.refresh([topic]))


async def txn_producer(sim: SimCluster, topic: str, txn_id: str) -> tuple[Client, Any, int]:
    """A transactional producer of `topic` whose id is initialised (`__transaction_state` exists
    then): (its client, the producer, the id's partition of `__transaction_state`)."""
    from tidelog.txn.records import partition_for

    from .clients import History, TxnProducer

    tc = client(sim, "txn-client", timeout_s=5)
    tp = TxnProducer(tc, History(), topic, txn_id)
    await as_client(tc, tp.init_metadata())
    await as_client(tc, tp.init())
    key = "transaction.state.log.num.partitions"
    return tc, tp, partition_for(txn_id, int(sim.overrides.get(key, BROKER_DEFAULTS[key])))


def state(sim: SimCluster, topic: str, p: int = 0) -> Any:
    """The partition's state as etcd holds it now."""
    from tidelog.cluster.model import PartitionState

    for key, kv in sim.etcd.kv.items():
        if key.endswith(f"/topics/{topic}/p/{p}"):
            return PartitionState.decode(kv.value, kv.mod_revision)
    return None


def replicas(sim: SimCluster, topic: str, p: int = 0) -> tuple[int, ...]:
    from tidelog.cluster.model import TopicAssignment

    for key, kv in sim.etcd.kv.items():
        if key.endswith(f"/topics/{topic}"):
            return TopicAssignment.decode(topic, kv.value).replicas[p]
    return ()


def batch(values: list[str]) -> bytes:
    return build_batch([Record(None, v.encode(), 1_790_000_000_000) for v in values])


async def produce(
    c: Client,
    topic: str,
    p: int,
    values: list[str],
    acks: int = -1,
    to: int | None = None,
    timeout_ms: int = 5000,
    retry_s: float = 30.0,
) -> tuple[int, int]:
    """(error, base offset) of one batch, sent to the leader (or to broker `to`), retried on
    retriable errors for `retry_s` (not at all when `to` is given)."""

    async def go() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + retry_s
        while True:
            if to is not None:
                c.leaders[(topic, p)] = to
            else:
                try:
                    await c.refresh([topic])
                except ClientError:
                    pass
            try:
                code, base = await c.produce(topic, p, batch(values), acks, timeout_ms)
            except ClientError:
                code, base = -1, -1
            if code == 0 or to is not None or loop.time() >= deadline:
                return code, base
            await asyncio.sleep(0.2)

    return await as_client(c, go())  # type: ignore[no-any-return]


def log_values(sim: SimCluster, node: int, topic: str, p: int = 0) -> dict[int, str]:
    """offset -> value of every record in broker `node`'s copy (data batches only)."""
    plog = sim.brokers[node].plog(topic, p)
    out: dict[int, str] = {}
    if plog is None:
        return out
    data = b"".join(seg.log.pread(0, seg.log.size) for seg in plog.segments)
    for b in decode_batches(data):
        if b.attributes & 0x20:
            continue
        for r in b.records:
            out[r.offset] = (r.value or b"").decode()
    return out
