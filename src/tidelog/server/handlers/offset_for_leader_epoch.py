"""OffsetForLeaderEpoch (key 23, v0-4): one node, one leader epoch (0) since the topic began.

For the current epoch (or any later one asked) the end offset is the log end offset; clients use
this to validate their position after a leader change, which here never truncates anything.
"""

from kio.schema.errors import ErrorCode as E

from ..router import control_route

API_KEY = 23


def register(broker) -> None:
    partitions = broker.partitions

    def handle(ctx, request):
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

    broker.router.add(control_route(API_KEY, 0, 4, handle))
