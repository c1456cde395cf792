"""The shared weight budget against a real Valkey: exact limits, venue alignment, bans."""

import asyncio
import random
import time

import redis.asyncio as redis

from ingest_nodes.core.backoff import Backoff
from ingest_nodes.core.trusted_window import snapshot_limit
from ingest_nodes.venues.binance.limits import (
    FUTURES_DEPTH_WEIGHTS,
    SPOT_DEPTH_WEIGHTS,
    depth_weight,
)
from ingest_nodes.venues.budget import WeightBudget
from tests.waiting import away_from_minute_edge


def test_depth_weights_follow_the_published_tiers() -> None:
    assert [depth_weight(SPOT_DEPTH_WEIGHTS, n) for n in (1, 100, 101, 500, 501, 1000, 1001, 5000, 9999)] == [
        5, 5, 25, 25, 50, 50, 250, 250, 250,
    ]  # fmt: skip
    assert [depth_weight(FUTURES_DEPTH_WEIGHTS, n) for n in (5, 50, 100, 500, 1000)] == [2, 2, 5, 10, 20]


def test_snapshot_limit_is_the_cheapest_covering_tier() -> None:
    assert snapshot_limit(SPOT_DEPTH_WEIGHTS, 20) == 100
    assert snapshot_limit(SPOT_DEPTH_WEIGHTS, 100) == 100
    assert snapshot_limit(SPOT_DEPTH_WEIGHTS, 101) == 500
    assert snapshot_limit(FUTURES_DEPTH_WEIGHTS, 20) == 20
    assert snapshot_limit(FUTURES_DEPTH_WEIGHTS, 100) == 100
    assert snapshot_limit(SPOT_DEPTH_WEIGHTS, 10_000) == 5000


def test_backoff_is_capped_jittered_and_yields_to_retry_after() -> None:
    policy = Backoff(base_s=0.5, cap_s=4)
    rng = random.Random(1)
    waits = [policy.compute(attempt, rng=rng) for attempt in range(10)]
    assert all(0.25 <= w <= 4 for w in waits)
    assert max(waits[6:]) <= 4 and min(waits[6:]) >= 2
    assert policy.compute(3, retry_after_s=17) == 17


async def test_budget_is_exact_across_nodes(redis_client: redis.Redis) -> None:
    """Two nodes behind one egress IP never spend more than the limit together."""
    await away_from_minute_edge()
    nodes = [
        WeightBudget(redis_client, egress_id="nat-1", venue_host="api.example", limit=100) for _ in range(2)
    ]
    for _ in range(10):  # 10 x 10 = the whole limit, spread over both nodes
        await nodes[_ % 2].acquire(10)
    blocked = asyncio.create_task(nodes[0].acquire(5))
    await asyncio.sleep(0.2)
    assert not blocked.done(), "the 101st unit of weight must wait for the next minute"
    blocked.cancel()
    other_ip = WeightBudget(redis_client, egress_id="nat-2", venue_host="api.example", limit=100)
    await asyncio.wait_for(other_ip.acquire(50), 1)  # another egress IP has its own budget


async def test_venue_reported_weight_and_bans_are_shared(redis_client: redis.Redis) -> None:
    await away_from_minute_edge()
    budget = WeightBudget(redis_client, egress_id="nat-1", venue_host="api.example", limit=100)
    await budget.observe(95, time.time())  # the venue counts requests we did not make
    waiting = asyncio.create_task(budget.acquire(10))
    await asyncio.sleep(0.2)
    assert not waiting.done()
    waiting.cancel()

    banned = WeightBudget(redis_client, egress_id="nat-3", venue_host="api.example", limit=100)
    await banned.close_for(0.5)
    started = time.monotonic()
    await asyncio.wait_for(banned.acquire(1), 3)
    assert time.monotonic() - started >= 0.4
