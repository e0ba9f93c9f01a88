"""The cluster's state in etcd: key layout and the JSON records stored under it.

Modelled on Kafka's ZooKeeper layout, under `/tidelog/<cluster>/`:

    brokers/ids/<id>        BrokerInfo, bound to the broker's lease (an ephemeral registration,
                            created only when absent); broker epoch = the key's create_revision:
                            every incarnation of a broker has a new one. `storage` is the
                            broker's data directory id (meta.properties): a new one means a
                            new, empty disk
    controller              {"broker": id}, bound to the winner's lease; controller epoch = its
                            create_revision
    topics/<t>              TopicAssignment: topic id, replicas of each partition, config overrides
    topics/<t>/p/<p>        PartitionState: leader, leader_epoch, isr, and the incarnation they
                            were chosen in: the leader's broker epoch, each ISR member's data
                            directory id (every write is a compare-and-swap on the key's
                            mod_revision, as Kafka used zkVersion)
    producer-ids            {"next": n}: the first producer id no broker has reserved yet
    security/...            ACL bindings and SCRAM credentials (security_state.py)
    configs/brokers/<e>     dynamic broker configs of broker e, or of every broker ("default")

Every record is UTF-8 JSON; unknown fields are ignored so a newer broker can add some.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
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
        tail = key[len(self.brokers) :] if key.startswith(self.brokers) else ""
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
        """ "" (every broker's default) is stored as `default`."""
        return self.broker_configs + (entity or "default")

    @property
    def group_configs(self) -> str:
        return self.root + "configs/groups/"

    def topic(self, name: str) -> str:
        return self.topics + name

    def partition(self, name: str, p: int) -> str:
        return f"{self.topics}{name}/p/{p}"

    def parse_topic_key(self, key: str) -> tuple[str, int | None] | None:
        """topics/<t> -> (t, None); topics/<t>/p/<p> -> (t, p); anything else None."""
        if not key.startswith(self.topics):
            return None
        rest = key[len(self.topics) :]
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
    epoch: int = -1  # create_revision of the registration (filled in when read): the broker epoch
    storage: str = ""  # the data directory's id: a broker that lost its disk comes back with a new one

    def endpoint(self, listener: str) -> Endpoint | None:
        for e in self.endpoints:
            if e.name == listener:
                return e
        return self.endpoints[0] if self.endpoints else None

    def encode(self) -> bytes:
        return json.dumps(
            {
                "id": self.node_id,
                "rack": self.rack,
                "storage": self.storage,
                "endpoints": [[e.name, e.host, e.port] for e in self.endpoints],
            }
        ).encode()

    @classmethod
    def decode(cls, data: bytes, epoch: int = -1) -> BrokerInfo:
        d = json.loads(data)
        return cls(
            int(d["id"]),
            tuple(Endpoint(n, h, int(p)) for n, h, p in d.get("endpoints", [])),
            d.get("rack"),
            epoch,
            str(d.get("storage") or ""),
        )


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
        d: dict[str, object] = {
            "id": str(self.topic_id),
            "replicas": [list(r) for r in self.replicas],
            "configs": self.configs,
        }
        moving = sorted(set(self.adding) | set(self.removing))
        if moving:
            d["reassigning"] = {
                str(p): {"adding": list(self.adding.get(p, ())), "removing": list(self.removing.get(p, ()))}
                for p in moving
            }
        return json.dumps(d).encode()

    @classmethod
    def decode(cls, name: str, data: bytes, version: int = -1) -> TopicAssignment:
        d = json.loads(data)
        moving = d.get("reassigning") or {}
        return cls(
            name,
            uuid.UUID(d["id"]),
            tuple(tuple(int(b) for b in r) for r in d["replicas"]),
            {str(k): str(v) for k, v in d.get("configs", {}).items()},
            {int(p): tuple(int(b) for b in m.get("adding", ())) for p, m in moving.items() if m.get("adding")},
            {int(p): tuple(int(b) for b in m.get("removing", ())) for p, m in moving.items() if m.get("removing")},
            version,
        )

    def reassigned(self, p: int, target: tuple[int, ...] | None) -> TopicAssignment:
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

    def completed(self, p: int) -> TopicAssignment:
        """Partition p's reassignment done: its replicas are the target."""
        replicas = list(self.replicas)
        replicas[p] = self.target(p)
        adding, removing = dict(self.adding), dict(self.removing)
        adding.pop(p, None)
        removing.pop(p, None)
        return replace(self, replicas=tuple(replicas), adding=adding, removing=removing)


@dataclass(frozen=True, slots=True)
class PartitionState:
    """Who leads a partition, at which leader epoch, with which in-sync replicas - and in which
    incarnation of each: `leader_broker_epoch` is the broker epoch the leader had when it was
    chosen (a leader that restarted since leads no more: it must be chosen again, at a new leader
    epoch), `isr_storage` the data directory id of each ISR member when it joined (a member back
    with another directory lost its disk, and is in sync no more).

    `elr` are Kafka's eligible leader replicas (KIP-966): the replicas that left the ISR when it
    fell (or while it was) below min.insync.replicas, with their directory ids. The high watermark
    does not advance while the ISR is that small, so each of them holds every record below it, and
    may lead when no ISR member can (the ISR member left lost its disk, say). They are forgotten
    once the ISR is back to min.insync.replicas."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int = -1
    version: int = -1  # mod_revision of the key it was read from (the compare-and-swap token)
    leader_broker_epoch: int = -1
    isr_storage: tuple[tuple[int, str], ...] = ()  # (broker, data directory id) of the ISR members
    elr: tuple[tuple[int, str], ...] = ()  # (broker, data directory id) of the eligible leader replicas

    @property
    def online(self) -> bool:
        return self.leader != NO_LEADER

    def storage_of(self, broker: int) -> str | None:
        """The directory id `broker` had when it joined the ISR (None: not recorded)."""
        for b, s in self.isr_storage + self.elr:
            if b == broker:
                return s
        return None

    @property
    def eligible(self) -> tuple[int, ...]:
        return tuple(b for b, _ in self.elr)

    def encode(self) -> bytes:
        d: dict[str, object] = {
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "isr": list(self.isr),
            "controller_epoch": self.controller_epoch,
            "leader_broker_epoch": self.leader_broker_epoch,
            "isr_storage": {str(b): s for b, s in self.isr_storage},
        }
        if self.elr:
            d["elr"] = {str(b): s for b, s in self.elr}
        return json.dumps(d).encode()

    @classmethod
    def decode(cls, data: bytes, version: int = -1) -> PartitionState:
        d = json.loads(data)
        return cls(
            int(d["leader"]),
            int(d["leader_epoch"]),
            tuple(int(b) for b in d["isr"]),
            int(d.get("controller_epoch", -1)),
            version,
            int(d.get("leader_broker_epoch", -1)),
            tuple((int(b), str(s)) for b, s in (d.get("isr_storage") or {}).items()),
            tuple((int(b), str(s)) for b, s in (d.get("elr") or {}).items()),
        )


def make_state(
    leader: int,
    leader_epoch: int,
    isr: tuple[int, ...],
    live: Mapping[int, BrokerInfo],
    controller_epoch: int = -1,
    previous: PartitionState | None = None,
    min_isr: int = 1,
    replicas: tuple[int, ...] | None = None,
    leader_broker_epoch: int | None = None,
) -> PartitionState:
    """The state that follows `previous`: incarnations from the live registrations (the leader's
    broker epoch, unless given; each ISR member's directory id, kept from `previous` for members
    already in it), and the eligible leader replicas: none while the ISR has `min_isr` members,
    else those of `previous` plus the members it leaves now, less the new ISR, any that came back
    with another directory (a lost disk) and any no longer among `replicas`."""
    storage = []
    for b in isr:
        recorded = previous.storage_of(b) if previous is not None else None
        if recorded is None and b in live:
            recorded = live[b].storage
        storage.append((b, recorded or ""))
    elr: list[tuple[int, str]] = []
    if previous is not None and len(isr) < min_isr:
        for b, s in previous.elr + tuple(x for x in previous.isr_storage if x[0] not in isr):
            if b in isr or any(b == e for e, _ in elr) or (replicas is not None and b not in replicas):
                continue
            if b in live and s and live[b].storage != s:
                continue  # back without its disk: holds nothing
            elr.append((b, s))
    if leader_broker_epoch is None:
        leader_broker_epoch = live[leader].epoch if leader in live else -1
    return PartitionState(
        leader, leader_epoch, tuple(isr), controller_epoch, -1, leader_broker_epoch, tuple(storage), tuple(elr)
    )


def leader_alive(state: PartitionState, live: Mapping[int, BrokerInfo]) -> bool:
    """The state's leader is registered in the very incarnation it was chosen in."""
    info = live.get(state.leader)
    return info is not None and info.epoch == state.leader_broker_epoch


def intact(state: PartitionState, broker: int, live: Mapping[int, BrokerInfo]) -> bool:
    """`broker` is registered with the data directory it had when it joined the ISR (so it holds
    what it held then: its process may have restarted, its disk was not lost)."""
    info = live.get(broker)
    if info is None:
        return False
    recorded = state.storage_of(broker)
    return recorded is None or recorded == info.storage


def assign_replicas(
    partitions: int, replication_factor: int, brokers: list[tuple[int, str | None]], start: int = 0
) -> list[tuple[int, ...]]:
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
