"""Shared test servers: one real Valkey per test session (per xdist worker), never a fake; and one
real 6-node Valkey Cluster per session for the tests that ask for it.

With ``LADDER_TEST_STORE=cluster`` (tests/stores.py) ``valkey_url``, ``clean_redis_url``,
``redis_client`` and ``test_store`` lead to the cluster instead, tests marked ``single_store`` are
skipped with their reason, and tests that use no store of theirs at all (or only the cluster fixtures,
which ``make test`` already runs) are deselected: that mode exists to run the store tests again.
"""

from __future__ import annotations

import faulthandler
import os
import signal
from collections.abc import AsyncIterator, Iterator

import pytest

from book_store.connect import StoreClient
from ladder_process.embedded_valkey import EmbeddedValkey
from tests.stores import MODE, ON_CLUSTER, TestStore
from tests.valkey_cluster import ValkeyCluster

# Database 0 belongs to session-wide stacks; each test that wants a clean slate gets database 1,
# flushed before it runs (tests within one xdist worker run one after another). On a cluster (database
# 0 only) the whole cluster is flushed instead; tests sharing it meanwhile use key prefixes of their own.
CLEAN_DB = 1

STORE_FIXTURES = {"valkey_url", "clean_redis_url", "redis_client", "test_store"}
"""The fixtures that ``LADDER_TEST_STORE`` switches: a test using one of them runs in either mode."""
CLUSTER_FIXTURES = {"valkey_cluster", "clean_cluster_url"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "single_store(reason): cannot apply to a cluster; skipped with LADDER_TEST_STORE=cluster"
    )
    # A worker that is sent SIGTERM prints every thread's stack before it dies, where xdist would
    # only say "node down" (a segfault prints its own, a hang is pytest-timeout's).
    faulthandler.register(signal.SIGTERM, file=os.dup(2), all_threads=True, chain=True)


def pytest_report_header() -> str:
    return f"store: {MODE} (LADDER_TEST_STORE)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the cluster: skip ``single_store`` tests, deselect those that have no store to switch."""
    if not ON_CLUSTER:
        return
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        switched = (bool(names & STORE_FIXTURES) or item.path.parent.name == "e2e") and not (
            names & CLUSTER_FIXTURES
        )
        (kept if switched else deselected).append(item)
        marker = item.get_closest_marker("single_store")
        if switched and marker is not None:
            reason = marker.args[0] if marker.args else "single node only"
            item.add_marker(pytest.mark.skip(reason=f"single store: {reason}"))
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.fixture(scope="session")
def valkey_server() -> Iterator[EmbeddedValkey]:
    with EmbeddedValkey() as server:
        yield server


@pytest.fixture(scope="session")
def test_store(request: pytest.FixtureRequest) -> TestStore:
    """The store of this session's mode: the single Valkey server, or the session's cluster."""
    if ON_CLUSTER:
        cluster: ValkeyCluster = request.getfixturevalue("valkey_cluster")
        return TestStore(cluster.url, cluster)
    server: EmbeddedValkey = request.getfixturevalue("valkey_server")
    return TestStore(server.url)


@pytest.fixture(scope="session")
def valkey_url(test_store: TestStore) -> str:
    """URL of the session's Valkey server, database 0 (or of the cluster)."""
    return test_store.url


@pytest.fixture
def clean_redis_url(test_store: TestStore) -> str:
    """URL of a database (or the cluster) that is empty when the test starts."""
    url = test_store.database(CLEAN_DB)
    test_store.flush(url)
    return url


@pytest.fixture
async def redis_client(test_store: TestStore, clean_redis_url: str) -> AsyncIterator[StoreClient]:
    """An async client on an empty database (or cluster), closed after the test."""
    client = await test_store.client(clean_redis_url)
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
