"""ACLs and SCRAM credentials shared by every broker of a cluster, kept in etcd.

One key per ACL binding and per (user, mechanism) credential, so concurrent changes made through
different brokers never overwrite each other:

    security/acls/<sha256 of the binding>         the binding (JSON, the fields of AclBinding)
    security/scram/<mechanism>/<user, %-quoted>   the credential (JSON: salt, iterations, keys)

A change (CreateAcls, DeleteAcls, AlterUserScramCredentials, through any broker or the CLIs that
call them) is written to etcd and answered once this broker's copy of the cluster state has it;
every broker rebuilds its authorizer's bindings and its credential store from the watched keys
(`apply`), and keeps its local files (`tidelog-acls.json`, `tidelog-scram.json`) as a mirror used
until it has read etcd at its next start. The first broker of a cluster seeds etcd from its own
files, once (a single node that becomes a cluster keeps its users and ACLs).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from .store import Compare, Op, Store

if TYPE_CHECKING:
    from ..core.acls import AclBinding, AclStore
    from ..core.scram import CredentialStore, ScramCredential
    from .metadata import MetadataCache

log = logging.getLogger("tidelog.cluster")

APPLIED_WAIT_S = 5.0
SEEDED = "seeded"  # the marker key (under the security prefix) of a cluster whose state was seeded


def acl_key(prefix: str, b: AclBinding) -> str:
    doc = json.dumps(asdict(b), sort_keys=True).encode()
    return f"{prefix}acls/{hashlib.sha256(doc).hexdigest()}"


def scram_key(prefix: str, user: str, mechanism: str) -> str:
    return f"{prefix}scram/{mechanism}/{quote(user, safe='')}"


class SharedSecurity:
    def __init__(
        self, store: Store, prefix: str, cache: MetadataCache, acls: AclStore, credentials: CredentialStore
    ) -> None:
        self.store = store
        self.prefix = prefix  # <root>security/
        self.cache = cache
        self.acls = acls  # the broker's ACL store and credentials, which the cluster's replace
        self.credentials = credentials

    # ---- writes (the handlers) -------------------------------------------------------------------
    async def add_acls(self, bindings: list[AclBinding]) -> None:
        ops = [Op.put(acl_key(self.prefix, b), json.dumps(asdict(b)).encode()) for b in bindings]
        await self._write(ops)

    async def remove_acls(self, bindings: list[AclBinding]) -> None:
        await self._write([Op.delete(acl_key(self.prefix, b)) for b in bindings])

    async def put_credential(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        await self._write([Op.put(scram_key(self.prefix, user, mechanism), json.dumps(credential.to_json()).encode())])

    async def delete_credential(self, user: str, mechanism: str) -> None:
        await self._write([Op.delete(scram_key(self.prefix, user, mechanism))])

    async def _write(self, ops: list[Op]) -> None:
        if not ops:
            return
        res = await self.store.txn([], ops)
        await self.cache.caught_up(res.revision, APPLIED_WAIT_S)  # answered once this broker applies it too

    # ---- the copy on this broker -----------------------------------------------------------------
    def apply(self) -> None:
        """Rebuild the local bindings and credentials from the cluster state, once it has one
        (the `seed` marker): before, etcd holds none, and this broker's own stay - a broker's
        start-up reloads the cluster state before it seeds, and emptying its stores then left
        nothing to seed with."""
        if self.prefix + SEEDED not in self.cache.security:
            return
        acls: list[AclBinding] = []
        users: dict[str, dict[str, ScramCredential]] = {}
        acl_store, credentials = self.acls, self.credentials
        for key, value in self.cache.security.items():
            rest = key[len(self.prefix) :]
            try:
                if rest.startswith("acls/"):
                    acls.append(acl_store.binding(json.loads(value)))
                elif rest.startswith("scram/"):
                    mechanism, _, user = rest[len("scram/") :].partition("/")
                    users.setdefault(unquote(user), {})[mechanism] = credentials.credential(json.loads(value))
            except (ValueError, TypeError, KeyError) as e:
                log.warning("ignoring malformed security key %s: %s", key, e)
        acl_store.replace(acls)
        credentials.replace(users)

    async def seed(self) -> None:
        """Once per cluster (the `security/seeded` marker, written in the same transaction): the
        first broker's own bindings and credentials become the cluster's. Never again after: a
        broker that was down while ACLs were deleted must not bring them back."""
        marker = self.prefix + SEEDED
        if marker in self.cache.security:
            return
        ops = [Op.put(marker, b"{}")]
        ops += [Op.put(acl_key(self.prefix, b), json.dumps(asdict(b)).encode()) for b in self.acls.bindings]
        for user, mechs in self.credentials.users.items():
            for mechanism, cred in mechs.items():
                ops.append(Op.put(scram_key(self.prefix, user, mechanism), json.dumps(cred.to_json()).encode()))
        res = await self.store.txn([Compare.create(marker, 0)], ops)
        if res.succeeded:
            await self.cache.caught_up(
                res.revision, APPLIED_WAIT_S
            )  # the copy has them before it replaces the local ones
        if res.succeeded and len(ops) > 1:
            log.info("cluster security state seeded from this broker: %d ACL bindings and credentials", len(ops) - 1)
