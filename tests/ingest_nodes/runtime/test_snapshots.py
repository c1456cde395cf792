"""The snapshot scheduler and the shared weight budget: batches of grants, bounded concurrency, 429/418."""

from __future__ import annotations

import asyncio
import math
import time
from contextlib import nullcontext

import redis.asyncio as redis

from ingest_nodes.core.events import DepthSnapshot
from ingest_nodes.runtime.snapshots import Priority, SnapshotError, SnapshotScheduler
from ingest_nodes.venues.budget import WeightBudget
from tests.ingest_nodes.runtime.harness import running, venue_config, wait_synced
from tests.waiting import away_from_minute_edge, wait_until

SPOT_SYMBOLS = ["BTCUSDT", "ETHUSDT", "ETHBTC", "BNBBTC", "BNBUSDT", "SOLUSDT", "XRPUSDT", "ADAUSDT"]


async def test_take_grants_what_fits_and_says_how_long_to_wait(redis_client: redis.Redis) -> None:
    await away_from_minute_edge()
    nodes = [WeightBudget(redis_client, egress_id="nat", venue_host="h/api", limit=100) for _ in range(2)]
    assert await nodes[0].take(10, 4) == (4, 0.0)
    granted, wait_s = await nodes[1].take(10, 10)  # two nodes, one egress IP: one limit
    assert granted == 6 and wait_s == 0.0
    granted, wait_s = await nodes[0].take(10, 1)
    assert granted == 0 and 0 < wait_s <= 60.5 - time.time() % 60
    late = WeightBudget(redis_client, egress_id="nat2", venue_host="h/api", limit=100, margin_ms=60_000)
    granted, wait_s = await late.take(1, 1)
    assert granted == 0 and wait_s <= 60.1, "nothing is granted within the margin before a window ends"


async def test_a_count_from_a_closed_window_is_not_carried_into_the_next(redis_client: redis.Redis) -> None:
    """A slow answer to a request of the last window says nothing about the new one."""
    await away_from_minute_edge()
    budget = WeightBudget(redis_client, egress_id="slow", venue_host="h/api", limit=100)
    await budget.observe(100, time.time() - 60)
    assert await budget.take(10, 1) == (1, 0.0)
    await budget.observe(100, time.time())
    assert (await budget.take(10, 1))[0] == 0


async def test_the_budget_caps_snapshots_and_the_venue_never_refuses(redis_client: redis.Redis) -> None:
    """A 50-weight budget pays for exactly ten spot snapshots (weight 5); the rest wait their turn."""
    await away_from_minute_edge()
    async with running(venue_config(), redis_client, weight_budget_share=50 / 6000) as harness:
        replicas = [harness.replica("binance.com", s) for s in [*SPOT_SYMBOLS, "DOGEUSDT", "LTCUSDT"]]
        replicas += [harness.replica("binance.com", s, index=2) for s in SPOT_SYMBOLS[:4]]
        scheduler = harness.exchanges["binance.com"].scheduler
        await wait_until(lambda: sum(r.engine.synced for r in replicas) == 10, 5, "ten synced books")
        await asyncio.sleep(0.5)
        assert sum(r.engine.synced for r in replicas) == 10
        syncs_waiting = scheduler.pending - scheduler.pending_background  # synced books may want refreshes
        assert scheduler.stats.weight_spent == 50 and syncs_waiting == 4 and scheduler.stats.waits >= 1
        stats = await harness.venue_stats()
        assert stats["http_429"] == 0 and stats["http_418"] == 0
        assert sum(stats["venues"]["spot"]["weight_used"].values()) == 50


async def test_requests_in_flight_never_exceed_the_concurrency(redis_client: redis.Redis) -> None:
    async with running(venue_config(), redis_client, snapshot_concurrency=3) as harness:
        await harness.control(action="snapshot_delay_ms", venue="spot", ms=150)
        replicas = [harness.replica("binance.com", s) for s in SPOT_SYMBOLS]
        await wait_synced(replicas)
        stats = harness.exchanges["binance.com"].stats
        assert stats.max_in_flight == 3
        assert stats.fetched >= len(SPOT_SYMBOLS)


async def test_a_429_closes_the_budget_for_retry_after(redis_client: redis.Redis) -> None:
    async with running(venue_config(), redis_client) as harness:
        await harness.control(action="http_status", venue="futures", status=429, retry_after=1)
        started = time.monotonic()
        replica = harness.replica("binance.com-futures", "BTCUSDT")
        await wait_synced([replica])
        assert time.monotonic() - started >= 0.9, "nothing may be sent before Retry-After passes"
        await harness.truth(replica)
        stats = harness.exchanges["binance.com-futures"].stats
        assert stats.http_status[429] == 1 and stats.failed == 1
        assert (await harness.venue_stats())["http_418"] == 0


async def test_a_418_ban_is_waited_out(redis_client: redis.Redis) -> None:
    async with running(venue_config(), redis_client) as harness:
        await harness.control(action="http_status", venue="spot", status=418, retry_after=2)
        started = time.monotonic()
        replicas = [harness.replica("binance.com", s) for s in SPOT_SYMBOLS[:3]]
        await wait_synced(replicas)
        assert time.monotonic() - started >= 1.9
        assert harness.exchanges["binance.com"].stats.http_status == {418: 1}


class Recorder:
    """A requester that records the order in which its snapshots arrive."""

    def __init__(self, symbol: str, priority: Priority, arrivals: list[str], limit: int = 100) -> None:
        self.symbol = symbol
        self.snapshot_limit = limit
        self.priority = priority
        self._arrivals = arrivals

    def snapshot_granted(self) -> bool:
        return True

    def fetching(self) -> nullcontext[None]:
        return nullcontext()

    def snapshot_arrived(self, snapshot: DepthSnapshot) -> None:
        self._arrivals.append(self.symbol)

    def snapshot_failed(self, error: SnapshotError) -> None:
        raise AssertionError(error)


async def test_books_that_were_serving_go_first(redis_client: redis.Redis) -> None:
    async with running(venue_config(), redis_client) as harness:
        runtime = harness.exchanges["binance.com"]
        scheduler = SnapshotScheduler(runtime.rest, runtime.budget, weight_of=lambda _limit: 5, concurrency=1)
        arrivals: list[str] = []
        for symbol in SPOT_SYMBOLS[:4]:
            scheduler.request(Recorder(symbol, Priority.FRESH, arrivals))
        scheduler.request(Recorder("SOLUSDT", Priority.URGENT, arrivals))
        task = asyncio.create_task(scheduler.run())
        await wait_until(lambda: len(arrivals) == 5, 5, "five snapshots")
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert arrivals == ["SOLUSDT", *SPOT_SYMBOLS[:4]]


async def test_background_requests_go_last_and_leave_half_the_window_to_syncs(
    redis_client: redis.Redis,
) -> None:
    """A 100-weight window: background refreshes (weight 5) stop at 50, a sync still gets its turn."""
    await away_from_minute_edge()
    async with running(venue_config(), redis_client, weight_budget_share=100 / 6000) as harness:
        runtime = harness.exchanges["binance.com"]
        scheduler = SnapshotScheduler(
            runtime.rest,
            runtime.budget,
            weight_of=lambda _limit: 5,
            concurrency=4,
            background_share=0.5,
            pace_burst_s=None,  # the cap alone
        )
        arrivals: list[str] = []
        for symbol in SPOT_SYMBOLS * 2:
            scheduler.request(Recorder(symbol, Priority.BACKGROUND, arrivals))
        task = asyncio.create_task(scheduler.run())
        await wait_until(lambda: len(arrivals) == 10, 5, "ten background snapshots")
        await asyncio.sleep(0.3)
        assert len(arrivals) == 10 and scheduler.stats.weight_spent == 50
        scheduler.request(Recorder("SOLUSDT", Priority.FRESH, arrivals, limit=99))  # queued after them all
        await wait_until(lambda: len(arrivals) == 11, 5, "the sync, at once")
        assert arrivals[-1] == "SOLUSDT" and scheduler.pending_background == 6
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_stall_checks_go_after_syncs_before_background_and_stay_within_their_share(
    redis_client: redis.Redis,
) -> None:
    """A 100-weight window: checks (weight 5) spend at most 10 of it; syncs go first, refreshes last."""
    await away_from_minute_edge()
    async with running(venue_config(), redis_client, weight_budget_share=100 / 6000) as harness:
        runtime = harness.exchanges["binance.com"]
        scheduler = SnapshotScheduler(
            runtime.rest,
            runtime.budget,
            weight_of=lambda _limit: 5,
            concurrency=1,
            check_share=0.1,
            pace_burst_s=None,  # the cap alone
        )
        arrivals: list[str] = []
        scheduler.request(Recorder("REFRESH", Priority.BACKGROUND, arrivals))
        for symbol in SPOT_SYMBOLS[:4]:
            scheduler.request(Recorder(symbol, Priority.CHECK, arrivals, limit=5))
        scheduler.request(Recorder("SOLUSDT", Priority.FRESH, arrivals))
        task = asyncio.create_task(scheduler.run())
        await wait_until(lambda: len(arrivals) == 3, 5, "a sync and two checks")
        await asyncio.sleep(0.3)
        assert arrivals == ["SOLUSDT", *SPOT_SYMBOLS[:2]], "checks wait once they spent 10 of the 100"
        assert scheduler.stats.check_weight == 10 and scheduler.stats.weight_spent == 15
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_backlog_of_stall_checks_drains_at_their_pace_not_at_once(redis_client: redis.Redis) -> None:
    """A 6000-weight window: checks (10 % of it) fill 10 weight a second, holding 2 s of it; a sync
    is never paced."""
    async with running(venue_config(), redis_client, weight_budget_share=1.0) as harness:
        runtime = harness.exchanges["binance.com"]
        scheduler = SnapshotScheduler(runtime.rest, runtime.budget, weight_of=lambda _limit: 5, concurrency=8)
        arrivals: list[str] = []
        for symbol in SPOT_SYMBOLS * 2:
            scheduler.request(Recorder(symbol, Priority.CHECK, arrivals, limit=5))
        task = asyncio.create_task(scheduler.run())
        started = time.monotonic()
        await asyncio.sleep(1.0)
        early = len(arrivals)
        assert 4 <= early <= 4 + 2 * math.ceil(time.monotonic() - started), arrivals  # 20 weight, then 10/s
        scheduler.request(Recorder("SOLUSDT", Priority.FRESH, arrivals, limit=99))
        await wait_until(lambda: "SOLUSDT" in arrivals, 2, "the sync, at once")
        assert arrivals.index("SOLUSDT") <= early + 3
        await wait_until(lambda: len(arrivals) == 2 * len(SPOT_SYMBOLS) + 1, 15, "every check, at its pace")
        seconds = time.monotonic() - started
        assert seconds >= (2 * len(SPOT_SYMBOLS) - 4) * 5 / 10 - 1, (
            f"{len(arrivals)} checks in {seconds:.1f} s"
        )
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_tickets_of_one_weight_are_not_wasted_by_requests_of_another(redis_client: redis.Redis) -> None:
    await away_from_minute_edge()
    async with running(venue_config(), redis_client) as harness:
        runtime = harness.exchanges["binance.com"]
        scheduler = SnapshotScheduler(
            runtime.rest, runtime.budget, weight_of=lambda limit: limit // 100, concurrency=2
        )
        arrivals: list[str] = []
        for i, symbol in enumerate(SPOT_SYMBOLS):
            limit = 500 if i % 2 else 100
            scheduler.request(Recorder(symbol, Priority.FRESH, arrivals, limit=limit))
        task = asyncio.create_task(scheduler.run())
        await wait_until(lambda: len(arrivals) == len(SPOT_SYMBOLS), 5, "every snapshot")
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert scheduler.stats.weight_spent == 4 * 1 + 4 * 5


async def test_a_server_error_is_retried_with_backoff(redis_client: redis.Redis) -> None:
    async with running(venue_config(), redis_client) as harness:
        await harness.control(action="http_status", venue="spot", status=503, count=2)
        replica = harness.replica("binance.com", "ETHBTC")
        await wait_synced([replica], 8)
        await harness.truth(replica)
        assert harness.exchanges["binance.com"].stats.http_status[503] == 2
