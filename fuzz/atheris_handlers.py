"""Coverage-guided fuzzing (atheris) of every routed handler, called as the connection calls it,
against a real in-process `Broker` on a real temp data dir. Optional and long; not part of CI.

    .venv/bin/pip install atheris
    .venv/bin/python fuzz/atheris_handlers.py -atheris_runs=1000000 -rss_limit_mb=2048 -timeout=10 [corpus-dir]
    .venv/bin/python fuzz/atheris_handlers.py --replay crash-<sha> [fuzz-history-*.bin ...]

An input is a sequence of size-prefixed frames (or, when it does not split into frames, one
frame), all sent on one connection. Each frame goes through `KafkaConnection._dispatch`'s steps:
the connection's own `FrameDecoder`, the security gate, `peek_key_version`, the route, the header,
`route.decode`; then the real handler inside the running event loop (`route.pipeline(ctx, request)`
or `security.handle`, with a real `KafkaConnection` as `ctx.connection`); awaitables run as tasks,
concurrently as pipelined requests do; each result is encoded with `route.encode` and the
response header, and Fetch file slices are read (`materialize`). When a step closes the
connection (bad header, unsupported API, undecodable body, `close_with` from a handler), the
remaining frames are dropped and unfinished tasks cancelled, as `connection_lost` does.

A finding (raised, so atheris writes crash-*) is exactly what the connection would log at ERROR
or turn into a dropped/broken connection without a Kafka answer:
- an exception from the handler call, from its awaitable, or from encoding its result
  (`_dispatch`/`_completed` log a traceback at ERROR; a sync result's encode is not even caught);
- a `peek_key_version` error other than `HeaderError` (it would escape `data_received`);
- anything logged by `tidelog.*` at ERROR or with a traceback (e.g. a failed coordinator task),
  and any call to the loop's exception handler (an exception in a timer callback, a task
  exception never retrieved);
- a hang: a handler's awaitable not done after HANG_S of virtual time (below). RSS above
  -rss_limit_mb and a real-time stall above -timeout are caught by libFuzzer.
Kafka error codes and closed connections (with their WARNING) are the intended answers to bad input.

Group requests may name the member "@" (MEMBER_TOKEN): the harness replaces it, and the
generation, with what the connection's last JoinGroup answer gave, as a client echoes them (a
mutated frame cannot guess the broker's random member ids), and such a frame waits for the
answers before it. Seeds include a consumer's whole group life written that way.

Virtual time: the event loop's clock jumps to its next timer whenever it would sleep with nothing
to do (no ready callback, no I/O, no executor job running), so a Fetch long-poll, a JoinGroup
waiting out a rebalance or a member's session timeout cost no real time. No Kafka wait field
exceeds int32 ms (24.8 days); HANG_S = 10 of those, so a request not answered by then never will
be. The partitions' 1-second housekeeping task is cancelled (it is not a handler, and would make
each virtual day cost 86,400 passes), and the other periodic tasks (txn abort/expiry, offsets
expiry) are set to one virtual day.

Bounded state: the broker and its data dir are stopped, deleted and recreated every RESET_EVERY
inputs (1000), so topics, groups, producers and ACLs made by the fuzzer never accumulate beyond
that; internal topics have 3 partitions instead of 50 (faster start). Brokers take turns: a plain
PLAINTEXT listener; the same with an ACL authorizer (allow.everyone.if.no.acl.found=true, so
requests reach the handlers unless the fuzzer's own CreateAcls denies them); a SASL_PLAINTEXT
listener with that authorizer (PLAIN user admin; every seed also comes prefixed with its
SaslHandshake + SaslAuthenticate, so inputs get past authentication). Since a finding may
depend on earlier inputs, every finding also writes fuzz-history-<n>.bin (the inputs since the
broker was created, and its mode); `--replay` runs such a file, or a single crash input, on a
fresh broker. Data dirs go under $TIDELOG_FUZZ_DIR (default: the system temp dir).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import io
import json
import logging
import os
import selectors
import shutil
import struct
import sys
import tempfile
import time
from inspect import isawaitable
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["tidelog", "kio"]):
    import pkgutil

    from tidelog.core.admin import raise_open_file_limit
    from tidelog.core.config import load_config
    from tidelog.server.broker import Broker
    from tidelog.server.connection import API_VERSIONS, FETCH, KafkaConnection, RequestContext
    from tidelog.server.router import NO_RESPONSE
    from tidelog.server.sendfile import has_file_chunks, materialize
    from tidelog.wire import control
    from tidelog.wire.frame import FrameError
    from tidelog.wire.header import HeaderError, parse_request_header, peek_key_version, response_header
    from tidelog.wire.schemas import request_schema, response_schema

    for _pkg in ("wire", "log", "txn", "server"):  # every module a handler can reach
        _p = __import__(f"tidelog.{_pkg}", fromlist=["_"])
        for _m in pkgutil.walk_packages(_p.__path__, f"tidelog.{_pkg}."):
            if ".cli" not in _m.name:
                __import__(_m.name)
    for _k in range(80):  # kio schemas are imported on first use: import them here, instrumented
        for _v in range(20):
            try:
                if request_schema(_k, _v) is not None:
                    control._reader(_k, _v)
                    response_schema(_k, _v)
            except Exception:  # noqa: BLE001 - a version without a schema
                pass

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fuzz"))
from corpus import CAPTURES, load_seeds
from schema_seeds import schema_seeds

RESET_EVERY = 1000
MAX_FRAMES = 16
HANG_S = 10 * (2**31 - 1) / 1000  # ten times the longest wait a Kafka int32 ms field can ask for
DAY_MS = str(24 * 3600 * 1000)
MODES = ("plain", "authorizer", "sasl")
SASL_USER, SASL_PASSWORD = "admin", "admin-secret"
HISTORY_MAGIC = b"TLFZHIST"
PEER = ("127.0.0.1", 40000)
MEMBER_TOKEN = "@"  # in a group request: "the member id (and generation) the broker last gave me"
GROUP_APIS = (8, 11, 12, 13, 14, 28)  # OffsetCommit, JoinGroup, Heartbeat, LeaveGroup, SyncGroup, TxnOffsetCommit
GENERATION_FIELDS = ("generation_id", "generation_id_or_member_epoch")


class Finding(Exception):
    pass


# ---- a real event loop whose clock skips idle waits ------------------------------------------
class _SkippingSelector(selectors.DefaultSelector):
    loop: VirtualTimeLoop | None = None

    def select(self, timeout=None):
        events = super().select(0)
        loop = self.loop
        if events or timeout == 0 or loop is None:
            return events
        if loop.executor_jobs or timeout is None:  # a thread will wake us: really wait
            return super().select(timeout)
        loop.offset += timeout
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self.offset = 0.0
        self.executor_jobs = 0
        selector = _SkippingSelector()
        super().__init__(selector)
        selector.loop = self

    def time(self) -> float:
        return time.monotonic() + self.offset

    def run_in_executor(self, executor, func, *args):
        fut = super().run_in_executor(executor, func, *args)
        self.executor_jobs += 1
        fut.add_done_callback(self._job_done)
        return fut

    def _job_done(self, _fut) -> None:
        self.executor_jobs -= 1


class ErrorLog(logging.Handler):
    """What connection.py's callers would see as a broker error: ERROR records or tracebacks."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.errors: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.errors.append(self.format(record))


# ---- the target: one broker at a time ----------------------------------------------------------
class Target:
    def __init__(self) -> None:
        raise_open_file_limit()  # as `tidelog serve` does
        self.loop = VirtualTimeLoop()
        asyncio.set_event_loop(self.loop)
        self.loop.set_exception_handler(self._loop_error)
        self.errors = ErrorLog()
        self.errors.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        tl = logging.getLogger("tidelog")
        tl.addHandler(self.errors)
        tl.setLevel(logging.WARNING)
        tl.propagate = False
        self.root = Path(os.environ.get("TIDELOG_FUZZ_DIR") or tempfile.gettempdir())
        self.broker: Broker | None = None
        self.data_dir: Path | None = None
        self.brokers = 0
        self.inputs = 0
        self.mode = MODES[0]
        self.history: list[bytes] = []

    def _loop_error(self, loop, context) -> None:
        exc = context.get("exception")
        self.errors.errors.append(f"event loop: {context.get('message')} {exc!r}")

    def start(self, mode: str | None = None) -> None:
        self.mode = mode or MODES[self.brokers % len(MODES)]
        self.brokers += 1
        self.data_dir = Path(tempfile.mkdtemp(prefix="atheris-handlers-", dir=self.root))
        conf = {
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain."
            "PlainLoginModule required "
            f'user_{SASL_USER}="{SASL_PASSWORD}";',
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.num.partitions": "3",
            "offsets.retention.check.interval.ms": DAY_MS,
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": DAY_MS,
            "transaction.remove.expired.transaction.cleanup.interval.ms": DAY_MS,
        }
        if self.mode in ("authorizer", "sasl"):
            conf.update({"authorizer.class.name": "tidelog", "allow.everyone.if.no.acl.found": "true"})
        self.broker = Broker(load_config(None, [f"{k}={v}" for k, v in conf.items()]))
        self.loop.run_until_complete(self.broker.start())
        parts = self.broker.partitions
        for t in getattr(parts, "_tasks", []):
            t.cancel()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.history = []
        self.check_errors("broker start")

    def stop(self) -> None:
        if self.broker is not None:
            self.loop.run_until_complete(self.broker.stop())
            self.broker = None
        if self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None
        self.check_errors("broker stop")

    def check_errors(self, what: str) -> None:
        if self.errors.errors:
            errs, self.errors.errors = self.errors.errors, []
            raise Finding(f"{what}: logged at ERROR / with a traceback:\n" + "\n".join(errs))

    # ---- one input ------------------------------------------------------------------------
    def run(self, data: bytes) -> None:
        try:
            if self.broker is None or self.inputs % RESET_EVERY == 0:
                self.stop()
                self.start()
            self.inputs += 1
            self.history.append(data)
            self.loop.run_until_complete(self.connection(data))
            self.check_errors("handling")
        except Exception:
            self.dump_history()
            raise

    def dump_history(self) -> None:
        path = Path(f"fuzz-history-{os.getpid()}-{self.inputs}.bin")
        out = bytearray(HISTORY_MAGIC + self.mode.encode().ljust(16))
        for d in self.history:
            out += struct.pack(">i", len(d)) + d
        path.write_bytes(out)
        print(f"== history of this broker ({len(self.history)} inputs, {self.mode}) in {path}", file=sys.stderr)

    async def connection(self, data: bytes) -> None:
        broker = self.broker
        conn = KafkaConnection(broker, "SASL_PLAINTEXT" if self.mode == "sasl" else "PLAINTEXT")
        conn.peer = PEER
        try:
            frames = conn.decoder.feed(data)
        except FrameError:
            frames = []
        if not frames:  # not a frame sequence: the input is one frame
            frames = [data]
        tasks: list[asyncio.Task] = []
        findings: list[Finding] = []
        member: dict = {}  # what a client keeps: the member id and generation JoinGroup gave it
        for frame in frames[:MAX_FRAMES]:
            if tasks and MEMBER_TOKEN.encode() in frame:  # a client waits for its JoinGroup answer
                pending = [t for t in tasks if not t.done()]
                if pending:
                    _done, late = await asyncio.wait(pending, timeout=HANG_S)
                    if late and not conn._closed:
                        raise Finding(f"hang: {len(late)} handler(s) not done after {HANG_S:.0f} s of virtual time")
            if conn._closed:
                break
            t = self.dispatch(conn, frame, findings, member)
            if t is not None:
                tasks.append(t)
        if not tasks:
            return
        pending = set()
        if not conn._closed:
            _done, pending = await asyncio.wait(tasks, timeout=HANG_S)
        hang = bool(pending) and not conn._closed
        for t in tasks:  # the client goes away: connection_lost cancels what is left
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if findings:
            raise findings[0]
        if hang:
            raise Finding(f"hang: {len(pending)} handler(s) not done after {HANG_S:.0f} s of virtual time")

    def dispatch(self, conn: KafkaConnection, frame, findings: list, member: dict) -> asyncio.Task | None:
        """`KafkaConnection._dispatch`, step by step, raising Finding where it would log an error."""
        security = conn.security
        if security is not None and security.raw_frame(frame):
            return None
        try:
            api_key, version, correlation_id = peek_key_version(frame)
        except HeaderError as e:
            conn.close_with(f"bad request header: {e}")
            return None
        route = conn.router.get(api_key)
        if route is None or not route.supports(version):
            if api_key == API_VERSIONS:
                conn._unsupported_api_versions(correlation_id)
                return None
            conn.close_with(f"unsupported api {api_key} v{version}")
            return None
        try:
            header, offset = parse_request_header(frame, route.is_flexible(version))
            request = route.decode(frame, offset, version)
        except Exception as e:  # noqa: BLE001 - as the connection: closes this connection only
            conn.close_with(f"cannot decode api {api_key} v{version}: {e}")
            return None
        if api_key in GROUP_APIS and member:
            request = with_member(request, member)
        ctx = RequestContext(header, conn, conn.broker)
        try:
            result = route.pipeline(ctx, request) if security is None else security.handle(ctx, route, request)
        except Exception as e:
            raise Finding(f"handler for api {api_key} v{version} raised {e!r}") from e
        if result is NO_RESPONSE:
            return None
        if not isawaitable(result):
            self.encode(route, header, result, member)
            return None
        fut = asyncio.ensure_future(result)
        fut.add_done_callback(lambda f: self.completed(f, conn, route, header, findings, member))
        return fut

    def completed(self, fut: asyncio.Future, conn, route, header, findings: list, member: dict) -> None:
        """`KafkaConnection._completed`. After a close the connection ignores the result, but an
        exception nobody retrieves is logged at ERROR when the task is collected: a finding too."""
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:
            f = Finding(f"handler for api {header.api_key} v{header.api_version} failed: {exc!r}")
            f.__cause__ = exc
            findings.append(f)
            return
        res = fut.result()
        if res is NO_RESPONSE or conn._closed:
            return
        try:
            self.encode(route, header, res, member)
        except Finding as f:
            findings.append(f)

    @staticmethod
    def encode(route, header, result, member: dict) -> None:
        """`KafkaConnection._fill`, with file slices read as on the copy path."""
        if header.api_key == 11:  # JoinGroup: remember the member id, as a client does
            get = result.get if isinstance(result, dict) else (lambda k: getattr(result, k, None))
            if get("member_id"):
                member.update(member_id=get("member_id"), generation=get("generation_id"))
        try:
            body = route.encode(result, header.api_version)
            response_header(header.correlation_id, header.api_key, route.is_flexible(header.api_version))
            if not isinstance(body, (bytes, bytearray)) and header.api_key == FETCH and has_file_chunks(body):
                materialize(body)
        except Exception as e:
            raise Finding(f"encoding the response to api {header.api_key} v{header.api_version} failed: {e!r}") from e


def with_member(request, member: dict):
    """`request` with MEMBER_TOKEN member ids (and their generation) replaced by the connection's
    own: mutated frames cannot guess the random member ids a broker hands out."""
    changes = {}
    if getattr(request, "member_id", None) == MEMBER_TOKEN:
        changes["member_id"] = member["member_id"]
        for g in GENERATION_FIELDS:
            if hasattr(request, g) and member.get("generation") is not None:
                changes[g] = member["generation"]
    for field in ("assignments", "members"):  # SyncGroup's assignments, LeaveGroup v3+'s members
        items = getattr(request, field, None)
        if isinstance(items, tuple) and any(getattr(i, "member_id", None) == MEMBER_TOKEN for i in items):
            changes[field] = tuple(
                dataclasses.replace(i, member_id=member["member_id"])
                if getattr(i, "member_id", None) == MEMBER_TOKEN
                else i
                for i in items
            )
    return dataclasses.replace(request, **changes) if changes else request


# ---- seeds -----------------------------------------------------------------------------------
def size_prefixed(frames) -> bytes:
    return b"".join(struct.pack(">i", len(f)) + f for f in frames)


def sessions(window: int = 6) -> list[bytes]:
    """Consecutive frames of each real client's session (group joins, transactions, ...)."""
    by_client: dict[str, list[bytes]] = {}
    for line in CAPTURES.read_text().splitlines():
        rec = json.loads(line)
        by_client.setdefault(rec["client"], []).append(base64.b64decode(rec["frame_b64"]))
    out = []
    for frames in by_client.values():
        for i in range(0, len(frames), window):
            out.append(size_prefixed(frames[i : i + window]))
    return out


def request_frame(key: int, version: int, data: dict) -> bytes:
    from kio.serial import entity_writer

    cls = request_schema(key, version)
    buf = io.BytesIO()
    entity_writer(cls)(buf, control.build(cls, data))
    head = struct.pack(">hhih", key, version, 7, 4) + b"fuzz" + (b"\0" if control.flexible(key, version) else b"")
    return head + buf.getvalue()


def group_flows() -> list[bytes]:
    """A consumer's life in a group at a few versions: JoinGroup (twice from v4: MEMBER_ID_REQUIRED
    first), SyncGroup, Heartbeat, OffsetCommit, OffsetFetch, LeaveGroup, naming MEMBER_TOKEN."""
    me, topic = MEMBER_TOKEN, [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5}]}]
    out = []
    for join, sync, hb, commit, fetch, leave in ((1, 1, 1, 2, 1, 1), (5, 3, 3, 7, 5, 3), (7, 5, 4, 8, 7, 5)):
        protocols = [{"name": "range", "metadata": b"\0\0\0\0\0\1\0\1t\0\0\0\0"}]
        j = {
            "group_id": "g",
            "session_timeout": 10000,
            "rebalance_timeout": 30000,
            "protocol_type": "consumer",
            "protocols": protocols,
        }
        frames = [request_frame(11, join, {**j, "member_id": ""})]
        if join >= 4:
            frames.append(request_frame(11, join, {**j, "member_id": me}))
        frames += [
            request_frame(
                14,
                sync,
                {
                    "group_id": "g",
                    "generation_id": 0,
                    "member_id": me,
                    "protocol_type": "consumer",
                    "protocol_name": "range",
                    "assignments": [{"member_id": me, "assignment": b"a"}],
                },
            ),
            request_frame(12, hb, {"group_id": "g", "generation_id": 0, "member_id": me}),
            request_frame(
                8,
                commit,
                {
                    "group_id": "g",
                    "generation_id_or_member_epoch": 0,
                    "member_id": me,
                    "retention_time": -1,
                    "topics": topic,
                },
            ),
            request_frame(9, fetch, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0]}]}),
            request_frame(13, leave, {"group_id": "g", "member_id": me, "members": [{"member_id": me}]}),
        ]
        out.append(size_prefixed(frames))
    return out


def sasl_plain_login() -> list[bytes]:
    """SaslHandshake v1 (PLAIN) and SaslAuthenticate v2 with the harness' user."""
    mech = b"PLAIN"
    handshake = struct.pack(">hhih", 17, 1, 1, 4) + b"fuzz" + struct.pack(">h", len(mech)) + mech
    token = b"\0" + SASL_USER.encode() + b"\0" + SASL_PASSWORD.encode()
    auth = struct.pack(">hhih", 36, 2, 2, 4) + b"fuzz\0" + bytes([len(token) + 1]) + token + b"\0"
    return [handshake, auth]


def seeds(router) -> list[bytes]:
    singles = load_seeds() + schema_seeds(router.version_ranges())
    login = size_prefixed(sasl_plain_login())
    return (
        singles
        + [size_prefixed([f]) for f in singles]
        + sessions()
        + group_flows()
        + [login + size_prefixed([f]) for f in singles]
        + [login + w for w in sessions()]
    )


# ---- entry points ----------------------------------------------------------------------------
TARGET: Target | None = None


def one_input(data: bytes) -> None:
    TARGET.run(data)  # type: ignore[union-attr]


def replay(paths: list[str]) -> int:
    target = Target()
    status = 0
    for p in paths:
        raw = Path(p).read_bytes()
        target.stop()
        if raw.startswith(HISTORY_MAGIC):
            mode = raw[8:24].decode().strip()
            inputs, pos = [], 24
            while pos < len(raw):
                n = struct.unpack_from(">i", raw, pos)[0]
                inputs.append(raw[pos + 4 : pos + 4 + n])
                pos += 4 + n
        else:
            mode, inputs = None, [raw]
        for m in [mode] if mode else list(MODES):
            target.stop()
            target.start(m)
            target.inputs = 1
            try:
                for d in inputs:
                    target.loop.run_until_complete(target.connection(d))
                    target.check_errors("handling")
                print(f"{p} ({m}, {len(inputs)} inputs): no finding")
            except Finding as f:
                status = 1
                print(f"{p} ({m}): FINDING {f}")
                import traceback

                traceback.print_exception(f)
    target.stop()
    return status


def main() -> None:
    global TARGET
    if len(sys.argv) > 1 and sys.argv[1] == "--replay":
        sys.exit(replay(sys.argv[2:]))
    TARGET = Target()
    TARGET.start()
    corpus = Path(tempfile.mkdtemp(prefix="atheris-handlers-corpus-"))
    for i, seed in enumerate(seeds(TARGET.broker.router)):
        (corpus / f"seed-{i}").write_bytes(seed)
    # A corpus dir given first collects what the run finds (and is read back by the next run);
    # the seeds are always read too.
    atheris.Setup([sys.argv[0], *sys.argv[1:], str(corpus)], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
