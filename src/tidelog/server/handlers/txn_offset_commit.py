"""TxnOffsetCommit (key 28, v0-3): offsets staged in the producer's transaction. They are written
to `__consumer_offsets` as transactional records now and become the group's committed offsets
only when the transaction commits (the marker); an abort drops them. The group's partition must
have joined the transaction (AddOffsetsToTxn). v3 carries the consumer's generation and member
id (KIP-447), checked when the group is known; v3 may answer PRODUCER_FENCED."""

import time

from kio.schema.errors import ErrorCode as E

from ...txn.coordinator import NONE
from ...txn.handler_util import fenced_for, log
from ...txn.service import OFFSETS_TOPIC, txn_of
from ..groups.records import OffsetValue
from ..router import control_route

API_KEY = 28
MAX_METADATA_BYTES = 4096


def register(broker) -> None:
    txn = txn_of(broker)
    if txn is None:
        return
    groups = txn.groups
    registry = broker.registry

    def group_error(request) -> int:
        generation = getattr(request, "generation_id", -1)
        member_id = getattr(request, "member_id", "") or ""
        if generation < 0 and not member_id:
            return NONE
        group = getattr(groups, "groups", {}).get(request.group_id)
        if group is None or not getattr(group, "members", None):
            return NONE  # offsets-only group: nothing to check against
        if member_id not in group.members:
            return E.unknown_member_id.value
        if generation != group.generation:
            return E.illegal_generation.value
        return NONE

    async def handle(ctx, request):
        v = ctx.api_version
        store = groups.store
        now = int(time.time() * 1000)
        code = NONE
        if store is None or not groups.loaded:
            code = E.coordinator_load_in_progress.value
        else:
            tp = (OFFSETS_TOPIC, store.partition_for(request.group_id))
            code = txn.coordinator.check_offsets_commit(request.transactional_id, request.producer_id,
                                                        request.producer_epoch, tp)
            code = fenced_for(code, v, 3) or group_error(request)
        results: dict[tuple[str, int], int] = {}
        staged: dict[tuple[str, int], OffsetValue] = {}
        for t in request.topics:
            topic = registry.get(t.name)
            for p in t.partitions:
                key = (t.name, p.partition_index)
                if code:
                    results[key] = code
                elif topic is None or not 0 <= p.partition_index < topic.partitions:
                    results[key] = E.unknown_topic_or_partition.value
                elif len((p.committed_metadata or "").encode()) > MAX_METADATA_BYTES:
                    results[key] = E.offset_metadata_too_large.value
                else:
                    results[key] = NONE
                    staged[key] = OffsetValue(p.committed_offset, p.committed_metadata or "", now,
                                              getattr(p, "committed_leader_epoch", -1))
        if staged:
            try:
                await store.stage(request.producer_id, request.producer_epoch, request.group_id, staged)
            except Exception:  # noqa: BLE001
                log.exception("group %s: transactional offsets could not be written", request.group_id)
                for k in staged:
                    results[k] = E.coordinator_not_available.value
        return {"throttle_time": 0, "topics": [
            {"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": results[(t.name, p.partition_index)]}
                for p in t.partitions]}
            for t in request.topics]}

    broker.router.add(control_route(API_KEY, 0, 3, handle))
