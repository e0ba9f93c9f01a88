"""OffsetForLeaderEpoch (key 23, v0-4): one node, one leader epoch (0) since the topic began.

For the current epoch (or any later one asked) the end offset is the log end offset; clients use
this to validate their position after a leader change, which here never truncates anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...wire.apis import ApiKey

from kio.schema.errors import ErrorCode as E

from ..router import control_route

if TYPE_CHECKING:
    from ..broker import Broker
    from ..connection import RequestContext
    from kio.schema.offset_for_leader_epoch.v4.request import OffsetForLeaderEpochRequest



def handle(broker: Broker, ctx: RequestContext, request: OffsetForLeaderEpochRequest) -> Any:
    partitions = broker.partitions
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            plog = partitions.get(t.topic, p.partition)
            if plog is None:
                parts.append({"error_code": E.unknown_topic_or_partition.value, "partition": p.partition,
                              "leader_epoch": -1, "end_offset": -1})
            elif p.leader_epoch < 0:
                parts.append({"error_code": 0, "partition": p.partition, "leader_epoch": -1, "end_offset": -1})
            else:
                parts.append({"error_code": 0, "partition": p.partition, "leader_epoch": 0,
                              "end_offset": plog.log_end_offset})
        topics.append({"topic": t.topic, "partitions": parts})
    return {"throttle_time": 0, "topics": topics}


ROUTE = control_route(ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, 4, handle)
