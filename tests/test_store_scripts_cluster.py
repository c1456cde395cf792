"""Every script and multi-key operation outside the control store, on a real 3-primary cluster:
each stays inside one hash tag, so none meets CROSSSLOT (the control store's own contract suite
runs on the cluster in tests/control_plane)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr
from redis.asyncio.cluster import RedisCluster

from book_store.catalog import MarketCatalog, MarketInfo
from book_store.connect import opened, store_client
from book_store.schema import BookKey
from book_store.unplaced import UnplacedBooks
from control_plane.models import Tenant
from ingest_nodes.runtime.credential_leases import CredentialLeases
from ingest_nodes.venues.budget import WeightBudget
from ingest_nodes.venues.credentials import Credential
from read_functions.tenancy.rate_limit import RateLimiter
from read_functions.tenancy.usage import UsageCounter
from tests.waiting import away_from_minute_edge


@pytest.fixture
async def cluster(clean_cluster_url: str) -> AsyncIterator[RedisCluster]:
    client = await opened(store_client(clean_cluster_url, cluster=True))
    assert isinstance(client, RedisCluster)
    yield client
    await client.aclose()


def market(exchange: str, name: str) -> MarketInfo:
    return MarketInfo(exchange, name, "TRADING", name[:-4], name[-4:])


async def test_catalogs_of_several_exchanges_are_replaced_in_one_transaction(cluster: RedisCluster) -> None:
    catalog = MarketCatalog(cluster)
    await catalog.replace("binance.com", [market("binance.com", "BTCUSDT"), market("binance.com", "ETHUSDT")])
    await catalog.replace("binance.com-futures", [market("binance.com-futures", "BTCUSDT")])
    digest = await catalog.digest("binance.com")
    assert sorted(await catalog.exchanges()) == ["binance.com", "binance.com-futures"]
    assert [m.market for m in sorted(await catalog.markets("binance.com"), key=lambda m: m.market)] == [
        "BTCUSDT",
        "ETHUSDT",
    ]
    await catalog.replace("binance.com", [market("binance.com", "BTCUSDT")])
    assert await catalog.count("binance.com") == 1 and await catalog.digest("binance.com") != digest


async def test_the_weight_budget_is_shared_and_closed_on_a_ban(cluster: RedisCluster) -> None:
    await away_from_minute_edge()
    nodes = [
        WeightBudget(cluster, egress_id="nat-1", venue_host="api.binance.com", limit=100) for _ in range(2)
    ]
    granted = [(await budget.take(30, 5))[0] for budget in nodes]
    assert sum(granted) == 3, "both nodes draw on one count: 3 x 30 fit in 100"
    await nodes[0].close_for(5)
    assert (await nodes[1].take(1, 1))[0] == 0


async def test_rate_limit_buckets_and_usage_counters_stay_in_their_tenants_slot(
    cluster: RedisCluster,
) -> None:
    tenants = [Tenant(f"tnt_{i}", f"t{i}", 10, 2, 1.0, 3, False, 0) for i in range(6)]
    limiter = RateLimiter(cluster)
    for tenant in tenants:
        assert (await limiter.take(tenant)).remaining >= 0
    usage = UsageCounter(cluster)
    for tenant in tenants:
        usage.count(tenant.id)
        usage.count(tenant.id)
    await usage.flush()
    reports = [await usage.report(t.id, now_ms=time.time_ns() // 1_000_000) for t in tenants]
    assert [r["requests_total"] for r in reports] == [2] * 6


async def test_venue_credential_leases_and_unplaced_books(cluster: RedisCluster) -> None:
    keys = [Credential(SecretStr(f"key{i}"), SecretStr("secret")) for i in range(4)]
    first = CredentialLeases(cluster, "alpaca-crypto", "node-a", keys)
    second = CredentialLeases(cluster, "alpaca-crypto", "node-b", keys)
    assert len(await first.hold(3)) == 3
    assert len(await second.hold(3)) == 1, "a key leased by one node is not handed to another"
    unplaced = UnplacedBooks(cluster)
    books = [BookKey("alpaca-crypto", f"C{i}/USD") for i in range(5)]
    await unplaced.replace({book: "no key" for book in books[:3]})
    assert await unplaced.reasons(books) == {book: "no key" for book in books[:3]}
