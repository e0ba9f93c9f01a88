"""AlterReplicaLogDirs (key 34, v1-2): move partitions between log directories.

tidelog serves one log directory (the first of `log.dirs`), so it answers as a Kafka broker with
a single log directory does: a partition already in the named directory gets NONE (nothing to
move); a directory that is not the broker's log directory gets LOG_DIR_NOT_FOUND; a partition
that does not exist UNKNOWN_TOPIC_OR_PARTITION. Paths are compared as absolute paths. Needs
Alter on the cluster (the authorization rule answers CLUSTER_AUTHORIZATION_FAILED otherwise).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route
from .describe_log_dirs import log_dir_path

if TYPE_CHECKING:
    from kio.schema.alter_replica_log_dirs.v2.request import AlterReplicaLogDirsRequest

    from ...core.config import BrokerConfig
    from ...core.partitions import Partitions
    from ...wire.responses import AlterReplicaLogDirPartitionResult, AlterReplicaLogDirsResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    config: BrokerConfig
    partitions: Partitions


def handle(deps: Deps, ctx: RequestContext, request: AlterReplicaLogDirsRequest) -> AlterReplicaLogDirsResponse:
    partitions = deps.partitions
    current = log_dir_path(deps.config)
    results: dict[str, list[AlterReplicaLogDirPartitionResult]] = {}
    for d in request.dirs:
        dir_ok = os.path.isabs(d.path) and os.path.realpath(d.path) == current
        for t in d.topics:
            for p in t.partitions:
                if partitions.get(t.name, p) is None:
                    code = E.unknown_topic_or_partition.value
                elif not dir_ok:
                    code = E.log_dir_not_found.value
                else:
                    code = E.none.value
                results.setdefault(t.name, []).append({"partition_index": p, "error_code": code})
    return {
        "throttle_time": 0,
        "results": [{"topic_name": name, "partitions": parts} for name, parts in results.items()],
    }


ROUTE = control_route(ApiKey.ALTER_REPLICA_LOG_DIRS, 1, 2, handle)
