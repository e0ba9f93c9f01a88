"""ShareGroupDescribe (key 77, v1; KIP-932): each share group's state, epochs, assignor and members
with their subscriptions and assignments. A group that does not exist, or is of another type, is
GROUP_ID_NOT_FOUND."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode as E

from ...wire.apis import ApiKey
from ..router import control_route

if TYPE_CHECKING:
    from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest

    from ...groups import GroupCoordinator
    from ...wire.responses import ShareGroupDescribeResponse
    from ..connection import RequestContext


@dataclass(frozen=True, slots=True)
class Deps:
    """The broker parts this handler uses, bound to it by `register_all`."""

    groups: GroupCoordinator


def handle(deps: Deps, ctx: RequestContext, request: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse:
    shares = deps.groups.share
    if shares is None:
        return {
            "throttle_time": 0,
            "groups": [
                {
                    "error_code": E.unsupported_version,
                    "error_message": "Share groups are not served by this broker.",
                    "group_id": g,
                    "group_state": "",
                    "group_epoch": 0,
                    "assignment_epoch": 0,
                    "assignor_name": "",
                    "members": [],
                }
                for g in request.group_ids
            ],
        }
    return {"throttle_time": 0, "groups": [shares.describe(g) for g in request.group_ids]}


ROUTE = control_route(ApiKey.SHARE_GROUP_DESCRIBE, 1, 1, handle)
