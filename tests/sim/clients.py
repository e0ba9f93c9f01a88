"""Simulated Kafka clients: small, but they speak the real protocol to the brokers over the
simulated network and behave as the real ones do where it matters for safety.

- `Producer`: acks=all (or 1), record batches v2 of one to three records whose values are unique
  (`<client>:<n>`). Idempotent (a producer id from InitProducerId, one sequence per partition,
  one batch in flight per partition, a failed batch retried with the same sequence until the
  delivery timeout, after which the producer takes a new producer id), or plain with `retries`
  (0: a batch is not retried, so its values may never appear twice). As librdkafka, a plain
  producer sends a batch refused with a leader error (NOT_LEADER_OR_FOLLOWER, ...: "not written")
  again without counting a retry.
- `TxnProducer`: a transactional id; each transaction adds partitions (AddPartitionsToTxn),
  sends idempotent transactional batches, then commits or aborts (EndTxn); on any trouble it
  aborts, or re-initialises (which fences and aborts what was open). With `tv2` it runs
  transaction version 2 (KIP-890 part 2) as Kafka 4's Java producer: no AddPartitionsToTxn
  (Produce v12 adds), no AddOffsetsToTxn (TxnOffsetCommit v5 adds), EndTxn v5 whose answer gives
  the bumped epoch the next transaction uses, its sequences starting again at 0.

Every outcome goes into the `History`: acknowledged records with their offsets, failures, and
transactions with their outcome (committed, aborted, or unknown: whole or absent).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode as E

from tidelog.cluster.peer import Peer, PeerError
from tidelog.log.records import Record, build_batch
from tidelog.wire import produce as produce_codec

from .loop import Process

PRODUCE_VERSION = 8
PRODUCE_TV2_VERSION = 12  # a transaction version 2 client's: the broker adds the partition
# librdkafka resends these at once, counting no retry: they mean the write was not made
LEADER_REFRESH = {E.not_leader_or_follower.value, E.leader_not_available.value, E.unknown_topic_or_partition.value}
RETRIABLE = {
    E.not_leader_or_follower.value,
    E.not_enough_replicas.value,
    E.not_enough_replicas_after_append.value,
    E.request_timed_out.value,
    E.leader_not_available.value,
    E.unknown_topic_or_partition.value,
    E.kafka_storage_error.value,
    E.fenced_leader_epoch.value,
    E.unknown_leader_epoch.value,
    E.network_exception.value,
    E.coordinator_load_in_progress.value,
    E.coordinator_not_available.value,
    E.not_coordinator.value,
    E.concurrent_transactions.value,
}


@dataclass
class Txn:
    client: str
    number: int
    records: list[tuple[str, int, str]] = field(default_factory=list)  # (topic, partition, value) acked
    sent: list[tuple[str, int, str]] = field(default_factory=list)
    outcome: str = "open"  # committed | aborted | unknown


@dataclass
class History:
    acked: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # value -> (topic, partition, offset)
    acked_by: dict[str, str] = field(default_factory=dict)  # value -> client kind
    failed: set[str] = field(default_factory=set)
    sent: dict[str, str] = field(default_factory=dict)  # value -> client kind
    txns: list[Txn] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)  # anomalies the clients saw
    oosn: int = 0  # OUT_OF_ORDER_SEQUENCE_NUMBER answers (from zombie leaders: expected)
    log: list[str] = field(default_factory=list)


class ClientError(Exception):
    pass


class Client:
    """Connections and a metadata cache, as one process."""

    def __init__(
        self,
        proc: Process,
        name: str,
        bootstrap: list[tuple[str, int]],
        connect: Any,
        rng: random.Random,
        timeout_s: float = 5.0,
    ) -> None:
        self.proc = proc
        self.name = name
        self.bootstrap = bootstrap
        self.connect = connect
        self.rng = rng
        self.timeout_s = timeout_s
        self.brokers: dict[int, tuple[str, int]] = {}
        self.leaders: dict[tuple[str, int], int] = {}
        self.partition_count: dict[str, int] = {}
        self._conns: dict[Any, tuple[Peer, asyncio.Lock]] = {}

    def _conn(self, addr: tuple[str, int], lane: Any = None) -> tuple[Peer, asyncio.Lock]:
        key = (addr, lane)
        got = self._conns.get(key)
        if got is None:
            got = self._conns[key] = (Peer(addr[0], addr[1], self.name, self.timeout_s, self.connect), asyncio.Lock())
        return got

    async def call(
        self, addr: tuple[str, int], api_key: int, version: int, data: dict[str, Any], lane: Any = None
    ) -> Any:
        peer, lock = self._conn(addr, lane)
        async with lock:
            try:
                return await peer.control(api_key, version, data)
            except (PeerError, OSError) as e:
                raise ClientError(f"{addr}: {e}") from e

    async def any_broker(self, api_key: int, version: int, data: dict[str, Any]) -> Any:
        addrs = list(self.brokers.values()) + list(self.bootstrap)
        self.rng.shuffle(addrs)
        last: Exception | None = None
        for addr in addrs:
            try:
                return await self.call(addr, api_key, version, data)
            except ClientError as e:
                last = e
        raise ClientError(f"no broker answered: {last}")

    async def refresh(self, topics: list[str]) -> None:
        md = await self.any_broker(
            3,
            9,
            {
                "topics": [{"name": t} for t in topics],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        for b in md.brokers:
            self.brokers[b.node_id] = (b.host, b.port)
        for t in md.topics:
            if t.error_code.value:
                continue
            self.partition_count[t.name] = len(t.partitions)
            for p in t.partitions:
                self.leaders[(t.name, p.partition_index)] = p.leader_id

    def leader_addr(self, topic: str, partition: int) -> tuple[str, int] | None:
        node = self.leaders.get((topic, partition), -1)
        return self.brokers.get(node) if node >= 0 else None

    async def produce(
        self,
        topic: str,
        partition: int,
        batch: bytes,
        acks: int,
        timeout_ms: int,
        txn_id: str | None = None,
        version: int = PRODUCE_VERSION,
    ) -> tuple[int, int]:
        """(error code, base offset); ClientError when no answer came."""
        addr = self.leader_addr(topic, partition)
        if addr is None:
            return E.leader_not_available.value, -1
        req = produce_codec.ProduceRequest(
            acks,
            timeout_ms,
            [produce_codec.ProduceRequestTopic(topic, [produce_codec.ProduceRequestPartition(partition, batch)])],
            txn_id,
        )
        peer, lock = self._conn(addr, ("produce", topic, partition))
        async with lock:
            try:
                body = produce_codec.encode_request(req, version)
                flexible = version >= produce_codec.FIRST_FLEXIBLE_VERSION
                data = await peer._call(0, version, body, timeout_ms / 1000 + self.timeout_s, flexible)
            except (PeerError, OSError) as e:
                raise ClientError(f"produce to {addr}: {e}") from e
        resp = produce_codec.decode_response(data, version)
        pr = resp.responses[0].partition_responses[0]
        return pr.error_code, pr.base_offset

    async def find_coordinator(self, txn_id: str) -> tuple[str, int]:
        resp = await self.any_broker(10, 3, {"key": txn_id, "key_type": 1})
        if resp.error_code.value or resp.node_id < 0:
            raise ClientError(f"find coordinator: error {resp.error_code.value}")
        return resp.host, resp.port

    def close(self) -> None:
        for peer, _lock in self._conns.values():
            peer.close()
        self._conns.clear()


class Producer:
    def __init__(
        self,
        client: Client,
        history: History,
        topic: str,
        *,
        idempotent: bool,
        acks: int = -1,
        retries: int = 1_000_000,
        kind: str = "",
        delivery_timeout_s: float = 60.0,
    ) -> None:
        self.c = client
        self.h = history
        self.topic = topic
        self.idempotent = idempotent
        self.acks = acks
        self.retries = retries
        self.kind = kind or client.name
        self.delivery_timeout_s = delivery_timeout_s
        self.pid, self.epoch = -1, -1
        self.seq: dict[int, int] = {}
        self.n = 0
        self.stopping = False
        self.request_timeout_ms = 10_000
        self.produce_version = PRODUCE_VERSION
        # (topic, partition, broker that answered) -> why that answer is wrong, or "" (the harness's)
        self.judge: Callable[[str, int, int], str] = lambda t, p, b: "from its leader"

    async def init(self) -> None:
        while not self.stopping:
            try:
                resp = await self.c.any_broker(22, 1, {"transactional_id": None, "transaction_timeout": 60000})
                if resp.error_code.value == 0:
                    self.pid, self.epoch, self.seq = resp.producer_id, resp.producer_epoch, {}
                    return
            except ClientError:
                pass
            await asyncio.sleep(0.2)

    async def run(self, pace_s: float) -> None:
        await self.init_metadata()
        if self.idempotent:
            await self.init()
        parts = self.c.partition_count.get(self.topic, 1)
        await asyncio.gather(*(self._partition_loop(p, pace_s) for p in range(parts)))

    async def init_metadata(self) -> None:
        while not self.stopping:
            try:
                await self.c.refresh([self.topic])
                if self.topic in self.c.partition_count:
                    return
            except ClientError:
                pass
            await asyncio.sleep(0.2)

    async def _partition_loop(self, p: int, pace_s: float) -> None:
        rng = self.c.rng
        while not self.stopping:
            await asyncio.sleep(rng.uniform(0.5, 1.5) * pace_s)
            if self.stopping:
                return
            k = rng.randint(1, 3)
            values = []
            for _ in range(k):
                values.append(f"{self.c.name}:{self.n}")
                self.n += 1
            await self.deliver(p, values)

    def _batch(self, p: int, values: list[str], seq: int, transactional: bool = False) -> bytes:
        now = int(asyncio.get_running_loop().time() * 1000)
        recs = [Record(None, v.encode(), now) for v in values]
        if self.idempotent:
            return build_batch(
                recs, producer_id=self.pid, producer_epoch=self.epoch, base_sequence=seq, transactional=transactional
            )
        return build_batch(recs)

    async def deliver(self, p: int, values: list[str], txn_id: str | None = None) -> int:
        """0 when acknowledged, else the last error (or -1: no answer); the values' outcome is
        then unknown."""
        for v in values:
            self.h.sent[v] = self.kind
        seq = self.seq.get(p, 0)
        batch = self._batch(p, values, seq, txn_id is not None)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.delivery_timeout_s
        attempts = 0
        code = -1
        while loop.time() < deadline and (attempts == 0 or attempts <= self.retries):
            attempts += 1
            # the node this attempt goes to (`produce` resolves the leader before its first await);
            # an answer is judged as that node's, not as whichever the leader is when it arrives
            node = self.c.leaders.get((self.topic, p), -1)
            try:
                code, base = await self.c.produce(
                    self.topic, p, batch, self.acks, self.request_timeout_ms, txn_id, self.produce_version
                )
            except ClientError:
                code = -1
            if code == 0:
                if self.idempotent:
                    self.seq[p] = seq + len(values)
                for i, v in enumerate(values):
                    if txn_id is None and v in self.h.acked and self.h.acked[v] != (self.topic, p, base + i):
                        self.h.client_errors.append(
                            f"{v} acknowledged twice: at {self.h.acked[v]} and {(self.topic, p, base + i)}"
                        )
                    self.h.acked[v] = (self.topic, p, base + i)
                    self.h.acked_by[v] = self.kind
                return 0
            if code == E.out_of_order_sequence_number.value:
                # as real clients (KIP-360): the batch fails, the producer takes a new id. From a
                # deposed leader still acting as one (a zombie) this is Kafka's behaviour too; from
                # the partition's rightful leader it means its producer state is wrong
                complaint = self.judge(self.topic, p, node)
                self.h.oosn += 1
                if complaint:
                    self.h.client_errors.append(
                        f"{self.kind}: OUT_OF_ORDER_SEQUENCE_NUMBER on {self.topic}-{p} "
                        f"(producer {self.pid}, sequence {seq}) {complaint}"
                    )
                break
            if code not in RETRIABLE and code != -1:
                break
            if code in LEADER_REFRESH and not self.idempotent:
                attempts -= 1  # as librdkafka: "not written", sent again without counting a retry
            elif self.stopping and self.retries == 0:
                break
            await asyncio.sleep(0.05 + 0.1 * self.c.rng.random())
            try:
                await self.c.refresh([self.topic])
            except ClientError:
                pass
        for v in values:
            self.h.failed.add(v)
        if self.idempotent and txn_id is None:  # unknown outcome: a new producer id (as librdkafka resets)
            await self.init()
        return code


class TxnProducer(Producer):
    def __init__(
        self, client: Client, history: History, topic: str, txn_id: str, kind: str = "txn", tv2: bool = False
    ) -> None:
        super().__init__(client, history, topic, idempotent=True, kind=kind)
        self.txn_id = txn_id
        self.coordinator: tuple[str, int] | None = None
        self.number = 0
        self.tv2 = tv2
        if tv2:
            self.produce_version = PRODUCE_TV2_VERSION

    async def add_partitions(self, parts: list[int]) -> int:
        """AddPartitionsToTxn (transaction version 1); version 2 adds them with its Produce."""
        if self.tv2:
            return 0
        resp = await self._coord_call(
            24,
            3,
            {
                "v3_and_below_transactional_id": self.txn_id,
                "v3_and_below_producer_id": self.pid,
                "v3_and_below_producer_epoch": self.epoch,
                "v3_and_below_topics": [{"name": self.topic, "partitions": parts}],
            },
        )
        return _first_error(resp)

    async def end_txn(self, commit: bool) -> int:
        """EndTxn: v3 keeps the epoch; v5 (transaction version 2) answers the bumped one, which the
        next transaction uses with its sequences from 0 (as the Java producer)."""
        resp = await self._coord_call(
            26,
            5 if self.tv2 else 3,
            {
                "transactional_id": self.txn_id,
                "producer_id": self.pid,
                "producer_epoch": self.epoch,
                "committed": commit,
            },
        )
        code = _first_error(resp)
        if code == 0 and self.tv2:
            self.pid, self.epoch, self.seq = resp.producer_id, resp.producer_epoch, {}
        return code

    async def _coord_call(self, api_key: int, version: int, data: dict[str, Any]) -> Any:
        """The coordinator's answer, retried through moves; ClientError after the timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30.0
        last = None
        while loop.time() < deadline and not (self.stopping and api_key == 22):
            try:
                if self.coordinator is None:
                    self.coordinator = await self.c.find_coordinator(self.txn_id)
                resp = await self.c.call(self.coordinator, api_key, version, data, lane="coordinator")
            except ClientError as e:
                self.coordinator, last = None, e
                await asyncio.sleep(0.1)
                continue
            code = _first_error(resp)
            if code in (
                E.not_coordinator.value,
                E.coordinator_not_available.value,
                E.coordinator_load_in_progress.value,
                E.concurrent_transactions.value,
            ):
                if code != E.concurrent_transactions.value:
                    self.coordinator = None
                last = code
                await asyncio.sleep(0.05 + 0.1 * self.c.rng.random())
                continue
            return resp
        raise ClientError(f"{self.txn_id}: api {api_key} gave up ({last})")

    async def init(self) -> None:
        while True:
            try:
                resp = await self._coord_call(22, 1, {"transactional_id": self.txn_id, "transaction_timeout": 15000})
            except ClientError:
                if self.stopping:
                    return
                continue
            if resp.error_code.value == 0:
                self.pid, self.epoch, self.seq = resp.producer_id, resp.producer_epoch, {}
                return
            await asyncio.sleep(0.2)

    async def run(self, pace_s: float) -> None:
        await self.init_metadata()
        await self.init()
        rng = self.c.rng
        while not self.stopping:
            await asyncio.sleep(rng.uniform(0.5, 1.5) * pace_s)
            if self.stopping:
                return
            await self.one_transaction(commit=rng.random() < 0.75)

    async def one_transaction(self, commit: bool) -> None:
        rng = self.c.rng
        txn = Txn(self.kind, self.number)
        self.number += 1
        self.h.txns.append(txn)
        parts = sorted(
            rng.sample(
                range(self.c.partition_count.get(self.topic, 1)), k=min(2, self.c.partition_count.get(self.topic, 1))
            )
        )
        ok = True
        try:
            ok = await self.add_partitions(parts) == 0
            if ok:
                for p in parts:
                    values = [f"{self.c.name}:{self.n + i}" for i in range(rng.randint(1, 2))]
                    self.n += len(values)
                    txn.sent += [(self.topic, p, v) for v in values]
                    if await self.deliver(p, values, self.txn_id) != 0:
                        ok = False
                        break
                    txn.records += [(self.topic, p, v) for v in values]
            code = await self.end_txn(commit and ok)
            if code == 0:
                txn.outcome = "committed" if commit and ok else "aborted"
                if ok:
                    return
                # a batch whose outcome is unknown keeps its sequence: as real clients (KIP-360)
                # the epoch is bumped before the next transaction, else a new batch could reuse
                # that sequence and be taken for the old one
            else:
                txn.outcome = "unknown"
        except ClientError:
            txn.outcome = "unknown"
        await self.init()  # fences whatever was left open: it is aborted (or completed, if prepared)


def _first_error(resp: Any) -> int:
    """The first non-zero error code anywhere in a kio response (0 when none)."""
    code = getattr(resp, "error_code", None)
    if code is not None and int(getattr(code, "value", code)):
        return int(getattr(code, "value", code))
    for name in ("results_by_topic_v3_and_below", "results", "topics"):
        for t in getattr(resp, name, None) or ():
            for p in getattr(t, "results_by_partition", None) or getattr(t, "partitions", None) or ():
                c = getattr(p, "partition_error_code", None) or getattr(p, "error_code", None)
                if c is not None and int(getattr(c, "value", c)):
                    return int(getattr(c, "value", c))
    return 0


class EosCopier(TxnProducer):
    """Consume-transform-produce exactly once (KIP-98, as Kafka Streams and the EOS clients do):
    read_committed records of `source` from the group's committed positions, copied to the same
    partition of `target` in a transaction that also commits the new positions to `group`
    (AddOffsetsToTxn, TxnOffsetCommit as a standalone group: generation -1); every seventh
    transaction is aborted. On any trouble it re-initialises (fencing and aborting what was open)
    and reads the committed positions again (OffsetFetch with require_stable). read_committed of
    `target` must then be, per partition, exactly a prefix of read_committed of `source`."""

    def __init__(
        self, client: Client, history: History, source: str, target: str, txn_id: str, group: str, tv2: bool = False
    ) -> None:
        super().__init__(client, history, target, txn_id, kind="eos", tv2=tv2)
        self.source = source
        self.group = group
        self.positions: dict[int, int] = {}
        self.group_coordinator: tuple[str, int] | None = None

    async def run(self, pace_s: float) -> None:
        while not self.stopping:
            try:
                await self.c.refresh([self.source, self.topic])
                if self.source in self.c.partition_count and self.topic in self.c.partition_count:
                    break
            except ClientError:
                pass
            await asyncio.sleep(0.2)
        restart = True
        while not self.stopping:
            if restart:
                await self.init()
                if self.stopping or not await self._load_positions():
                    continue
            await asyncio.sleep(self.c.rng.uniform(0.5, 1.5) * pace_s)
            restart = not await self._copy_once(commit=self.number % 7 != 6)

    async def _group_call(self, api_key: int, version: int, data: dict[str, Any]) -> Any:
        if self.group_coordinator is None:
            resp = await self.c.any_broker(10, 3, {"key": self.group, "key_type": 0})
            if resp.error_code.value or resp.node_id < 0:
                raise ClientError(f"find group coordinator: error {resp.error_code.value}")
            self.group_coordinator = (resp.host, resp.port)
        try:
            return await self.c.call(self.group_coordinator, api_key, version, data, lane="group")
        except ClientError:
            self.group_coordinator = None
            raise

    async def _load_positions(self) -> bool:
        parts = list(range(self.c.partition_count[self.source]))
        try:
            resp = await self._group_call(
                9,
                7,
                {
                    "group_id": self.group,
                    "require_stable": True,
                    "topics": [{"name": self.source, "partition_indexes": parts}],
                },
            )
        except ClientError:
            return False
        if resp.error_code.value:
            self.group_coordinator = None
            await asyncio.sleep(0.1)
            return False
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code.value:
                    self.group_coordinator = None
                    return False
                self.positions[p.partition_index] = max(p.committed_offset, 0)
        return True

    async def _fetch(self, p: int, offset: int) -> tuple[list[str], int] | None:
        """(the committed values from `offset`, the offset after what was read), or None."""
        from tidelog.wire import fetch as fetch_codec

        from .checker import committed_records

        addr = self.c.leader_addr(self.source, p)
        if addr is None:
            return None
        peer, lock = self.c._conn(addr, ("fetch", p))
        req = fetch_codec.FetchRequest(
            max_wait_ms=0,
            min_bytes=0,
            isolation_level=1,
            max_bytes=1 << 16,
            topics=[
                fetch_codec.FetchRequestTopic(self.source, [fetch_codec.FetchRequestPartition(p, offset, 1 << 14)])
            ],
        )
        async with lock:
            try:
                resp = await peer.fetch(req)
            except (PeerError, OSError) as e:
                raise ClientError(str(e)) from e
        pr = resp.responses[0].partitions[0]
        if pr.error_code:
            return None
        data = b"".join(bytes(c) for c in pr.records or ())
        records, next_offset = committed_records(data, pr.aborted_transactions or (), offset)
        if len(records) > 20:  # at most 20 a transaction: up to just after the 20th
            records, next_offset = records[:20], records[19][1] + 1
        return [f"copy:{v}" for v, _o in records], next_offset

    async def _copy_once(self, commit: bool) -> bool:
        """One transaction; False when the copier must start over."""
        txn = Txn(self.kind, self.number)
        self.number += 1
        self.h.txns.append(txn)
        try:
            moved: dict[int, int] = {}
            batches: dict[int, list[str]] = {}
            for p in sorted(self.positions):
                got = await self._fetch(p, self.positions[p])
                if got is None:
                    await self.c.refresh([self.source])
                    continue
                values, after = got
                if values:
                    batches[p] = values
                if after > self.positions[p]:
                    moved[p] = after
            if not moved:
                txn.outcome = "aborted"
                return True
            if batches:
                if code := await self.add_partitions(sorted(batches)):
                    raise ClientError(f"add partitions: {code}")
                for p, values in sorted(batches.items()):
                    txn.sent += [(self.topic, p, v) for v in values]
                    if await self.deliver(p, values, self.txn_id) != 0:
                        raise ClientError("copy not acknowledged")
                    txn.records += [(self.topic, p, v) for v in values]
            if not self.tv2:  # version 2: TxnOffsetCommit v5 adds the group's partition
                resp = await self._coord_call(
                    25,
                    3,
                    {
                        "transactional_id": self.txn_id,
                        "producer_id": self.pid,
                        "producer_epoch": self.epoch,
                        "group_id": self.group,
                    },
                )
                if _first_error(resp):
                    raise ClientError(f"add offsets: {_first_error(resp)}")
            resp = await self._group_call(
                28,
                5 if self.tv2 else 3,
                {
                    "transactional_id": self.txn_id,
                    "group_id": self.group,
                    "producer_id": self.pid,
                    "producer_epoch": self.epoch,
                    "generation_id": -1,
                    "member_id": "",
                    "group_instance_id": None,
                    "topics": [
                        {
                            "name": self.source,
                            "partitions": [
                                {
                                    "partition_index": p,
                                    "committed_offset": o,
                                    "committed_leader_epoch": -1,
                                    "committed_metadata": "",
                                }
                                for p, o in sorted(moved.items())
                            ],
                        }
                    ],
                },
            )
            if _first_error(resp):
                self.group_coordinator = None
                raise ClientError(f"txn offset commit: {_first_error(resp)}")
            if await self.end_txn(commit) == 0:
                txn.outcome = "committed" if commit else "aborted"
                if commit:
                    self.positions.update(moved)
                    return True
                return False  # aborted on purpose: read the committed positions again
            txn.outcome = "unknown"
        except ClientError:
            txn.outcome = "unknown"
        return False
