"""The cluster's state in etcd: key layout and the JSON records stored under it.

Modelled on Kafka's ZooKeeper layout, under `/tidelog/<cluster>/`:

    brokers/ids/<id>        BrokerInfo, bound to the broker's lease (an ephemeral registration);
                            broker epoch = the key's create_revision
    controller              {"broker": id}, bound to the winner's lease; controller epoch = its
                            create_revision
    topics/<t>              TopicAssignment: topic id, replicas of each partition, config overrides
    topics/<t>/p/<p>        PartitionState: leader, leader_epoch, isr (every write is a
                            compare-and-swap on the key's mod_revision, as Kafka used zkVersion)
    producer-ids            {"next": n}: the first producer id no broker has reserved yet
    security/...            ACL bindings and SCRAM credentials (security_state.py)
    configs/brokers/<e>     dynamic broker configs of broker e, or of every broker ("default")

Every record is UTF-8 JSON; unknown fields are ignored so a newer broker can add some.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace

NO_LEADER = -1


def root(prefix: str) -> str:
    """`/tidelog/<cluster>/` from a chroot-like prefix ("" -> /tidelog/default/)."""
    name = prefix.strip("/") or "default"
    return f"/tidelog/{name}/"


@dataclass(frozen=True, slots=True)
class Keys:
    root: str

    @property
    def brokers(self) -> str:
        return self.root + "brokers/ids/"

    def broker(self, node_id: int) -> str:
        return f"{self.brokers}{node_id}"

    def parse_broker_key(self, key: str) -> int | None:
        """brokers/ids/<id> -> id; anything else None."""
        tail = key[len(self.brokers):] if key.startswith(self.brokers) else ""
        return int(tail) if tail.isdigit() else None

    @property
    def cluster_id(self) -> str:
        return self.root + "cluster-id"

    @property
    def controller(self) -> str:
        return self.root + "controller"

    @property
    def producer_ids(self) -> str:
        return self.root + "producer-ids"

    @property
    def topics(self) -> str:
        return self.root + "topics/"

    @property
    def security(self) -> str:
        return self.root + "security/"

    @property
    def broker_configs(self) -> str:
        return self.root + "configs/brokers/"

    def broker_config(self, entity: str) -> str:
        """"" (every broker's default) is stored as `default`."""
        return self.broker_configs + (entity or "default")

    def topic(self, name: str) -> str:
        return self.topics + name

    def partition(self, name: str, p: int) -> str:
        return f"{self.topics}{name}/p/{p}"

    def parse_topic_key(self, key: str) -> tuple[str, int | None] | None:
        """topics/<t> -> (t, None); topics/<t>/p/<p> -> (t, p); anything else None."""
        if not key.startswith(self.topics):
            return None
        rest = key[len(self.topics):]
        name, sep, tail = rest.partition("/p/")
        if not sep:
            return (rest, None) if "/" not in rest else None
        return (name, int(tail)) if tail.isdigit() else None


@dataclass(frozen=True, slots=True)
class Endpoint:
    name: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    epoch: int = -1  # create_revision of the registration (filled in when read)

    def endpoint(self, listener: str) -> Endpoint | None:
        for e in self.endpoints:
            if e.name == listener:
                return e
        return self.endpoints[0] if self.endpoints else None

    def encode(self) -> bytes:
        return json.dumps({"id": self.node_id, "rack": self.rack,
                           "endpoints": [[e.name, e.host, e.port] for e in self.endpoints]}).encode()

    @classmethod
    def decode(cls, data: bytes, epoch: int = -1) -> "BrokerInfo":
        d = json.loads(data)
        return cls(int(d["id"]), tuple(Endpoint(n, h, int(p)) for n, h, p in d.get("endpoints", [])),
                   d.get("rack"), epoch)


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    name: str
    topic_id: uuid.UUID
    replicas: tuple[tuple[int, ...], ...]  # per partition, in preference order
    configs: dict[str, str] = field(default_factory=dict)
    # partition -> replicas being added / removed by a reassignment in progress (KIP-455); while
    # it runs `replicas` is the target followed by the original replicas not in it
    adding: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing: dict[int, tuple[int, ...]] = field(default_factory=dict)
    version: int = -1  # mod_revision of the key it was read from (the compare-and-swap token)

    @property
    def partitions(self) -> int:
        return len(self.replicas)

    def target(self, p: int) -> tuple[int, ...]:
        """The replicas partition p ends with (its replicas when no reassignment runs)."""
        gone = self.removing.get(p, ())
        return tuple(b for b in self.replicas[p] if b not in gone)

    def original(self, p: int) -> tuple[int, ...]:
        new = self.adding.get(p, ())
        return tuple(b for b in self.replicas[p] if b not in new)

    def encode(self) -> bytes:
        d: dict[str, object] = {"id": str(self.topic_id), "replicas": [list(r) for r in self.replicas], "configs": self.configs}
        moving = sorted(set(self.adding) | set(self.removing))
        if moving:
            d["reassigning"] = {str(p): {"adding": list(self.adding.get(p, ())),
                                         "removing": list(self.removing.get(p, ()))} for p in moving}
        return json.dumps(d).encode()

    @classmethod
    def decode(cls, name: str, data: bytes, version: int = -1) -> "TopicAssignment":
        d = json.loads(data)
        moving = d.get("reassigning") or {}
        return cls(name, uuid.UUID(d["id"]), tuple(tuple(int(b) for b in r) for r in d["replicas"]),
                   {str(k): str(v) for k, v in d.get("configs", {}).items()},
                   {int(p): tuple(int(b) for b in m.get("adding", ())) for p, m in moving.items() if m.get("adding")},
                   {int(p): tuple(int(b) for b in m.get("removing", ())) for p, m in moving.items()
                    if m.get("removing")},
                   version)

    def reassigned(self, p: int, target: tuple[int, ...] | None) -> "TopicAssignment":
        """This assignment with partition p moving to `target` (None: back to its original
        replicas, cancelling), or finished when `target` equals what it has."""
        original = self.original(p)
        goal = original if target is None else target
        replicas = list(self.replicas)
        adding, removing = dict(self.adding), dict(self.removing)
        add = tuple(b for b in goal if b not in original)
        rem = tuple(b for b in original if b not in goal)
        replicas[p] = tuple(goal) + tuple(b for b in original if b not in goal)
        adding.pop(p, None)
        removing.pop(p, None)
        if add:
            adding[p] = add
        if rem:
            removing[p] = rem
        return replace(self, replicas=tuple(replicas), adding=adding, removing=removing)

    def completed(self, p: int) -> "TopicAssignment":
        """Partition p's reassignment done: its replicas are the target."""
        replicas = list(self.replicas)
        replicas[p] = self.target(p)
        adding, removing = dict(self.adding), dict(self.removing)
        adding.pop(p, None)
        removing.pop(p, None)
        return replace(self, replicas=tuple(replicas), adding=adding, removing=removing)


@dataclass(frozen=True, slots=True)
class PartitionState:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int = -1
    version: int = -1  # mod_revision of the key it was read from (the compare-and-swap token)

    @property
    def online(self) -> bool:
        return self.leader != NO_LEADER

    def encode(self) -> bytes:
        return json.dumps({"leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                           "controller_epoch": self.controller_epoch}).encode()

    @classmethod
    def decode(cls, data: bytes, version: int = -1) -> "PartitionState":
        d = json.loads(data)
        return cls(int(d["leader"]), int(d["leader_epoch"]), tuple(int(b) for b in d["isr"]),
                   int(d.get("controller_epoch", -1)), version)


def assign_replicas(partitions: int, replication_factor: int, brokers: list[tuple[int, str | None]],
                    start: int = 0) -> list[tuple[int, ...]]:
    """Kafka's round-robin replica placement: partition p's first replica is broker
    (start + p) mod n, followers follow at a shift; with racks set, brokers are interleaved by rack
    first so consecutive replicas land on different racks. `brokers` is [(id, rack)]."""
    if replication_factor > len(brokers) or replication_factor <= 0:
        raise ValueError(f"replication factor {replication_factor} with {len(brokers)} brokers")
    ordered = sorted(brokers)
    if any(rack for _, rack in ordered):
        by_rack: dict[str, list[int]] = {}
        for b, rack in ordered:
            by_rack.setdefault(rack or "", []).append(b)
        racks = sorted(by_rack)
        ids: list[int] = []
        i = 0
        while len(ids) < len(ordered):
            rack_ids = by_rack[racks[i % len(racks)]]
            k = i // len(racks)
            if k < len(rack_ids):
                ids.append(rack_ids[k])
            i += 1
    else:
        ids = [b for b, _ in ordered]
    n = len(ids)
    rack_of = dict(ordered)
    rack_set = {r for _, r in ordered}
    out = []
    for p in range(partitions):
        first = (start + p) % n
        shift = 1 + (p // n) % max(n - 1, 1)
        replicas = [ids[first]]
        j = first
        while len(replicas) < replication_factor:
            used = {rack_of[b] for b in replicas}
            # walk at the shift; prefer a broker of an unused rack while one is left
            want_new_rack = len(used) < len(rack_set)
            for k in range(n):
                cand = ids[(j + shift + k) % n]
                if cand in replicas or (want_new_rack and rack_of[cand] in used):
                    continue
                break
            else:
                cand = next(b for b in ids if b not in replicas)
            replicas.append(cand)
            j = ids.index(cand)
        out.append(tuple(replicas))
    return out
