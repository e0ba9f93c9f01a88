"""`tidelog groups` for share groups (KIP-932), as kafka-share-groups.sh: describe (each share
partition's start offset and lag, and the members with their assignments), reset-offsets (the
share-partition start offsets of an empty group: AlterShareGroupOffsets, planned as for consumer
groups - by time, to earliest or latest, to an offset, shifted) and delete-offsets (the group's
share state of whole topics: DeleteShareGroupOffsets; its next member starts them by
`share.auto.offset.reset`). `groups.py` finds a group's type and sends share groups here."""

from __future__ import annotations

import sys
from typing import Any

from .client import KafkaClient
from .client import error_name as _err


def describe(client: KafkaClient, group: str) -> Any:
    """ShareGroupDescribe's answer for the group (None when it is not a share group)."""
    resp = client.request(77, {"group_ids": [group], "include_authorized_operations": False}, highest=1)
    g = resp.groups[0]
    return None if g.error_code.value else g


def start_offsets(client: KafkaClient, group: str) -> dict[tuple[str, int], tuple[int, int]]:
    """(start offset, lag) of every share partition the group has state for."""
    resp = client.request(90, {"groups": [{"group_id": group, "topics": None}]}, highest=1)
    g = resp.groups[0]
    if g.error_code.value:
        raise RuntimeError(f"group {group}: {_err(g.error_code)}")
    return {
        (t.topic_name, p.partition_index): (int(p.start_offset), int(getattr(p, "lag", -1)))
        for t in g.topics
        for p in t.partitions
    }


def cmd_describe(group: str, client: KafkaClient, table: Any) -> int:
    g = describe(client, group)
    if g is None:
        print(f"Share group '{group}' does not exist.", file=sys.stderr)
        return 1
    offsets = start_offsets(client, group)
    print(f"Share group {group} is {g.group_state} (epoch {g.group_epoch}, {len(g.members)} members)")
    rows = [[group, t, p, start, lag if lag >= 0 else None] for (t, p), (start, lag) in sorted(offsets.items())]
    print(table(rows, ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]))
    if g.members:
        print()
        members = [
            [
                m.member_id,
                m.client_host,
                m.client_id,
                ",".join(
                    f"{tp.topic_name}:{','.join(map(str, sorted(tp.partitions)))}"
                    for tp in m.assignment.topic_partitions
                )
                or None,
            ]
            for m in g.members
        ]
        print(table(members, ["CONSUMER-ID", "HOST", "CLIENT-ID", "ASSIGNMENT"]))
    return 0


def commit(client: KafkaClient, group: str, new: dict[tuple[str, int], int]) -> list[str]:
    """AlterShareGroupOffsets; the failures, as lines to print."""
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (t, p), off in sorted(new.items()):
        by_topic.setdefault(t, []).append({"partition_index": p, "start_offset": off})
    resp = client.request(
        91,
        {"group_id": group, "topics": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()]},
        highest=0,
    )
    if resp.error_code.value:
        return [f"Error altering the offsets of share group {group}: {_err(resp.error_code)}"]
    return [
        f"Error altering {t.topic_name}-{p.partition_index}: {_err(p.error_code)}"
        for t in resp.responses
        for p in t.partitions
        if p.error_code.value
    ]


def cmd_delete_offsets(group: str, topics: list[str], client: KafkaClient) -> int:
    resp = client.request(92, {"group_id": group, "topics": [{"topic_name": t} for t in topics]}, highest=0)
    if resp.error_code.value:
        print(f"Error deleting the offsets of share group {group}: {_err(resp.error_code)}", file=sys.stderr)
        return 1
    failed = [(t.topic_name, _err(t.error_code)) for t in resp.responses if t.error_code.value]
    for t, e in failed:
        print(f"Error deleting the offsets of {t}: {e}", file=sys.stderr)
    for t in resp.responses:
        if not t.error_code.value:
            print(f"Deleted the offsets of share group {group} for topic {t.topic_name}.")
    return 1 if failed else 0
