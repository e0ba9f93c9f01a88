"""The vocabulary of the authorization rules (`rules`, `rules_coord`): the verdicts a rule
returns (`Reply`, `Partial`), the rule table and its decorator, and helpers to split a request
into its authorized and refused parts and to build refusals in a response's own shape."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from kio.schema.errors import ErrorCode as E

from ...core.acls import CLUSTER_NAME
from ...core.acls import Operation as Op
from ...core.acls import ResourceType as R

if TYPE_CHECKING:
    from ..connection import RequestContext
    from .session import Session

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


# None: every check passed; Reply: the whole request refused; Partial: the handler runs on a part
Verdict: TypeAlias = "Reply | Partial | None"
# a rule: (session, ctx, request) -> verdict; requests are kio messages (any version of the API)
# or tidelog's own hot-path codecs
Rule: TypeAlias = "Callable[[Session, RequestContext, Any], Verdict]"
_RuleT = TypeVar("_RuleT", bound=Rule)
_T = TypeVar("_T")

RULES: dict[int, Rule] = {}


def rule(*api_keys: int) -> Callable[[_RuleT], _RuleT]:
    def add(fn: _RuleT) -> _RuleT:
        for k in api_keys:
            RULES[k] = fn
        return fn

    return add


# ---- helpers ---------------------------------------------------------------------------------
def plain(resp: Any) -> dict[str, Any]:
    """A handler's response as a dict that refused items can be appended to."""
    if isinstance(resp, dict):
        return resp
    from ...wire.control import to_plain

    d: dict[str, Any] = to_plain(resp)
    return d


def extend(field: str, items: list[Any]) -> Callable[[Any], Any]:
    def merge(resp: Any) -> Any:
        current = getattr(resp, field, None)
        if isinstance(current, list):  # tidelog's own (mutable) hot-path responses
            current.extend(items)
            return resp
        d = plain(resp)
        d[field] = list(d.get(field) or ()) + items
        return d

    return merge


def split(items: Iterable[_T] | None, allowed: Callable[[_T], bool]) -> tuple[list[_T], list[_T]]:
    ok: list[_T] = []
    denied: list[_T] = []
    for item in items or ():
        (ok if allowed(item) else denied).append(item)
    return ok, denied


def cluster(session: Session, op: int) -> bool:
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


def authorized_operations(session: Session, resource_type: int, name: str, ops: Iterable[int]) -> int:
    """Kafka's authorized-operations bit field (bit n = operation n) for this principal."""
    return sum(1 << int(op) for op in ops if session.allowed(resource_type, name, op))


def cluster_operations(session: Session) -> int:
    """Kafka's answer to include_cluster_authorized_operations: 0 without Describe on the cluster."""
    if not cluster(session, Op.DESCRIBE):
        return 0
    return authorized_operations(session, R.CLUSTER, CLUSTER_NAME, CLUSTER_OPS)


def topic_name(ctx: RequestContext, t: Any) -> str | None:
    name: str | None = getattr(t, "name", None) or getattr(t, "topic", None)
    if not name:
        tid = getattr(t, "topic_id", None)
        topic = ctx.broker.registry.by_id.get(tid) if tid is not None else None
        name = topic.name if topic is not None else None
    return name


def topic_allowed(session: Session, ctx: RequestContext, op: int) -> Callable[[Any], bool]:
    def check(t: Any) -> bool:
        name = topic_name(ctx, t)
        return name is None or session.allowed(R.TOPIC, name, op)  # unknown ids: the handler says so

    return check


def by_parts(
    session: Session,
    ctx: RequestContext,
    request: Any,
    field: str,
    op: int,
    reply_of: Callable[[list[Any]], Any],
    out_field: str,
    refused: Callable[[list[Any]], list[Any]],
) -> Verdict:
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
