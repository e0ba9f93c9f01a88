"""tidelog's sticky task assignor of streams groups (`tidelog.groups.streams_assignor`) against
Apache Kafka 4.3.1's StickyTaskAssignor.

java/assignors/streams_cases.txt holds small groups; java/assignors/streams_expected.jsonl what
Kafka's own assignor made of them (KafkaStickyTaskAssignor.java, run by hand or by the interop test
below). tidelog's results must be the same, ties included: Kafka breaks them by walking Java hash
maps and priority queues, which the assignor replays. Property tests cover balance, stickiness and
the standby rules on random groups.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.groups.streams_assignor import (
    JavaPriorityQueue,
    MemberSpec,
    StickyTaskAssignor,
    SubtopologySpec,
    java_string_hash,
    string_order,
)

DIR = Path(__file__).resolve().parents[2] / "java" / "assignors"
CASES = DIR / "streams_cases.txt"
EXPECTED = DIR / "streams_expected.jsonl"


def _tasks(text: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    if text == "-":
        return out
    for part in text.split("/"):
        s, ps = part.split(":")
        for p in ps.split(","):
            lo, _, hi = p.partition("..")
            out.setdefault(s, []).extend(range(int(lo), int(hi or lo) + 1))
    return out


def cases() -> dict[str, tuple[int, dict[str, SubtopologySpec], dict[str, MemberSpec]]]:
    out = {}
    for raw in CASES.read_text().splitlines():
        line = raw.split("#")[0].strip()
        if not line:
            continue
        f = line.split()
        if f[0] == "case":
            name, standbys, subs, members = f[1], int(f[2]), {}, {}
        elif f[0] == "subtopology":
            subs[f[1]] = SubtopologySpec(int(f[2]), f[3] == "stateful")
        elif f[0] == "member":
            members[f[1]] = MemberSpec(f[2], _tasks(f[3]), _tasks(f[4]))
        elif f[0] == "end":
            out[name] = (standbys, subs, members)
    return out


def run(standbys: int, subs: dict[str, SubtopologySpec], members: dict[str, MemberSpec]) -> dict:
    result = StickyTaskAssignor().assign(members, subs, {"num.standby.replicas": str(standbys)})
    return {
        m: {
            "active": {s: sorted(ps) for s, ps in sorted(a.items()) if ps},
            "standby": {s: sorted(ps) for s, ps in sorted(sb.items()) if ps},
        }
        for m, (a, sb) in result.items()
    }


EXPECTED_RESULTS = {d["case"]: d["members"] for d in map(json.loads, EXPECTED.read_text().splitlines())}


def test_every_case_has_kafkas_result() -> None:
    assert set(cases()) == set(EXPECTED_RESULTS)


@pytest.mark.parametrize("name", sorted(EXPECTED_RESULTS))
def test_same_as_kafka(name: str) -> None:
    standbys, subs, members = cases()[name]
    assert run(standbys, subs, members) == EXPECTED_RESULTS[name]


def test_java_hash_and_heap_orders() -> None:
    assert java_string_hash("") == 0 and java_string_hash("a") == 97
    # the values below are Java's own ("...".hashCode(), a HashMap's keySet(), a PriorityQueue's polls)
    assert java_string_hash("hello") == 99162322 and java_string_hash("ü日") == 33897
    assert java_string_hash("polygenelubricants") == (-(2**31)) & 0xFFFFFFFF
    assert string_order(["b", "a", "10", "9"]) == ["a", "b", "9", "10"]
    # a map that resized twice (20 keys: 16 -> 32 -> ... buckets), and one made with a small capacity
    members = [f"member-{i * 7919 % 101}" for i in range(20)]
    assert ",".join(string_order(members)) == (
        "member-28,member-25,member-6,member-47,member-69,member-3,member-22,member-44,member-66,member-88,"
        "member-9,member-31,member-41,member-63,member-85,member-50,member-72,member-82,member-91,member-0"
    )
    assert string_order(["p-x", "p-y", "p-z", "p-w"], 3) == ["p-x", "p-w", "p-z", "p-y"]
    q: JavaPriorityQueue[tuple[str, int]] = JavaPriorityQueue(lambda x: x[1])
    for item in [("a", 1), ("b", 0), ("c", 1), ("d", 0), ("e", 1)]:
        q.add(item)
    assert [q.poll() for _ in range(5)] == [("b", 0), ("d", 0), ("a", 1), ("c", 1), ("e", 1)]
    assert q.poll() is None


@st.composite
def groups(draw: st.DrawFn) -> tuple[int, dict[str, SubtopologySpec], dict[str, MemberSpec]]:
    subs = {
        str(i): SubtopologySpec(draw(st.integers(1, 8)), draw(st.booleans())) for i in range(draw(st.integers(1, 3)))
    }
    n = draw(st.integers(1, 6))
    processes = [f"p{draw(st.integers(0, 3))}" for _ in range(n)]
    all_tasks = [(s, p) for s, spec in subs.items() for p in range(spec.tasks)]
    members = {}
    for i in range(n):
        prev = draw(st.lists(st.sampled_from(all_tasks), max_size=4, unique=True))
        active: dict[str, list[int]] = {}
        for s, p in prev:
            active.setdefault(s, []).append(p)
        members[f"m{i}"] = MemberSpec(processes[i], active, {})
    return draw(st.integers(0, 2)), subs, members


@settings(max_examples=150, deadline=None)
@given(groups())
def test_every_task_active_once_balanced_and_standbys_elsewhere(group) -> None:
    standbys, subs, members = group
    result = StickyTaskAssignor().assign(members, subs, {"num.standby.replicas": str(standbys)})
    active = [(s, p) for a, _ in result.values() for s, ps in a.items() for p in ps]
    assert sorted(active) == sorted((s, p) for s, spec in subs.items() for p in range(spec.tasks))
    if len({m.process_id for m in members.values()}) == len(members):  # one member per process: balanced
        counts = [sum(len(ps) for ps in a.values()) for a, _ in result.values()]
        assert max(counts) - min(counts) <= 1
    for member_id, (_, sb) in result.items():
        process = members[member_id].process_id
        for s, ps in sb.items():
            assert subs[s].stateful
            for p in ps:  # never a standby on the process running the task active
                owners = [m for m, (act, _) in result.items() if p in act.get(s, ())]
                assert all(members[o].process_id != process for o in owners)


@pytest.mark.interop
def test_kafka_still_gives_the_expected_results() -> None:
    if shutil.which("java") is None:
        pytest.skip("java is needed to run Kafka's assignor")
    cp = DIR / "target" / "classpath.txt"
    if not cp.exists():
        subprocess.run(
            ["mvn", "-B", "-q", "-f", str(DIR / "pom.xml"), "dependency:build-classpath", f"-Dmdep.outputFile={cp}"],
            check=True,
            timeout=600,
        )
    out = subprocess.run(
        ["java", "-cp", cp.read_text().strip(), str(DIR / "KafkaStickyTaskAssignor.java"), str(CASES)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert out.stdout.splitlines() == EXPECTED.read_text().splitlines()
