"""Silent stalls against the fake venue: a withheld stream is stale within 2 s and resyncs, a really
quiet market stays synced and is never resynced, and the checks' weight is counted."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis.asyncio as redis

from book_store.codec import BookStatus, Snapshot
from book_store.reader import BookReader
from ingest_nodes.runtime.replica import STALLED, UNCONFIRMED, BookReplica
from tests.ingest_nodes.runtime.harness import Harness, running, venue_config, wait_synced
from tests.waiting import wait_until

MARKETS = [("binance.com", "spot", "BNBBTC", 5), ("binance.com-futures", "futures", "SOLUSDT", 2)]
"""(exchange, venue, symbol, the weight of one check: the limit-5 snapshot)."""


async def stored_head(redis_client: redis.Redis, replica: BookReplica) -> Snapshot:
    return (await BookReader(redis_client).replicas(replica.book))[replica.replica]


async def settle(harness: Harness, replica: BookReplica) -> None:
    """Synced, with a rhythm of its events learnt."""
    await wait_synced([replica])
    await asyncio.sleep(1.5)  # some 15 gaps at 10 events a second


@pytest.mark.parametrize(("exchange", "venue", "symbol", "weight"), MARKETS)
async def test_a_withheld_active_market_is_stale_within_2_s_never_served_and_resyncs_when_events_resume(
    redis_client: redis.Redis, exchange: str, venue: str, symbol: str, weight: int
) -> None:
    async with running(venue_config(rate=10.0), redis_client) as harness:
        replica = harness.replica(exchange, symbol)
        await settle(harness, replica)
        frozen_at = replica.engine.update_id
        await harness.control(action="withhold", venue=venue, symbol=symbol, seconds=3.5, resume="gap")
        withheld = time.monotonic()
        while (await stored_head(redis_client, replica)).status is not BookStatus.STALE:
            assert time.monotonic() - withheld < 2.0, "a stalled active market must be stale within 2 s"
            await asyncio.sleep(0.02)
        detected = time.monotonic() - withheld
        assert replica.stats.stalls == 1 and replica.stats.stall_checks >= 1
        while time.monotonic() - withheld < 3.4:  # stale, or resyncing: never served as synced
            head = await stored_head(redis_client, replica)
            assert head.status is not BookStatus.SYNCED, f"a frozen book was synced again at {head.update_id}"
            await asyncio.sleep(0.05)
        await wait_until(lambda: replica.stats.resyncs["stall"] == 1, 3, "a resync once events resume")
        # why and when, for an operator: the turn to stale, then the resync
        assert replica.stats.last_stale is not None and replica.stats.last_stale[0] == STALLED
        assert replica.stats.last_resync is not None and replica.stats.last_resync[0] == "stall"
        assert replica.stats.last_resync[1] >= replica.stats.last_stale[1]
        assert replica.stats.to_json()["last_resync"] == {
            "reason": "stall",
            "at_ms": replica.stats.last_resync[1],
        }
        await wait_synced([replica])
        assert replica.engine.update_id is not None and replica.engine.update_id > (frozen_at or 0)
        await harness.truth(replica)
        assert harness.exchanges[exchange].stats.check_weight == replica.stats.stall_checks * weight
        print(f"{exchange}: stale {detected:.2f} s after the stall")


@pytest.mark.parametrize(("exchange", "venue", "symbol", "weight"), MARKETS)
async def test_a_really_quiet_market_stays_synced_confirmed_and_is_never_resynced(
    redis_client: redis.Redis, exchange: str, venue: str, symbol: str, weight: int
) -> None:
    # Checks every 0.3 s, doubling, and a stale_after that silence alone would pass many times over.
    settings = {"stall_floor_ms": 300, "stall_unknown_ms": 300, "stale_after_ms": 400, "keepalive_ms": 100}
    async with running(venue_config(rate=10.0), redis_client, **settings) as harness:
        replica = harness.replica(exchange, symbol)
        await settle(harness, replica)
        await harness.control(action="stall", venue=venue, symbol=symbol, seconds=6.0)
        quiet = time.monotonic()
        confirmations: set[int] = set()
        while time.monotonic() - quiet < 5.5:
            head = await stored_head(redis_client, replica)
            assert head.status is BookStatus.SYNCED, f"a quiet book turned {head.status.label}"
            if head.confirmed_time is not None:
                confirmations.add(head.confirmed_time)
            await asyncio.sleep(0.05)
        assert replica.stats.restarts == 0 and replica.stats.stalls == 0
        checks = replica.stats.stall_checks
        assert replica.stats.quiet_checks >= 3 and checks - replica.stats.quiet_checks <= 1  # one in flight
        assert len(confirmations) >= 3, "each confirmation is published"
        head = await stored_head(redis_client, replica)
        assert head.known_time == head.confirmed_time and head.known_time > (head.ingest_time or 0)
        stats = harness.exchanges[exchange].stats
        assert stats.check_weight == replica.stats.stall_checks * weight
        await harness.truth(replica)


async def test_a_silence_no_check_can_clear_is_stale_until_the_next_event(redis_client: redis.Redis) -> None:
    settings = {"stall_floor_ms": 200, "stall_unknown_ms": 200, "stale_after_ms": 300, "keepalive_ms": 100}
    async with running(venue_config(), redis_client, **settings) as harness:
        replica = harness.replica("binance.com-futures", "SOLUSDT")
        await settle(harness, replica)
        await harness.control(action="http_status", venue="futures", status=500, count=1000)
        await harness.control(action="stall", venue="futures", symbol="SOLUSDT", seconds=1.5)
        stalled = time.monotonic()
        while (await stored_head(redis_client, replica)).status is not BookStatus.STALE:
            assert time.monotonic() - stalled < 1.2, "unconfirmed silence must turn stale after stale_after"
            await asyncio.sleep(0.02)
        assert replica.stats.quiet_checks == 0 and replica.stats.snapshot_failures == 0
        while (await stored_head(redis_client, replica)).status is not BookStatus.SYNCED:
            assert time.monotonic() - stalled < 3, "the next event must make it synced again"
            await asyncio.sleep(0.02)
        assert replica.stats.stale_episodes == 1 and replica.stats.restarts == 0
        assert replica.stats.last_stale is not None and replica.stats.last_stale[0] == UNCONFIRMED
        assert replica.stats.last_resync is None
        await harness.truth(replica)
