"""`LogManager`: every partition log under the broker's log dirs, plus the two per-dir files that
make restarts cheap and crash-safe.

Layout of each log dir::

    <topic>-<partition>/                   one PartitionLog each
    <topic>-<partition>.<hex>-delete/      a deleted partition's, being removed (`deleter`)
    .kafka_cleanshutdown                   present only between a clean close and the next start
    recovery-point-offset-checkpoint       offsets below which each partition was fsynced
    log-start-offset-checkpoint            log start offsets moved by DeleteRecords / retention
    replication-offset-checkpoint          high watermarks of replicated logs (cluster mode)

Checkpoint files use Kafka's text format: a version line (`0`), a count line, then one
`<topic> <partition> <offset>` line per partition; written to a temp file, fsynced, renamed.

Start: a log dir with the clean-shutdown marker opens its logs without reading any segment (the
marker is then removed, so a crash before the next clean close is detected). Without it each log
recovers from its checkpointed recovery point (0 when absent: everything is checked).
Close: every log is flushed and closed, checkpoints are written, then the marker.

Hooks: `on_append` (a constructor argument) is called as `fn(topic, partition)` after every append to any
partition (the server wakes long-polling fetches there).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .atomic import replace_file
from .clock import wall_clock_ms
from .config import LogConfig
from .deleter import DirDeleter, is_being_deleted
from .log import PartitionLog

logger = logging.getLogger("tidelog.log")

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")

TopicPartition = tuple[str, int]


_CHECKPOINT_ENTRY = re.compile(r"([A-Za-z0-9._-]{1,249}) (0|[1-9][0-9]{0,9}) (0|[1-9][0-9]{0,18})")


def read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """Entries of a checkpoint file in Kafka's text format: `0` (version), the count, then one
    `<topic> <partition> <offset>` line per entry, every line ended by a newline.

    Parsed exactly as written (`write_checkpoint`), so a damaged file is refused as a whole (with
    a warning, as if absent) rather than half-believed: a cut or garbled tail always loses or
    changes the final newline, and garbage rarely forms a well-formed line."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        if not raw.endswith(b"\n"):
            raise ValueError("does not end with a newline")
        lines = raw[:-1].decode("ascii").split("\n")
        if lines[0] != "0":
            raise ValueError(f"unknown version {lines[0]!r}")
        if not lines[1].isdigit():
            raise ValueError(f"bad count {lines[1]!r}")
        count = int(lines[1])
        if len(lines) != 2 + count:
            raise ValueError(f"{len(lines) - 2} entries, {count} announced")
        out = {}
        for line in lines[2:]:
            m = _CHECKPOINT_ENTRY.fullmatch(line)
            if m is None:
                raise ValueError(f"malformed entry {line!r}")
            out[(m[1], int(m[2]))] = int(m[3])
        if len(out) != count:
            raise ValueError("duplicate entries")
        return out
    except (ValueError, IndexError) as e:
        logger.warning("ignoring malformed checkpoint %s: %s", path, e)
        return {}


def write_checkpoint(path: Path, entries: dict[TopicPartition, int]) -> None:
    replace_file(path, f"0\n{len(entries)}\n" + "".join(f"{t} {p} {o}\n" for (t, p), o in sorted(entries.items())))


class LogManager:
    def __init__(
        self,
        log_dirs: Iterable[str | os.PathLike[str]],
        default_config: LogConfig | None = None,
        *,
        clock_ms: Callable[[], int] | None = None,
        topic_config: Callable[[str], LogConfig | None] | None = None,
        on_append: Callable[[str, int], None] | None = None,
    ) -> None:
        """Open every partition found in `log_dirs` (recovering after a crash).
        `topic_config(topic)` gives a topic's config (None: `default_config`); `on_append(topic,
        partition)` is called after every append to any partition."""
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config or LogConfig()
        self.clock_ms = clock_ms or wall_clock_ms
        self._topic_config = topic_config
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._listener = on_append
        self.deleter = DirDeleter()
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
            self._load_dir(d)

    def _config_for(self, topic: str) -> LogConfig:
        cfg = self._topic_config(topic) if self._topic_config else None
        return cfg or self.default_config

    def _load_dir(self, d: Path) -> None:
        marker = d / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        recovery = read_checkpoint(d / RECOVERY_POINT_CHECKPOINT)
        starts = read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT)
        hws = read_checkpoint(d / REPLICATION_CHECKPOINT)
        for name in sorted(os.listdir(d)):
            if is_being_deleted(name) and (d / name).is_dir():
                self.deleter.schedule(d / name)  # deleted before a crash or a stop: finished now
                continue
            m = _PARTITION_DIR.match(name)
            if not m or not (d / name).is_dir():
                continue
            tp = (m.group(1), int(m.group(2)))
            log = self._open(
                d,
                tp[0],
                tp[1],
                self._config_for(tp[0]),
                recovery_point=recovery.get(tp, 0),
                clean_shutdown=clean,
                log_start_offset=starts.get(tp, 0),
                hw_checkpoint=hws.get(tp),
            )
            self._logs[tp] = log
        if not clean and self._logs:
            logger.warning("%s: no clean shutdown marker; logs were recovered from their recovery points", d)
        if clean:
            marker.unlink()
        self._checkpoint_dir(d)

    def _open(self, d: Path, topic: str, partition: int, config: LogConfig, **kw: Any) -> PartitionLog:
        """A log of this manager: opened with its callbacks (appends, log start changes)."""
        listener = self._listener
        return PartitionLog.open(
            d,
            topic,
            partition,
            config,
            self.clock_ms,
            on_append=(lambda lg: listener(lg.topic, lg.partition)) if listener else None,
            on_log_start_offset_change=lambda lg: self.checkpoint(),
            **kw,
        )

    # -- partitions ----------------------------------------------------------------------------

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, config: LogConfig | None = None) -> PartitionLog:
        log = self._logs.get((topic, partition))
        if log is None:
            # The dir with the fewest logs; one dir needs no count (a scan of every log per new
            # log made creating a topic of N partitions quadratic: minutes for thousands).
            d = (
                self.log_dirs[0]
                if len(self.log_dirs) == 1
                else min(self.log_dirs, key=lambda p: sum(1 for lg in self._logs.values() if lg.dir.parent == p))
            )
            log = self._open(d, topic, partition, config or self._config_for(topic))
            self._logs[(topic, partition)] = log
        return log

    def delete(self, topic: str, partition: int, checkpoint: bool = True) -> bool:
        """Forget the partition; its directory is renamed now and removed in the background
        (`deleter`), so the caller never waits for its files to go."""
        log = self._logs.pop((topic, partition), None)
        if log is None:
            return False
        renamed = log.delete()
        if renamed is not None:
            self.deleter.schedule(renamed)
        if checkpoint:
            self.checkpoint()
        return True

    def delete_topic(self, topic: str) -> int:
        """Delete every partition of `topic`, then checkpoint once (not once per partition: that
        was quadratic, minutes for a topic of thousands of partitions)."""
        parts = [p for (t, p) in self._logs if t == topic]
        for p in parts:
            self.delete(topic, p, checkpoint=False)
        if parts:
            self.checkpoint()
        return len(parts)

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        for (t, _p), log in self._logs.items():
            if t == topic:
                log.update_config(config)

    def logs(self) -> Iterator[PartitionLog]:
        return iter(list(self._logs.values()))

    def __contains__(self, tp: TopicPartition) -> bool:
        return tp in self._logs

    # -- maintenance ---------------------------------------------------------------------------

    def apply_retention(self, now_ms: int | None = None) -> int:
        """Retention for every log (and compaction for compacted topics). Segments deleted."""
        now = self.clock_ms() if now_ms is None else now_ms
        n = 0
        for log in self.logs():
            n += log.apply_retention(now)
            if log.config.compact:
                log.compact(now)
        return n

    def logs_due_for_flush(self, now_ms: int | None = None) -> list[PartitionLog]:
        """Logs whose flush.ms elapsed with unflushed data: call their flush() (a worker thread)."""
        now = self.clock_ms() if now_ms is None else now_ms
        return [log for log in self.logs() if log.flush_due(now)]

    def checkpoint(self) -> None:
        """Write both checkpoint files of every log dir."""
        for d in self.log_dirs:
            self._checkpoint_dir(d)

    def _checkpoint_dir(self, d: Path) -> None:
        mine = {tp: log for tp, log in self._logs.items() if log.dir.parent == d}
        write_checkpoint(d / RECOVERY_POINT_CHECKPOINT, {tp: lg.recovery_point for tp, lg in mine.items()})
        write_checkpoint(d / LOG_START_OFFSET_CHECKPOINT, {tp: lg.log_start_offset for tp, lg in mine.items()})
        hws = {tp: lg.high_watermark for tp, lg in mine.items() if lg.replicated}
        if hws or (d / REPLICATION_CHECKPOINT).exists():
            write_checkpoint(d / REPLICATION_CHECKPOINT, hws)

    def close(self) -> None:
        """Clean shutdown: flush and close every log, checkpoint, write the marker. Directories
        still being deleted are left for the next start."""
        self.deleter.stop()
        for log in self.logs():
            log.close()
        self.checkpoint()
        for d in self.log_dirs:
            with open(d / CLEAN_SHUTDOWN_FILE, "w") as f:
                f.flush()
                os.fsync(f.fileno())
        self._logs.clear()
