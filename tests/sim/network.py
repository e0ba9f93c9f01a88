"""The simulated network: TCP connections between simulated processes, with latency, partitions
and resets, carrying the real Kafka protocol bytes.

- A connection is two byte streams, each delivered in order (as TCP) after a random latency;
  bytes written while the two ends are cut off from each other are held and delivered, in order,
  when the partition heals (a long partition is ended by the applications' own timeouts, which
  close the connection).
- The server end of a connection to a broker is the broker's real `KafkaConnection` protocol on
  a `SimTransport` (no socket: Fetch data is read into bytes instead of sendfile); the client end
  is an asyncio StreamReader/StreamWriter pair, what `asyncio.open_connection` returns, so the
  brokers' own `Peer` code (replica fetchers, marker sender, KIP-890 verifier) and the simulated
  clients run unchanged.
- Delivery happens in the receiving process's context: a paused process receives nothing until
  it resumes (its kernel would buffer), a dead one nothing at all, and the other end of each of
  its connections sees a reset.
- Connecting to an address where no process listens is refused; across a partition it hangs (the
  caller's timeout ends it).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

from .loop import Process, SimLoop


class SimTransport(asyncio.Transport):
    def __init__(self, link: Link, side: int) -> None:
        super().__init__()
        self.link = link
        self.side = side
        self._paused = False
        self._pending: list[bytes] = []

    # ---- writing ----
    def write(self, data: Any) -> None:
        self.link.net._send(self.link, self.side, bytes(data))

    def writelines(self, chunks: Any) -> None:
        data = b"".join(bytes(c) for c in chunks)
        if data:
            self.write(data)

    def can_write_eof(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def close(self) -> None:
        self.link.net._close(self.link, self.side)

    def abort(self) -> None:
        self.close()

    def is_closing(self) -> bool:
        return self.link.closed[self.side]

    # ---- reading ----
    def pause_reading(self) -> None:
        self._paused = True

    def resume_reading(self) -> None:
        self._paused = False
        pending, self._pending = self._pending, []
        for data in pending:
            self.link.protocols[self.side].data_received(data)

    def is_reading(self) -> bool:
        return not self._paused

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "peername":
            return (self.link.procs[1 - self.side].name, 0)
        if name == "sockname":
            return (self.link.procs[self.side].name, 0)
        return default


class Link:
    """One TCP connection: side 0 is the client, side 1 the server."""

    def __init__(self, net: Network, client: Process, server: Process) -> None:
        self.net = net
        self.procs = (client, server)
        self.protocols: list[Any] = [None, None]
        self.transports = (SimTransport(self, 0), SimTransport(self, 1))
        self.closed = [False, False]
        self.reset = False
        self.last_arrival = [0.0, 0.0]  # per direction (index = receiving side)
        self.held: list[list[tuple[str, Any]]] = [[], []]  # per receiving side, while cut off


Listener = tuple[Process, Callable[[], asyncio.Protocol]]


class Network:
    def __init__(self, loop: SimLoop, rng: random.Random) -> None:
        self.loop = loop
        self.rng = rng
        self.listeners: dict[tuple[str, int], Listener] = {}
        self.links: list[Link] = []
        self.cut: set[frozenset[str]] = set()  # pairs of process names that cannot reach each other
        self.isolated: set[str] = set()  # names cut off from every other process
        self.latency = (0.0002, 0.002)
        self.slow: dict[str, float] = {}  # process name -> extra latency

    # ---- topology ---------------------------------------------------------------------------
    def listen(self, host: str, port: int, proc: Process, factory: Callable[[], asyncio.Protocol]) -> None:
        self.listeners[(host, port)] = (proc, factory)

    def reachable(self, a: str, b: str) -> bool:
        if a == b:
            return True
        if a in self.isolated or b in self.isolated:
            return False
        return frozenset((a, b)) not in self.cut

    def heal(self) -> None:
        self.cut.clear()
        self.isolated.clear()
        self._release_held()

    def isolate(self, name: str) -> None:
        self.isolated.add(name)

    def unisolate(self, name: str) -> None:
        self.isolated.discard(name)
        self._release_held()

    def sever(self, a: str, b: str) -> None:
        self.cut.add(frozenset((a, b)))

    def mend(self, a: str, b: str) -> None:
        self.cut.discard(frozenset((a, b)))
        self._release_held()

    def _release_held(self) -> None:
        for link in list(self.links):
            if self.reachable(link.procs[0].name, link.procs[1].name):
                for side in (0, 1):
                    held, link.held[side] = link.held[side], []
                    for kind, data in held:
                        self._schedule(link, side, kind, data)

    # ---- connections --------------------------------------------------------------------------
    def connector(self, proc: Process) -> Callable[[str, int], Any]:
        """`asyncio.open_connection` for code running as `proc`."""

        async def connect(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            return await self.open_connection(proc, host, port)

        return connect

    async def open_connection(
        self, proc: Process, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        await asyncio.sleep(self._latency(proc.name, host))
        target = self.listeners.get((host, port))
        if target is None or not target[0].alive:
            raise ConnectionRefusedError(f"{host}:{port}: connection refused")
        server, factory = target
        if not self.reachable(proc.name, server.name):
            await asyncio.Event().wait()  # hangs until the caller gives up
        link = Link(self, proc, server)
        self.links.append(link)
        reader = asyncio.StreamReader(limit=2**30)
        protocol = asyncio.StreamReaderProtocol(reader)
        link.protocols[0] = protocol
        protocol.connection_made(link.transports[0])
        writer = asyncio.StreamWriter(link.transports[0], protocol, reader, self.loop)

        def accept() -> None:
            if link.closed[1]:
                return
            p = factory()
            link.protocols[1] = p
            p.connection_made(link.transports[1])

        self.loop.call_soon(accept, context=server.context)
        return reader, writer

    def _latency(self, a: str, b: str) -> float:
        lo, hi = self.latency
        return self.rng.uniform(lo, hi) + self.slow.get(a, 0.0) + self.slow.get(b, 0.0)

    def _send(self, link: Link, from_side: int, data: bytes) -> None:
        if link.closed[from_side] or link.reset or self.loop.is_closed():
            return
        self._enqueue(link, 1 - from_side, "data", data)

    def _close(self, link: Link, side: int) -> None:
        if link.closed[side] or self.loop.is_closed():  # (a dead process's coroutine, collected)
            return
        link.closed[side] = True
        own = link.protocols[side]
        if own is not None:
            self.loop.call_soon(_lost, link, side, None, context=link.procs[side].context)
        if not link.reset:
            self._enqueue(link, 1 - side, "eof", None)

    def _enqueue(self, link: Link, to_side: int, kind: str, data: Any) -> None:
        if not self.reachable(link.procs[0].name, link.procs[1].name):
            link.held[to_side].append((kind, data))
            return
        self._schedule(link, to_side, kind, data)

    def _schedule(self, link: Link, to_side: int, kind: str, data: Any) -> None:
        # strictly later than the previous delivery: timers due at the same instant may run in
        # any order, and a byte stream must arrive in order
        at = max(
            self.loop.time() + self._latency(link.procs[0].name, link.procs[1].name), link.last_arrival[to_side] + 1e-6
        )
        link.last_arrival[to_side] = at
        self.loop.call_at(at, self._deliver, link, to_side, kind, data, context=link.procs[to_side].context)

    def _deliver(self, link: Link, side: int, kind: str, data: Any) -> None:
        proto = link.protocols[side]
        if proto is None or (link.closed[side] and kind == "data"):
            return
        if kind == "data":
            t = link.transports[side]
            if t._paused:
                t._pending.append(data)
            else:
                proto.data_received(data)
        elif kind == "eof":
            if not link.closed[side]:
                link.closed[side] = True
                _lost(link, side, None)
        elif kind == "reset":
            if not link.closed[side]:
                link.closed[side] = True
                _lost(link, side, ConnectionResetError("connection reset by peer"))

    # ---- process death ------------------------------------------------------------------------
    def process_died(self, proc: Process) -> None:
        """Every connection of `proc` is reset: its peers learn it after a latency (at once
        across a partition they learn nothing until it heals, as with a real RST lost in it)."""
        for link in self.links:
            if proc not in link.procs or link.reset:
                continue
            link.reset = True
            side = 0 if link.procs[0] is proc else 1
            link.closed[side] = True
            other = 1 - side
            if not link.closed[other]:
                link.held[other].clear()
                self._enqueue(link, other, "reset", None)
        self.links = [lk for lk in self.links if not (lk.reset and all(lk.closed))]
        for key, (p, _f) in list(self.listeners.items()):
            if p is proc:
                del self.listeners[key]

    def prune(self) -> None:
        self.links = [lk for lk in self.links if not all(lk.closed)]


def _lost(link: Link, side: int, exc: BaseException | None) -> None:
    proto = link.protocols[side]
    if proto is not None:
        try:
            proto.connection_lost(exc)
        finally:
            link.protocols[side] = None
