"""DeleteRecords (key 21, v0-2): move a partition's log start offset forward."""

from kio.schema.errors import ErrorCode as E

from ...log.errors import LogError
from ..router import control_route

API_KEY = 21
HIGH_WATERMARK = -1


def register(broker) -> None:
    partitions = broker.partitions

    def handle(ctx, request):
        topics = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                plog = partitions.get(t.name, p.partition_index)
                if plog is None:
                    parts.append({"partition_index": p.partition_index, "low_watermark": -1,
                                  "error_code": E.unknown_topic_or_partition.value})
                    continue
                offset = plog.high_watermark if p.offset == HIGH_WATERMARK else p.offset
                if not plog.log_start_offset <= offset <= plog.high_watermark:
                    parts.append({"partition_index": p.partition_index, "low_watermark": -1,
                                  "error_code": E.offset_out_of_range.value})
                    continue
                try:
                    plog.delete_records(offset)
                except LogError as e:
                    parts.append({"partition_index": p.partition_index, "low_watermark": -1, "error_code": e.error_code})
                    continue
                parts.append({"partition_index": p.partition_index, "low_watermark": plog.log_start_offset,
                              "error_code": 0})
            topics.append({"name": t.name, "partitions": parts})
        return {"throttle_time": 0, "topics": topics}

    broker.router.add(control_route(API_KEY, 0, 2, handle))
