"""The vocabulary of the authorization rules (`rules`, `rules_coord`): the verdicts a rule
returns (`Reply`, `Partial`), the rule table and its decorator, and helpers to split a request
into its authorized and refused parts and to build refusals in a response's own shape."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode as E

from .acls import CLUSTER_NAME
from .acls import Operation as Op
from .acls import ResourceType as R

TOPIC_DENIED = E.topic_authorization_failed.value
GROUP_DENIED = E.group_authorization_failed.value
CLUSTER_DENIED = E.cluster_authorization_failed.value
TXN_DENIED = E.transactional_id_authorization_failed.value


@dataclass(slots=True)
class Reply:
    response: Any


@dataclass(slots=True)
class Partial:
    request: Any
    merge: Callable[[Any], Any]


RULES: dict[int, Callable] = {}


def rule(*api_keys: int):
    def add(fn):
        for k in api_keys:
            RULES[k] = fn
        return fn

    return add


# ---- helpers ---------------------------------------------------------------------------------
def plain(resp) -> dict:
    """A handler's response as a dict that refused items can be appended to."""
    if isinstance(resp, dict):
        return resp
    from ...wire.control import to_plain

    return to_plain(resp)


def extend(field: str, items: list) -> Callable[[Any], Any]:
    def merge(resp):
        current = getattr(resp, field, None)
        if isinstance(current, list):  # tidelog's own (mutable) hot-path responses
            current.extend(items)
            return resp
        d = plain(resp)
        d[field] = list(d.get(field) or ()) + items
        return d

    return merge


def split(items, allowed: Callable[[Any], bool]) -> tuple[list, list]:
    ok: list[Any] = []
    denied: list[Any] = []
    for item in items or ():
        (ok if allowed(item) else denied).append(item)
    return ok, denied


def cluster(session, op: int) -> bool:
    return session.allowed(R.CLUSTER, CLUSTER_NAME, op)


TOPIC_OPS = (Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS)
GROUP_OPS = (Op.READ, Op.DESCRIBE, Op.DELETE)
CLUSTER_OPS = (
    Op.CREATE,
    Op.ALTER,
    Op.DESCRIBE,
    Op.CLUSTER_ACTION,
    Op.DESCRIBE_CONFIGS,
    Op.ALTER_CONFIGS,
    Op.IDEMPOTENT_WRITE,
)


def authorized_operations(session, resource_type: int, name: str, ops) -> int:
    """Kafka's authorized-operations bit field (bit n = operation n) for this principal."""
    return sum(1 << int(op) for op in ops if session.allowed(resource_type, name, op))


def cluster_operations(session) -> int:
    """Kafka's answer to include_cluster_authorized_operations: 0 without Describe on the cluster."""
    if not cluster(session, Op.DESCRIBE):
        return 0
    return authorized_operations(session, R.CLUSTER, CLUSTER_NAME, CLUSTER_OPS)


def topic_name(ctx, t) -> str | None:
    name = getattr(t, "name", None) or getattr(t, "topic", None)
    if not name:
        tid = getattr(t, "topic_id", None)
        topic = ctx.broker.registry.by_id.get(tid) if tid is not None else None
        name = topic.name if topic is not None else None
    return name


def topic_allowed(session, ctx, op: int):
    def check(t) -> bool:
        name = topic_name(ctx, t)
        return name is None or session.allowed(R.TOPIC, name, op)  # unknown ids: the handler says so

    return check


def by_parts(
    session,
    ctx,
    request,
    field: str,
    op: int,
    reply_of: Callable[[list], Any],
    out_field: str,
    refused: Callable[[list], list],
):
    """The common per-topic shape: refuse denied topics, run the rest."""
    ok, denied = split(getattr(request, field), topic_allowed(session, ctx, op))
    if not denied:
        return None
    if not ok:
        return Reply(reply_of(refused(denied)))
    return Partial(
        dataclasses.replace(request, **{field: tuple(ok) if isinstance(getattr(request, field), tuple) else ok}),
        extend(out_field, refused(denied)),
    )
