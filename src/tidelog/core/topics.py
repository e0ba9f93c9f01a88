"""The topic registry: names, ids, partition counts and per-topic config overrides, on disk.

Stored as `tidelog-topics.json` in the first log directory, rewritten atomically (temp file,
fsync, rename, fsync of the directory) on every change, so a crash leaves either the old or the
new registry, never a torn one. `meta.properties` beside it records cluster.id and node.id as
Kafka does. Partition data itself belongs to the log engine.
"""

from __future__ import annotations

import base64
import json
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..log.atomic import replace_file

REGISTRY = "tidelog-topics.json"
OFFSETS_TOPIC = "__consumer_offsets"  # the group coordinator's log
STATE_TOPIC = "__transaction_state"  # the transaction coordinator's log
SHARE_STATE_TOPIC = "__share_group_state"  # the share coordinator's log (share groups, KIP-932)
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, STATE_TOPIC, SHARE_STATE_TOPIC})
_LEGAL = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def topic_name_error(name: str) -> str | None:
    """Kafka's rules for a topic name; None when legal."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return "topic name cannot be '.' or '..'"
    if len(name) > 249:
        return "topic name longer than 249 characters"
    bad = set(name) - _LEGAL
    if bad:
        return f"topic name {name!r} has illegal characters {''.join(sorted(bad))!r}"
    return None


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class TopicRegistry:
    def __init__(self, data_dir: Path, node_id: int, cluster_id: str | None = None) -> None:
        self.dir = Path(data_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.topics: dict[str, Topic] = {}
        self.by_id: dict[uuid.UUID, Topic] = {}
        self.cluster_id = self._load_meta(node_id, cluster_id)
        self._load()

    def _load_meta(self, node_id: int, cluster_id: str | None) -> str:
        meta = self.dir / "meta.properties"
        props: dict[str, str] = {}
        if meta.exists():
            for line in meta.read_text().splitlines():
                if "=" in line and not line.startswith("#"):
                    k, v = line.split("=", 1)
                    props[k.strip()] = v.strip()
        changed = False
        if "cluster.id" not in props:
            props["cluster.id"] = cluster_id or base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            props["node.id"] = str(node_id)
            props["version"] = "1"
            changed = True
        if "directory.id" not in props:
            # this directory's identity (Kafka's directory.id): a broker that comes back with
            # another one lost its disk, and holds nothing of what it held (cluster mode)
            props["directory.id"] = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            changed = True
        if changed:
            replace_file(meta, "".join(f"{k}={v}\n" for k, v in props.items()).encode(), sync_dir=True)
        self.directory_id = props["directory.id"]
        return props["cluster.id"]

    def set_cluster_id(self, cluster_id: str) -> None:
        """Adopt the cluster's id (a new broker joining a cluster); rewrites meta.properties."""
        meta = self.dir / "meta.properties"
        lines = [
            ln for ln in (meta.read_text().splitlines() if meta.exists() else []) if not ln.startswith("cluster.id=")
        ]
        replace_file(meta, "".join(f"{ln}\n" for ln in [f"cluster.id={cluster_id}", *lines]).encode(), sync_dir=True)
        self.cluster_id = cluster_id

    def _load(self) -> None:
        path = self.dir / REGISTRY
        if not path.exists():
            return
        doc = json.loads(path.read_text())
        for t in doc.get("topics", []):
            topic = Topic(t["name"], uuid.UUID(t["id"]), int(t["partitions"]), dict(t.get("configs", {})))
            self.topics[topic.name] = topic
            self.by_id[topic.topic_id] = topic

    def _save(self) -> None:
        doc = {
            "version": 1,
            "topics": [
                {"name": t.name, "id": str(t.topic_id), "partitions": t.partitions, "configs": t.configs}
                for t in sorted(self.topics.values(), key=lambda t: t.name)
            ],
        }
        replace_file(self.dir / REGISTRY, json.dumps(doc, indent=1).encode(), sync_dir=True)

    def get(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def create(self, name: str, partitions: int, configs: dict[str, str], topic_id: uuid.UUID | None = None) -> Topic:
        """A new topic; `topic_id` is given in cluster mode (etcd names every topic's id)."""
        with self._lock:
            topic = Topic(name, topic_id or uuid.uuid4(), partitions, dict(configs))
            self.topics[name] = topic
            self.by_id[topic.topic_id] = topic
            self._save()
            return topic

    def delete(self, name: str) -> Topic | None:
        with self._lock:
            topic = self.topics.pop(name, None)
            if topic is not None:
                self.by_id.pop(topic.topic_id, None)
                self._save()
            return topic

    def set_partitions(self, name: str, count: int) -> None:
        with self._lock:
            self.topics[name].partitions = count
            self._save()

    def set_configs(self, name: str, configs: dict[str, str]) -> None:
        with self._lock:
            self.topics[name].configs = dict(configs)
            self._save()
