"""Prometheus metrics: a broker service serving `/metrics` on `metrics.listener` (host:port).

Two kinds of numbers, kept apart so the data path pays almost nothing:

* Counted as requests pass (`RequestStats`, `TopicStats`): the metrics service wraps each route's
  handler once at start. Per request that is one `perf_counter` pair, a `bisect` into fixed
  latency buckets and two list updates (about 0.6 µs measured, against tens of µs for the
  cheapest request); Produce and Fetch also add, per partition, the bytes and (Produce) the
  records count read from each v2 batch header — never per record. Latency runs
  from the handler call to the response object being ready (a long-poll Fetch's wait included;
  frame decoding and response encoding excluded).
* Read at scrape time (`BrokerCollector`): per-partition log size, segment count, log start/end
  offsets, high watermark and LSO from the log manager; group states, members and lag from the
  group coordinator; live producer ids and transactional ids from the `txn` service when there is
  one (zero until it exists). Nothing is updated per message for these.

The HTTP endpoint runs on the broker's own event loop (asyncio server), so a scrape reads broker
state on the thread that changes it. Without `metrics.listener` the service does nothing and no
handler is wrapped.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import struct
import time
from collections.abc import Callable, Iterator, Sequence, Sized
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from ..wire.apis import ApiKey
from .router import NO_RESPONSE

if TYPE_CHECKING:
    from ..cluster.view import ClusterView
    from ..core.config import BrokerConfig
    from ..core.partitions import Partitions
    from ..core.topics import TopicRegistry
    from ..groups import GroupCoordinator
    from ..txn.service import TxnService
    from ..wire.fetch import FetchRequest, FetchResponse
    from ..wire.produce import ProduceRequest
    from .connection import RequestContext

log = logging.getLogger("tidelog.metrics")

LATENCY_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
_I32 = struct.Struct(">i")
_LENGTH_MAGIC = struct.Struct(">i4xb")  # batchLength, (leader epoch), magic
_BATCH_MIN = 61  # a v2 batch header
_perf = time.perf_counter


def api_name(key: int) -> str:
    """Kafka's name for an API key: 0 -> Produce, 2 -> ListOffsets."""
    try:
        return "".join(w.capitalize() for w in ApiKey(key).name.split("_"))
    except ValueError:
        return f"Api{key}"


def records_in(data: bytes | bytearray | memoryview | None) -> tuple[int, int]:
    """(bytes, records) of a produced record set, from batch headers only. v2 batches give their
    recordsCount; a magic 0/1 message set counts one per top-level message (a compressed wrapper
    counts as one)."""
    if data is None:
        return 0, 0
    n = len(data)
    pos = count = 0
    length_magic = _LENGTH_MAGIC.unpack_from
    records_count = _I32.unpack_from
    while pos + 17 <= n:
        length, magic = length_magic(data, pos + 8)
        if length <= 0:
            break
        count += records_count(data, pos + 57)[0] if magic == 2 and pos + _BATCH_MIN <= n else 1
        pos += 12 + length
    return n, count


class RequestStats:
    """Per-API latency histogram as plain lists (no locks: one event loop). `buckets[api]` holds
    the non-cumulative bucket counts (the last is +Inf); the count is their sum. `versions`
    counts the requests of each (api, version): which protocol versions clients use."""

    __slots__ = ("sums", "buckets", "versions")

    def __init__(self) -> None:
        self.sums: dict[int, list[float]] = {}
        self.buckets: dict[int, list[int]] = {}
        self.versions: dict[tuple[int, int], int] = {}

    def slot(self, api_key: int) -> tuple[list[int], list[float]]:
        if api_key not in self.buckets:
            self.buckets[api_key] = [0] * (len(LATENCY_BUCKETS) + 1)
            self.sums[api_key] = [0.0]
        return self.buckets[api_key], self.sums[api_key]

    def observe(self, api_key: int, seconds: float) -> None:
        buckets, total = self.slot(api_key)
        buckets[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        total[0] += seconds


class TopicStats:
    """Bytes in/out and records in per topic, added per partition of a request."""

    def __init__(self) -> None:
        self.bytes_in: dict[str, int] = {}
        self.messages_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}

    def produced(self, topic: str, nbytes: int, nrecords: int) -> None:
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + nbytes
        self.messages_in[topic] = self.messages_in.get(topic, 0) + nrecords

    def fetched(self, topic: str, nbytes: int) -> None:
        self.bytes_out[topic] = self.bytes_out.get(topic, 0) + nbytes


class Metrics:
    """Prometheus metrics: a stage of the request pipeline (`stage`: per-API latency, bytes and
    records per topic from batch headers) and gauges read at scrape time from the parts the
    composition root gives it."""

    def __init__(
        self,
        config: BrokerConfig,
        topics: TopicRegistry,
        partitions: Partitions,
        groups: GroupCoordinator,
        txn: TxnService,
        connections: Sized,
        cluster: ClusterView,
        collectors: Sequence[Collector] = (),
    ) -> None:
        """`cluster`: the cluster view (replication gauges when it is a cluster member);
        `collectors`: more numbers read at scrape time (the schema registry's)."""
        self.topic_registry = topics
        self.partitions = partitions
        self.groups = groups
        self.txn = txn
        self.connections = connections
        self.cluster = cluster
        self.listener: str | None = config["metrics.listener"]
        self.requests = RequestStats()
        self.topics = TopicStats()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(self))
        for collector in collectors:
            self.registry.register(collector)
        ProcessCollector(namespace="tidelog", registry=self.registry)
        self.server: asyncio.base_events.Server | None = None
        self.bound: tuple[str, int] | None = None

    # ---- lifecycle ----------------------------------------------------------------------
    async def start(self) -> None:
        if not self.listener:
            return
        host, _, port = self.listener.rpartition(":")
        if host.startswith("http://"):
            host = host[len("http://") :]
        self.server = await asyncio.start_server(self._serve, host.strip("[]") or None, int(port), reuse_address=True)
        self.bound = self.server.sockets[0].getsockname()[:2]
        log.info("metrics on http://%s:%d/metrics", *self.bound)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            try:
                await asyncio.wait_for(self.server.wait_closed(), 2)
            except (TimeoutError, Exception):  # noqa: BLE001
                pass
            self.server = None

    # ---- instrumentation ----------------------------------------------------------------
    def stage(self, api_key: int, handle: Callable[..., Any]) -> Callable[..., Any]:
        """The pipeline stage around one route's handler (none without a metrics listener)."""
        return self._timed(api_key, handle) if self.listener else handle

    def _timed(self, api_key: int, handle: Callable[..., Any]) -> Callable[..., Any]:
        buckets, total = self.requests.slot(api_key)
        versions = self.requests.versions
        counters: dict[ApiKey, Callable[[Any, Any], None]] = {
            ApiKey.PRODUCE: self._count_produce,
            ApiKey.FETCH: self._count_fetch,
        }
        after = counters.get(ApiKey(api_key))
        bounds = LATENCY_BUCKETS
        where = bisect.bisect_left

        def count(request: Any, result: Any) -> None:
            try:
                if after is not None:
                    after(request, result)
            except Exception:
                log.exception("metrics: counting api %d failed", api_key)

        def done(t0: float, request: Any, fut: asyncio.Future[Any]) -> None:
            dt = _perf() - t0
            buckets[where(bounds, dt)] += 1
            total[0] += dt
            if after is not None and not fut.cancelled() and fut.exception() is None:
                count(request, fut.result())

        def timed(ctx: RequestContext, request: Any) -> Any:
            t0 = _perf()
            key = (api_key, ctx.header.api_version)
            versions[key] = versions.get(key, 0) + 1
            result = handle(ctx, request)
            if hasattr(result, "__await__"):
                fut = asyncio.ensure_future(result)
                fut.add_done_callback(lambda f: done(t0, request, f))
                return fut
            dt = _perf() - t0
            buckets[where(bounds, dt)] += 1
            total[0] += dt
            if after is not None:
                count(request, result)
            return result

        return timed

    def _count_produce(self, request: ProduceRequest, response: Any) -> None:
        # `response`: a ProduceResponse, or NO_RESPONSE (acks=0)
        failed: set[tuple[str, int]] = set()
        if response is not NO_RESPONSE:  # acks=0 has no response: count what was sent
            for t in response.responses:
                for p in t.partition_responses:
                    if p.error_code:
                        failed.add((t.name, p.index))
        produced = self.topics.produced
        for t in request.topic_data:
            nbytes = nrecords = 0
            for p in t.partition_data:
                if failed and (t.name, p.index) in failed:
                    continue
                b, r = records_in(p.records)
                nbytes += b
                nrecords += r
            if nbytes:
                produced(t.name, nbytes, nrecords)

    def _count_fetch(self, request: FetchRequest, response: FetchResponse) -> None:
        by_id = self.topic_registry.by_id
        for t in response.responses:
            name = t.topic
            if not name and t.topic_id is not None:
                topic = by_id.get(t.topic_id)
                name = topic.name if topic is not None else str(t.topic_id)
            nbytes = 0
            for p in t.partitions:
                if p.records:
                    nbytes += p.records_size if p.records_size is not None else sum(len(c) for c in p.records)
            if nbytes:
                self.topics.fetched(name, nbytes)

    # ---- HTTP ---------------------------------------------------------------------------
    def render(self) -> bytes:
        return generate_latest(self.registry)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            method, path, *_ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            path = path.split("?", 1)[0]
            if method not in ("GET", "HEAD") or path not in ("/metrics", "/"):
                status, ctype, body = "404 Not Found", "text/plain", b"not found: try /metrics\n"
            else:
                status, ctype, body = "200 OK", CONTENT_TYPE_LATEST, self.render()
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                f"Connection: close\r\n\r\n".encode()
                + (body if method != "HEAD" else b"")
            )
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        except Exception:
            log.exception("metrics scrape failed")
        finally:
            writer.close()


class BrokerCollector:
    """Everything read from broker state at scrape time."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        conns = GaugeMetricFamily("tidelog_connections", "Open client connections")
        conns.add_metric([], len(self.metrics.connections))
        yield conns
        for section in (
            self._requests,
            self._topics,
            self._partitions,
            self._groups,
            self._transactions,
            self._replication,
        ):
            try:
                families = list(section())  # a section that fails is left out, the others still served
            except Exception:
                log.exception("metrics: %s failed", section.__name__)
                continue
            yield from families

    def _requests(self) -> Iterator[Metric]:
        s = self.metrics.requests
        h = HistogramMetricFamily(
            "tidelog_request_latency_seconds", "Time from handler call to response ready, per API", labels=["api"]
        )
        for key in sorted(s.buckets):
            if not any(s.buckets[key]):
                continue
            cum, acc = [], 0
            for bound, n in zip((*map(str, LATENCY_BUCKETS), "+Inf"), s.buckets[key]):
                acc += n
                cum.append((bound, acc))
            h.add_metric([api_name(key)], cum, s.sums[key][0])
        yield h
        c = CounterMetricFamily(
            "tidelog_requests_by_version", "Requests handled, per API and version", labels=["api", "version"]
        )
        for (key, version), n in sorted(s.versions.items()):
            c.add_metric([api_name(key), str(version)], n)
        yield c

    def _topics(self) -> Iterator[Metric]:
        t = self.metrics.topics
        for name, data, doc in (
            ("tidelog_topic_bytes_in", t.bytes_in, "Record bytes appended by Produce"),
            ("tidelog_topic_messages_in", t.messages_in, "Records appended by Produce"),
            ("tidelog_topic_bytes_out", t.bytes_out, "Record bytes returned by Fetch"),
        ):
            c = CounterMetricFamily(name, doc, labels=["topic"])
            for topic, v in sorted(data.items()):
                c.add_metric([topic], v)
            yield c

    def _partitions(self) -> Iterator[Metric]:
        fams = {
            "size": GaugeMetricFamily(
                "tidelog_log_size_bytes", "Bytes of a partition's segments", labels=["topic", "partition"]
            ),
            "segments": GaugeMetricFamily(
                "tidelog_log_segments", "Segments of a partition", labels=["topic", "partition"]
            ),
            "start": GaugeMetricFamily("tidelog_log_start_offset", "Log start offset", labels=["topic", "partition"]),
            "end": GaugeMetricFamily("tidelog_log_end_offset", "Log end offset", labels=["topic", "partition"]),
            "hw": GaugeMetricFamily("tidelog_high_watermark", "High watermark", labels=["topic", "partition"]),
            "lso": GaugeMetricFamily(
                "tidelog_last_stable_offset", "Last stable offset (LSO)", labels=["topic", "partition"]
            ),
        }
        partitions = self.metrics.partitions
        if partitions is not None:
            for plog in sorted(partitions.manager.logs(), key=lambda pl: (pl.topic, pl.partition)):
                labels = [plog.topic, str(plog.partition)]
                fams["size"].add_metric(labels, plog.size)
                fams["segments"].add_metric(labels, len(plog.segments))
                fams["start"].add_metric(labels, plog.log_start_offset)
                fams["end"].add_metric(labels, plog.log_end_offset)
                fams["hw"].add_metric(labels, plog.high_watermark)
                fams["lso"].add_metric(labels, plog.last_stable_offset)
        yield from fams.values()

    def _replication(self) -> Iterator[Metric]:
        """Cluster mode: Kafka's replica manager gauges (UnderReplicatedPartitions, OfflinePartitionsCount,
        IsrShrinksPerSec/IsrExpandsPerSec as counters) and each follower's lag on the leader."""
        stats = self.metrics.cluster.replication_stats()
        if stats is None:  # a single node replicates nothing
            return
        under = GaugeMetricFamily(
            "tidelog_under_replicated_partitions", "Partitions led here whose ISR is smaller than their replica set"
        )
        under.add_metric([], stats.under_replicated)
        yield under
        offline = GaugeMetricFamily("tidelog_offline_partitions", "Partitions without a live leader (controller only)")
        if stats.offline is not None:
            offline.add_metric([], stats.offline)
        yield offline
        shrinks = CounterMetricFamily("tidelog_isr_shrinks", "ISR shrinks written by this broker as leader")
        shrinks.add_metric([], stats.isr_shrinks)
        yield shrinks
        expands = CounterMetricFamily("tidelog_isr_expands", "ISR expansions written by this broker as leader")
        expands.add_metric([], stats.isr_expands)
        yield expands
        lag = GaugeMetricFamily(
            "tidelog_follower_lag",
            "Leader's log end offset minus a follower's",
            labels=["topic", "partition", "follower"],
        )
        for t, p, b, behind in stats.follower_lag:
            lag.add_metric([t, str(p), str(b)], behind)
        yield lag

    def _groups(self) -> Iterator[Metric]:
        states = GaugeMetricFamily("tidelog_group_state", "1 for the state each group is in", labels=["group", "state"])
        members = GaugeMetricFamily("tidelog_group_members", "Members of a group", labels=["group"])
        lag = GaugeMetricFamily(
            "tidelog_group_lag", "High watermark minus the committed offset", labels=["group", "topic", "partition"]
        )
        coord = self.metrics.groups
        partitions = self.metrics.partitions
        if coord is not None and getattr(coord, "loaded", False):
            for gid, g in sorted(coord.groups.items()):
                states.add_metric([gid, g.state.value], 1)
                members.add_metric([gid], len(g.members))
            store = coord.store
            if store is not None and partitions is not None:
                for gid, offs in sorted(store.offsets.items()):
                    for (topic, p), v in sorted(offs.items()):
                        plog = partitions.manager.get(topic, p)
                        if plog is not None:
                            lag.add_metric([gid, topic, str(p)], max(plog.high_watermark - v.offset, 0))
        yield states
        yield members
        yield lag

    def _transactions(self) -> Iterator[Metric]:
        pids = GaugeMetricFamily("tidelog_producer_ids", "Live producer ids (idempotent or transactional)")
        tids = GaugeMetricFamily(
            "tidelog_transactional_ids", "Transactional ids with a transaction ongoing or completing"
        )
        n_pids, n_tids = txn_counts(self.metrics.txn)
        pids.add_metric([], n_pids)
        tids.add_metric([], n_tids)
        yield pids
        yield tids


def txn_counts(txn: TxnService | None) -> tuple[int, int]:
    """(live producer ids, active transactional ids) from the txn service; (0, 0) without one.
    The service may offer `metrics_counts()`; a failure reads as zero rather than a failed scrape."""
    if txn is None:
        return 0, 0
    fn = getattr(txn, "metrics_counts", None)
    if fn is None:
        return 0, 0
    try:
        pids, tids = fn()
        return int(pids), int(tids)
    except Exception:
        log.exception("txn service metrics failed")
        return 0, 0
