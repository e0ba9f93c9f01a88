"""DescribeLogDirs (key 35, v1-4): the broker's log directory and the partitions in it.

tidelog serves one log directory, the first of `log.dirs` (given by its absolute path, as Kafka
does). Each partition reports its size in bytes, offset lag 0 (it is the current replica, not a
future one being moved) and is_future false; v4 adds the file system's total and usable bytes.
Topics null: every partition; otherwise the named partitions that exist (others are left out, as
Kafka does). Needs Describe on the cluster (the authorization rule answers
CLUSTER_AUTHORIZATION_FAILED with no results otherwise).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.describe_log_dirs.v4.request import DescribeLogDirsRequest

    from ...core.config import BrokerConfig
    from ...core.partitions import Partitions
    from ...wire.responses import DescribeLogDirsPartition, DescribeLogDirsResponse, DescribeLogDirsResult
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    partitions: Partitions
    config: BrokerConfig


def log_dir_path(config: BrokerConfig) -> str:
    return str(config.log_dirs[0].resolve())


def handle(deps: Deps, ctx: RequestContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    partitions = deps.partitions
    wanted: dict[str, set[int]] | None = None
    if request.topics is not None:
        wanted = {t.topic: set(t.partitions) for t in request.topics}
    by_topic: dict[str, list[DescribeLogDirsPartition]] = {}
    for plog in sorted(partitions.manager.logs(), key=lambda lg: (lg.topic, lg.partition)):
        if wanted is not None and plog.partition not in wanted.get(plog.topic, ()):
            continue
        by_topic.setdefault(plog.topic, []).append(
            {
                "partition_index": plog.partition,
                "partition_size": plog.size,
                "offset_lag": 0,
                "is_future_key": False,
            }
        )
    path = log_dir_path(deps.config)
    st = os.statvfs(path)
    result: DescribeLogDirsResult = {
        "error_code": 0,
        "log_dir": path,
        "topics": [{"name": name, "partitions": parts} for name, parts in by_topic.items()],
    }
    if ctx.api_version >= 4:
        result["total_bytes"] = st.f_blocks * st.f_frsize
        result["usable_bytes"] = st.f_bavail * st.f_frsize
    response: DescribeLogDirsResponse = {"throttle_time": 0, "results": [result]}
    if ctx.api_version >= 3:
        response["error_code"] = 0
    return response


ROUTE = control_route(ApiKey.DESCRIBE_LOG_DIRS, 1, 4, handle)
