"""The first broker of a cluster seeds etcd's ACLs and SCRAM credentials from its own files
(`cluster.security_state.SharedSecurity`), against the in-memory store (fake_store.py): a
rebuild from the cluster state asked before the seed - a broker's start-up reloads the state
first - must not empty those files' stores, or there is nothing left to seed."""

from __future__ import annotations

import asyncio

from fake_store import FakeStore

from tidelog.cluster.metadata import MetadataCache
from tidelog.cluster.model import Keys, root
from tidelog.cluster.security_state import SharedSecurity
from tidelog.core.acls import AclBinding, AclStore, Operation, PatternType, Permission, ResourceType
from tidelog.core.scram import CredentialStore, ScramCredential

KEYS = Keys(root("seed"))
READ_ORDERS = AclBinding(
    ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", Operation.READ, Permission.ALLOW
)


def broker_files(data_dir) -> tuple[AclStore, CredentialStore]:
    credentials = CredentialStore(data_dir)
    credentials.put("alice", "SCRAM-SHA-256", ScramCredential.from_password("SCRAM-SHA-256", "pw", 4096))
    credentials.save()
    acls = AclStore(data_dir)
    acls.add([READ_ORDERS])
    return acls, credentials


async def test_a_rebuild_before_the_seed_keeps_the_files_to_seed_with(tmp_path):
    store = FakeStore()
    first, second = tmp_path / "first", tmp_path / "second"
    second.mkdir()
    acls, credentials = broker_files(first)
    cache = MetadataCache(store, KEYS)
    shared = SharedSecurity(store, KEYS.security, cache, acls, credentials)
    await cache.load()
    shared.apply()  # what the reload at start-up asks, before seeding
    assert set(credentials.users) == {"alice"} and acls.bindings == {READ_ORDERS}
    watch = asyncio.ensure_future(cache.run())
    try:
        await shared.seed()
        shared.apply()
        assert set(credentials.users) == {"alice"} and acls.bindings == {READ_ORDERS}
        # a second broker, with no files of its own, gets them from etcd
        other_cache = MetadataCache(store, KEYS)
        other = SharedSecurity(store, KEYS.security, other_cache, AclStore(second), CredentialStore(second))
        await other_cache.load()
        await other.seed()  # already seeded: nothing written
        other.apply()
        assert set(other.credentials.users) == {"alice"} and other.acls.bindings == {READ_ORDERS}
    finally:
        watch.cancel()
