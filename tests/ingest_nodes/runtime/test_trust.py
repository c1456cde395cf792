"""Trust signals: gaps and crossed books resync, re-snapshots (silence: see test_stall_checks)."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as redis

from tests.ingest_nodes.runtime.harness import running, venue_config, wait_synced
from tests.waiting import wait_until


async def test_a_gap_resyncs_and_a_duplicate_does_not(redis_client: redis.Redis) -> None:
    async with running(venue_config(), redis_client) as harness:
        spot = harness.replica("binance.com", "ETHBTC")
        futures = harness.replica("binance.com-futures", "ETHUSDT")
        await wait_synced([spot, futures])
        await harness.control(action="duplicate", venue="spot", symbol="ETHBTC")
        await harness.control(action="duplicate", venue="futures", symbol="ETHUSDT")
        await asyncio.sleep(0.3)
        assert spot.stats.restarts == 0 and futures.stats.restarts == 0
        await harness.control(action="gap", venue="spot", symbol="ETHBTC", count=2)
        await harness.control(action="gap", venue="futures", symbol="ETHUSDT")
        await wait_until(
            lambda: spot.stats.resyncs["gap"] > 0 and futures.stats.resyncs["gap"] > 0, 3, "gaps"
        )
        await wait_synced([spot, futures])
        await harness.truth(spot)
        await harness.truth(futures)
        assert spot.stats.snapshots == 2 and futures.stats.snapshots == 2


async def test_a_crossed_book_is_an_alarm_and_resyncs(redis_client: redis.Redis) -> None:
    async with running(venue_config(), redis_client) as harness:
        replica = harness.replica("binance.com", "BNBBTC")
        await wait_synced([replica])
        await harness.control(action="cross", venue="spot", symbol="BNBBTC", updates=4)
        await wait_until(lambda: replica.stats.resyncs["crossed"] >= 1, 3, "the crossed alarm")
        await wait_synced([replica], 5)
        await harness.truth(replica)
        assert not replica.engine.book.is_crossed()


async def test_a_resnapshot_replaces_the_book_without_leaving_sync(redis_client: redis.Redis) -> None:
    async with running(venue_config(), redis_client) as harness:
        # 20 levels from a 100-level snapshot: the window lasts, no refresh comes before the audit.
        replica = harness.replica("binance.com", "ETHUSDT", depth=20)
        await wait_synced([replica])
        replica.resnapshot()
        deadline = time.monotonic() + 3
        while replica.stats.resnapshots == 0:
            assert replica.engine.synced, "the served book stays synced while the re-snapshot syncs"
            assert time.monotonic() < deadline, "the re-snapshot never synced"
            await asyncio.sleep(0.005)
        stats = replica.stats
        assert (stats.snapshots, stats.background_snapshots, stats.audits) == (1, 1, 1)
        assert stats.mismatches == 0 and stats.last_audit_ms is not None
        await harness.truth(replica)
