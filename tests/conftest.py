"""Shared test servers: one real Valkey per test session (per xdist worker), never a fake; and one
real 6-node Valkey Cluster per session for the tests that ask for it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import redis.asyncio as redis

from ladder_process.embedded_valkey import EmbeddedValkey
from tests.valkey_cluster import ValkeyCluster

# Database 0 belongs to session-wide stacks; each test that wants a clean slate gets database 1,
# flushed before it runs (tests within one xdist worker run one after another).
CLEAN_DB = 1


@pytest.fixture(scope="session")
def valkey_server() -> Iterator[EmbeddedValkey]:
    with EmbeddedValkey() as server:
        yield server


@pytest.fixture(scope="session")
def valkey_url(valkey_server: EmbeddedValkey) -> str:
    """URL of the session's Valkey server, database 0."""
    return valkey_server.url


@pytest.fixture
async def clean_redis_url(valkey_server: EmbeddedValkey) -> str:
    """URL of a database that is empty when the test starts."""
    url = f"redis://{valkey_server.host}:{valkey_server.port}/{CLEAN_DB}"
    client = redis.Redis.from_url(url)
    await client.flushdb()
    await client.aclose()
    return url


@pytest.fixture
async def redis_client(clean_redis_url: str) -> AsyncIterator[redis.Redis]:
    """An async client on an empty database, closed after the test."""
    client = redis.Redis.from_url(clean_redis_url)
    yield client
    await client.aclose()


@pytest.fixture(scope="session")
def valkey_cluster() -> Iterator[ValkeyCluster]:
    """3 primaries with a replica each, started the first time a test of the session asks.

    Tests must leave it whole: one that kills nodes starts a cluster of its own.
    """
    with ValkeyCluster() as cluster:
        yield cluster


@pytest.fixture
def clean_cluster_url(valkey_cluster: ValkeyCluster) -> str:
    """URL of one node of the session's cluster, every shard emptied before the test."""
    valkey_cluster.flush()
    return valkey_cluster.url
