"""Where a change to the ACLs or the SCRAM credentials goes (CreateAcls, DeleteAcls,
AlterUserScramCredentials), asked the same way on a single node and in a cluster:

- a single node changes this broker's stores (and their files, `tidelog-acls.json`,
  `tidelog-scram.json`) at the call; the awaitable returned is already done;
- a cluster member writes the change to etcd (`cluster.security_state.SharedSecurity`); every
  broker applies it from its watch, and the awaitable ends once this broker's copy has it.

The composition root (server/broker.py) builds it once the cluster view is known. A write to etcd
that fails raises from the awaitable: the handler's request fails, as any unknown outcome does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...cluster.security_state import SharedSecurity
    from ...core.acls import AclBinding, AclFilter
    from ...core.scram import ScramCredential
    from . import Security


async def _done() -> None:
    """A change already made (a single node's, at the call)."""


class SecurityChanges:
    def __init__(self, security: Security, shared: SharedSecurity | None) -> None:
        self._security = security
        self._shared = shared  # None: a single node, whose stores are the truth

    def add_acls(self, bindings: list[AclBinding]) -> Awaitable[None]:
        if self._shared is not None:
            return self._shared.add_acls(bindings)
        self._security.acls.add(bindings)
        return _done()

    def remove_acls(self, filters: Sequence[AclFilter]) -> tuple[list[list[AclBinding]], Awaitable[None]]:
        """The bindings each filter removes (a binding matched by several filters is listed by the
        first only, as Kafka answers), and the awaitable of their removal."""
        acls = self._security.acls
        if self._shared is None:
            return [acls.remove(flt) for flt in filters], _done()
        removed: list[AclBinding] = []
        per_filter = []
        for flt in filters:
            gone = [b for b in acls.find(flt) if b not in removed]
            removed.extend(gone)
            per_filter.append(gone)
        return per_filter, (self._shared.remove_acls(removed) if removed else _done())

    def change_credentials(
        self, deletions: list[tuple[str, str]], upsertions: list[tuple[str, str, ScramCredential]]
    ) -> Awaitable[None]:
        """Delete then upsert SCRAM credentials ((user, mechanism[, credential]))."""
        if self._shared is not None:
            return self._publish(self._shared, deletions, upsertions)
        store = self._security.credentials
        changed = False
        for user, mech in deletions:
            changed |= store.delete(user, mech)
        for user, mech, cred in upsertions:
            store.put(user, mech, cred)
            changed = True
        if changed:
            store.save()
        return _done()

    @staticmethod
    async def _publish(
        shared: SharedSecurity, deletions: list[tuple[str, str]], upsertions: list[tuple[str, str, ScramCredential]]
    ) -> None:
        for user, mech in deletions:
            await shared.delete_credential(user, mech)
        for user, mech, cred in upsertions:
            await shared.put_credential(user, mech, cred)
