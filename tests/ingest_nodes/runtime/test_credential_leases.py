"""Venue key leases in a real Valkey: one node per key, renewed, released, taken over after a death."""

from __future__ import annotations

import asyncio

import redis.asyncio as redis
from pydantic import SecretStr

from ingest_nodes.runtime.credential_leases import CredentialLeases, lease_name
from ingest_nodes.venues.credentials import Credential
from tests.stores import keys_matching

KEYS = [Credential(SecretStr(f"AKID{i}xxxxxxxx"), SecretStr(f"secret-{i}")) for i in range(3)]


async def test_nodes_never_hold_one_key_together(redis_client: redis.Redis) -> None:
    a = CredentialLeases(redis_client, "alpaca-crypto", "node-a", KEYS)
    b = CredentialLeases(redis_client, "alpaca-crypto", "node-b", KEYS)
    c = CredentialLeases(redis_client, "alpaca-crypto", "node-c", KEYS)
    assert await a.hold(2) == KEYS[:2]
    assert await b.hold(2) == KEYS[2:], "only one key was left"
    assert await c.hold(1) == []
    assert await a.hold(2) == KEYS[:2], "renewing keeps the same keys"
    await a.hold(1)  # needs fewer now: the second one goes back to the pool
    assert await c.hold(1) == [KEYS[1]]
    await b.release()
    assert await c.hold(2) == [KEYS[1], KEYS[2]]


async def test_a_dead_nodes_lease_runs_out(redis_client: redis.Redis) -> None:
    dead = CredentialLeases(redis_client, "alpaca-crypto", "dead", KEYS[:1], ttl_ms=200)
    heir = CredentialLeases(redis_client, "alpaca-crypto", "heir", KEYS[:1], ttl_ms=200)
    assert await dead.hold(1) == KEYS[:1]
    assert await heir.hold(1) == []
    await asyncio.sleep(0.3)
    assert await heir.hold(1) == KEYS[:1]


async def test_the_store_never_sees_a_key(redis_client: redis.Redis) -> None:
    leases = CredentialLeases(redis_client, "alpaca-crypto", "node-a", KEYS)
    await leases.hold(3)
    stored = [k.decode() for k in await keys_matching(redis_client, "ladder:venue-key:*")]
    assert sorted(stored) == sorted(lease_name("alpaca-crypto", k) for k in KEYS)
    assert not any("AKID" in k for k in stored)
    assert "secret" not in repr(KEYS[0]) and "AKID0x" not in repr(KEYS[0])
