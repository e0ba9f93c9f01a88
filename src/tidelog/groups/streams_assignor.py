"""Kafka 4.3.1's sticky task assignor of streams groups (`StickyTaskAssignor`, "sticky", the only one).

Input: each member's process id and its previous target assignment (active and standby tasks);
the subtopologies with their task counts and whether they are stateful; `num.standby.replicas`.

Active tasks, sorted by partition then subtopology:
1. go back to the member that had them active, while it is under its quota (the ceiling of the
   tasks left over the members left with capacity, recomputed whenever a member fills up);
2. else to the least loaded member that had them as standby, under the same quota;
3. the rest, sorted by subtopology then partition, each to the least loaded member of the least
   loaded process (load = tasks / members of the process).
Standby tasks (stateful subtopologies only, `num.standby.replicas` copies each, never on the process
that runs the task active or already holds a copy): first to the previous active owner, then to a
previous standby owner, under the total-task quota; the rest to the least loaded processes.

Where Kafka breaks ties by walking a Java HashMap or a PriorityQueue, this does the same walk
(`java_hash_order`, `JavaPriorityQueue`), so the same input gives Kafka's answer; the one input
order it cannot see is the coordinator's own member map (members are handed over in the order of
the group's members here).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

log = logging.getLogger("tidelog.groups")
T = TypeVar("T")
K = TypeVar("K")
TaskId = tuple[str, int]  # (subtopology id, partition)


# ---- Java's iteration and heap orders --------------------------------------------------------------


def java_string_hash(s: str) -> int:
    """java.lang.String.hashCode: over UTF-16 code units, 32-bit wrap-around."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def _table_size_for(n: int) -> int:
    cap = 1
    while cap < n:
        cap <<= 1
    return max(cap, 1)


def java_hash_order(keys: Iterable[K], hash_of: Callable[[K], int], initial_capacity: int = 16) -> list[K]:
    """The iteration order of a java.util.HashMap into which `keys` were put in this order (no
    removals): by bucket of the final table, then by insertion (resizes keep that relative order)."""
    order = list(dict.fromkeys(keys))
    cap = _table_size_for(initial_capacity)
    while len(order) > cap * 0.75:
        cap <<= 1

    def bucket(k: K) -> int:
        h = hash_of(k)
        return (h ^ (h >> 16)) & (cap - 1)

    return [k for _, k in sorted(enumerate(order), key=lambda ik: (bucket(ik[1]), ik[0]))]


def string_order(keys: Iterable[str], initial_capacity: int = 16) -> list[str]:
    return java_hash_order(keys, java_string_hash, initial_capacity)


class JavaPriorityQueue(Generic[T]):
    """java.util.PriorityQueue's binary heap (siftUp/siftDown exactly as Java), so that ties come
    out in Java's order."""

    def __init__(self, key: Callable[[T], float]) -> None:
        self._q: list[T] = []
        self._key = key

    def __len__(self) -> int:
        return len(self._q)

    def add(self, x: T) -> None:
        q, key = self._q, self._key
        k = len(q)
        q.append(x)
        kx = key(x)
        while k > 0:
            parent = (k - 1) >> 1
            e = q[parent]
            if kx >= key(e):
                break
            q[k] = e
            k = parent
        q[k] = x

    def poll(self) -> T | None:
        q, key = self._q, self._key
        if not q:
            return None
        result = q[0]
        last = q.pop()
        n = len(q)
        if n:
            kx = key(last)
            k = 0
            half = n >> 1
            while k < half:
                child = 2 * k + 1
                c = q[child]
                right = child + 1
                if right < n and key(c) > key(q[right]):
                    child = right
                    c = q[child]
                if kx <= key(c):
                    break
                q[k] = c
                k = child
            q[k] = last
        return result


# ---- the assignor's input and state ---------------------------------------------------------------


@dataclass(frozen=True)
class MemberSpec:
    process_id: str
    active: Mapping[str, Iterable[int]]  # the member's previous target: subtopology -> partitions
    standby: Mapping[str, Iterable[int]]


@dataclass(frozen=True)
class SubtopologySpec:
    tasks: int
    stateful: bool


@dataclass
class _Load:
    member_id: str
    tasks: int


class _Process:
    """Kafka's ProcessState."""

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.capacity = 0
        self.load = float("inf")
        self.task_count = 0
        self.member_counts: dict[str, int] = {}  # insertion order; iterated in Java's order
        self.active: dict[str, set[TaskId]] = {}
        self.standby: dict[str, set[TaskId]] = {}
        self.tasks: set[TaskId] = set()
        self._by_load: JavaPriorityQueue[_Load] | None = None

    def add_member(self, member_id: str) -> None:
        self.member_counts[member_id] = 0
        self.capacity += 1
        self._compute_load()

    def _compute_load(self) -> None:
        self.load = -1.0 if self.capacity <= 0 else self.task_count / self.capacity

    def _add(self, member_id: str, task: TaskId, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member_id, set()).add(task)
        n = self.member_counts[member_id] + 1
        self.member_counts[member_id] = n
        self._compute_load()
        return n

    def add_task(self, member_id: str, task: TaskId, active: bool) -> int:
        n = self._add(member_id, task, active)
        self._by_load = None
        return n

    def add_to_least_loaded(self, task: TaskId, active: bool) -> int:
        if not self.member_counts:
            return -1
        order = string_order(self.member_counts)
        if len(order) == 1:
            return self._add(order[0], task, active)
        if self._by_load is None:
            self._by_load = JavaPriorityQueue(lambda e: float(e.tasks))
            for m in order:
                self._by_load.add(_Load(m, self.member_counts[m]))
        entry = self._by_load.poll()
        assert entry is not None
        n = self._add(entry.member_id, task, active)
        entry.tasks = n
        self._by_load.add(entry)
        return n


def _tasks_per_member(tasks: int, members: int) -> int:
    return 0 if members == 0 else -(-tasks // members)


class StickyTaskAssignor:
    name = "sticky"

    def assign(
        self,
        members: Mapping[str, MemberSpec],
        subtopologies: Mapping[str, SubtopologySpec],
        configs: Mapping[str, str],
    ) -> dict[str, tuple[dict[str, frozenset[int]], dict[str, frozenset[int]]]]:
        """member id -> (active tasks, standby tasks); `members` in the coordinator's order."""
        a = _Assignment(members, subtopologies, configs)
        return a.run()


class _Assignment:
    def __init__(
        self,
        members: Mapping[str, MemberSpec],
        subtopologies: Mapping[str, SubtopologySpec],
        configs: Mapping[str, str],
    ) -> None:
        self.subtopologies = {s: subtopologies[s] for s in sorted(subtopologies)}
        self.standbys = int(configs["num.standby.replicas"]) if configs else 0
        total_active = sum(s.tasks for s in self.subtopologies.values())
        total = total_active + sum(s.tasks * self.standbys for s in self.subtopologies.values() if s.stateful)
        self.member_ids = string_order(members)  # Kafka's member specs are a HashMap
        self.active_capacity = self.capacity = len(self.member_ids)
        self.total_active, self.total = total_active, total
        self.active_quota = _tasks_per_member(total_active, self.active_capacity)
        self.quota = _tasks_per_member(total, self.capacity)
        self.processes: dict[str, _Process] = {}
        self.prev_active: dict[TaskId, tuple[str, str]] = {}  # task -> (process, member)
        self.prev_standby: dict[TaskId, list[tuple[str, str]]] = {}
        for member_id in self.member_ids:
            spec = members[member_id]
            self.processes.setdefault(spec.process_id, _Process(spec.process_id)).add_member(member_id)
            for s, ps in spec.active.items():
                for p in ps:
                    self.prev_active[(s, p)] = (spec.process_id, member_id)
            for s, ps in spec.standby.items():
                for p in ps:
                    self.prev_standby.setdefault((s, p), []).append((spec.process_id, member_id))
        self.process_order = string_order(self.processes, max(len(self.member_ids), 0))

    def run(self) -> dict[str, tuple[dict[str, frozenset[int]], dict[str, frozenset[int]]]]:
        active = [(s, p) for s, spec in self.subtopologies.items() for p in range(spec.tasks)]
        self._assign_active(active)
        if self.standbys > 0:
            stateful = [(s, p) for s, spec in self.subtopologies.items() if spec.stateful for p in range(spec.tasks)]
            self._assign_standby(stateful)
        out: dict[str, tuple[dict[str, frozenset[int]], dict[str, frozenset[int]]]] = {}
        for member_id in self.member_ids:
            acts: dict[str, set[int]] = {}
            stbs: dict[str, set[int]] = {}
            for proc in self.processes.values():
                for s, p in proc.active.get(member_id, ()):
                    acts.setdefault(s, set()).add(p)
                for s, p in proc.standby.get(member_id, ()):
                    stbs.setdefault(s, set()).add(p)
            out[member_id] = (
                {s: frozenset(ps) for s, ps in acts.items()},
                {s: frozenset(ps) for s, ps in stbs.items()},
            )
        return out

    # ---- quotas ---------------------------------------------------------------------------------
    def _filled_active(self, n: int) -> None:
        if n == self.active_quota:
            self.active_capacity -= 1
            self.total_active -= n
            self.active_quota = _tasks_per_member(self.total_active, self.active_capacity)

    def _filled(self, n: int) -> None:
        if n == self.quota:
            self.capacity -= 1
            self.total -= n
            self.quota = _tasks_per_member(self.total, self.capacity)

    def _by_load(self) -> JavaPriorityQueue[_Process]:
        q: JavaPriorityQueue[_Process] = JavaPriorityQueue(lambda proc: proc.load)
        for pid in self.process_order:
            q.add(self.processes[pid])
        return q

    # ---- active tasks ---------------------------------------------------------------------------
    def _assign_active(self, tasks: list[TaskId]) -> None:
        tasks.sort(key=lambda t: (t[1], t[0]))
        left: list[TaskId] = []
        for task in tasks:
            prev = self.prev_active.get(task)
            if prev is not None and self._place_active(prev, task):
                continue
            left.append(task)
        rest: list[TaskId] = []
        for task in left:
            prev = self._least_loaded_previous(self.prev_standby.get(task), None)
            if prev is not None and self._place_active(prev, task):
                continue
            rest.append(task)
        rest.sort()
        queue = self._by_load()
        for task in rest:
            proc = queue.poll()
            if proc is None:
                raise RuntimeError(f"No process available to assign active task {task[0]}_{task[1]}.")
            n = proc.add_to_least_loaded(task, True)
            if n == -1:
                raise RuntimeError(f"No member available to assign active task {task[0]}_{task[1]}.")
            self._filled_active(n)
            self._filled(n)
            queue.add(proc)

    def _place_active(self, prev: tuple[str, str], task: TaskId) -> bool:
        proc = self.processes[prev[0]]
        if proc.member_counts[prev[1]] >= self.active_quota:
            return False
        n = proc.add_task(prev[1], task, True)
        self._filled_active(n)
        self._filled(n)
        return True

    def _least_loaded_previous(
        self, members: list[tuple[str, str]] | None, task: TaskId | None
    ) -> tuple[str, str] | None:
        """Kafka's findPrevMemberWithLeastLoad."""
        if not members:
            return None
        candidate = members[0]
        cproc = self.processes[candidate[0]]
        c_proc_load, c_member_load = cproc.load, float(cproc.member_counts[candidate[1]])
        for m in members[1:]:
            proc = self.processes[m[0]]
            if proc.load < c_proc_load and (task is None or task not in proc.tasks):
                member_load = float(proc.member_counts[m[1]])
                if member_load < c_member_load:
                    c_proc_load, c_member_load, candidate = proc.load, member_load, m
        if task is None or task not in cproc.tasks:  # Kafka checks the first candidate's process
            return candidate
        return None

    # ---- standby tasks ----------------------------------------------------------------------------
    def _assign_standby(self, tasks: list[TaskId]) -> None:
        tasks.sort(key=lambda t: (t[1], t[0]), reverse=True)
        to_least_loaded: list[tuple[TaskId, int]] = []
        for task in tasks:
            for i in range(self.standbys):
                prev = self.prev_active.get(task)
                if prev is not None:
                    proc = self.processes[prev[0]]
                    if task not in proc.tasks and proc.member_counts[prev[1]] < self.quota:
                        self._filled(proc.add_task(prev[1], task, False))
                        continue
                standby_owners = self.prev_standby.get(task)
                if standby_owners:
                    prev2 = self._least_loaded_previous(standby_owners, task)
                    if prev2 is not None:
                        proc = self.processes[prev2[0]]
                        if proc.member_counts[prev2[1]] < self.quota:
                            self._filled(proc.add_task(prev2[1], task, False))
                            continue
                to_least_loaded.append((task, self.standbys - i))
                break
        to_least_loaded.sort(key=lambda x: (x[0][0], x[0][1]), reverse=True)
        queue = self._by_load()
        for task, remaining in to_least_loaded:
            for i in range(remaining):
                if not self._standby_to_least_loaded(queue, task):
                    log.warning(
                        "Unable to assign %d of %d standby tasks for task [%s_%d]. There is not enough available "
                        "capacity.",
                        self.standbys - i,
                        self.standbys,
                        task[0],
                        task[1],
                    )
                    break

    def _standby_to_least_loaded(self, queue: JavaPriorityQueue[_Process], task: TaskId) -> bool:
        proc = queue.poll()
        if proc is None:
            return False
        found = False
        if task not in proc.tasks:
            n = proc.add_to_least_loaded(task, False)
            if n != -1:
                found = True
                self._filled(n)
        elif len(queue):
            found = self._standby_to_least_loaded(queue, task)
        queue.add(proc)
        return found
