"""OKX and Bybit books through the real runtime and the fake venue, under the venues' faults.

Every check compares a synced replica with the venue's true book at the replica's update id (the
wire ``seqId`` or ``u``), level for level: OKX and Bybit ids are the same on every connection, so
the truth endpoint can be asked for any recent one.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio as redis

from book_store.codec import BookStatus
from book_store.reader import BookReader
from ingest_nodes.runtime.replica import BookReplica
from tests.ingest_nodes.runtime.harness import Harness, published_as, running, venue_config, wait_synced
from tests.waiting import wait_until

OKX = ("okx", ["BTC-USDT", "ETH-USDT", "BTC-USDT-SWAP", "ETH-USDT-SWAP"])
BYBIT = ("bybit", ["BTCUSDT", "ETHUSDT", "SOLUSDT"])
BYBIT_LINEAR = ("bybit-linear", ["BTCUSDT", "ETHUSDT", "SOLUSDT"])
VENUES = [OKX, BYBIT, BYBIT_LINEAR]


async def all_true(harness: Harness, replicas: list[BookReplica]) -> None:
    for replica in replicas:
        assert replica.engine.synced, replica.symbol
        await harness.truth(replica)


def resyncs(replica: BookReplica) -> int:
    return sum(replica.stats.resyncs.values())


@pytest.mark.parametrize(("exchange", "symbols"), VENUES, ids=[v[0] for v in VENUES])
async def test_books_sync_from_the_stream_and_equal_the_venue(
    redis_client: redis.Redis, exchange: str, symbols: list[str]
) -> None:
    async with running(venue_config(), redis_client, exchanges=exchange) as harness:
        replicas = [harness.replica(exchange, symbol) for symbol in symbols]
        await wait_synced(replicas)
        for _ in range(3):
            await asyncio.sleep(0.2)
            await all_true(harness, replicas)
        assert harness.exchanges[exchange].stats.weight_spent == 0, "no REST book was needed to sync"
        await wait_until(
            lambda: all(published_as(harness, r) is BookStatus.SYNCED for r in replicas), 5, "published"
        )
        stored = await BookReader(redis_client).many([r.book for r in replicas])
        for replica in replicas:
            assert stored[replica.book][1].status is BookStatus.SYNCED


@pytest.mark.parametrize(("exchange", "symbols"), VENUES, ids=[v[0] for v in VENUES])
async def test_a_gap_resubscribes_that_book_alone(
    redis_client: redis.Redis, exchange: str, symbols: list[str]
) -> None:
    async with running(venue_config(), redis_client, exchanges=exchange) as harness:
        replicas = [harness.replica(exchange, symbol) for symbol in symbols]
        await wait_synced(replicas)
        hit, others = replicas[0], replicas[1:]
        before = [resyncs(r) for r in others]
        connects = harness.exchanges[exchange].feed.connection_totals().connects
        await harness.control(action="gap", venue=exchange, symbol=hit.symbol, count=2)
        await wait_until(lambda: hit.stats.resyncs["gap"] >= 1, 5, "the gap seen")
        await wait_synced(replicas)
        await all_true(harness, replicas)
        assert [resyncs(r) for r in others] == before, "a gap on one book touched another"
        assert harness.exchanges[exchange].feed.connection_totals().connects == connects, "no reconnect"


@pytest.mark.parametrize(("exchange", "symbols"), VENUES, ids=[v[0] for v in VENUES])
async def test_duplicates_restarts_snapshots_and_withheld_events(
    redis_client: redis.Redis, exchange: str, symbols: list[str]
) -> None:
    async with running(venue_config(), redis_client, exchanges=exchange) as harness:
        replicas = [harness.replica(exchange, symbol) for symbol in symbols]
        await wait_synced(replicas)
        book = replicas[0]
        await harness.control(action="duplicate", venue=exchange, symbol=book.symbol)
        await asyncio.sleep(0.3)
        assert resyncs(book) == 0, "the last message sent again is no gap"
        await harness.control(action="book_snapshot", venue=exchange, symbol=book.symbol)
        await harness.control(action="sequence_restart", venue=exchange, symbol=book.symbol)
        await asyncio.sleep(0.5)
        assert book.engine.synced and resyncs(book) == 0, "a snapshot or an id restart keeps the book"
        await harness.truth(book)
        await harness.control(action="duplicate", venue=exchange, symbol=book.symbol, back=3)
        await wait_until(lambda: book.stats.resyncs["gap"] >= 1, 5, "an older message is a gap")
        await harness.control(
            action="withhold", venue=exchange, symbol=book.symbol, seconds=0.5, resume="replay"
        )
        await asyncio.sleep(0.8)
        await wait_synced(replicas)
        await all_true(harness, replicas)


@pytest.mark.parametrize(("exchange", "symbols"), VENUES, ids=[v[0] for v in VENUES])
async def test_a_disconnect_resyncs_every_book_of_the_connection(
    redis_client: redis.Redis, exchange: str, symbols: list[str]
) -> None:
    async with running(venue_config(), redis_client, exchanges=exchange) as harness:
        replicas = [harness.replica(exchange, symbol) for symbol in symbols]
        await wait_synced(replicas)
        await harness.control(action="disconnect", venue=exchange, mode="drop")
        await wait_until(
            lambda: all(r.stats.resyncs["disconnect"] >= 1 for r in replicas), 5, "the drop seen"
        )
        await wait_synced(replicas, 15)
        await all_true(harness, replicas)


async def test_okx_quiet_books_live_on_heartbeats_and_a_silent_one_is_resubscribed(
    redis_client: redis.Redis,
) -> None:
    exchange, symbols = OKX
    async with running(venue_config(okx_heartbeat_s=0.5), redis_client, exchanges=exchange) as harness:
        replicas = [harness.replica(exchange, symbol) for symbol in symbols[:2]]
        await wait_synced(replicas)
        await harness.control(action="rate", venue="okx", rate=0)
        await asyncio.sleep(2.0)
        assert all(r.engine.synced and not resyncs(r) for r in replicas), "heartbeats keep quiet books"
        ids = [r.engine.update_id for r in replicas]
        await all_true(harness, replicas)
        assert [r.engine.update_id for r in replicas] == ids


async def test_okx_shutdown_notice_hands_books_over_without_losing_sync(redis_client: redis.Redis) -> None:
    exchange, symbols = OKX
    async with running(venue_config(), redis_client, exchanges=exchange) as harness:
        replicas = [harness.replica(exchange, symbol) for symbol in symbols]
        await wait_synced(replicas)
        await harness.control(action="server_shutdown", venue="okx")
        await wait_until(
            lambda: sum(r.stats.handovers for r in replicas) == len(replicas), 10, "every book handed over"
        )
        assert all(resyncs(r) == 0 for r in replicas)
        await all_true(harness, replicas)


async def test_bybit_stall_checks_ask_rest_for_the_books_u(redis_client: redis.Redis) -> None:
    exchange, symbols = BYBIT
    policy: dict[str, Any] = {"stall_floor_ms": 300, "stall_unknown_ms": 300}
    async with running(venue_config(), redis_client, exchanges=exchange, **policy) as harness:
        replica = harness.replica(exchange, symbols[0])
        await wait_synced([replica])
        await harness.control(action="rate", venue=exchange, rate=0)
        await wait_until(lambda: replica.stats.quiet_checks >= 1, 10, "a quiet book confirmed by REST")
        assert replica.engine.synced
        await harness.control(action="rate", venue=exchange, rate=20)
        await harness.control(action="withhold", venue=exchange, symbol=symbols[0], seconds=30)
        await wait_until(lambda: replica.stats.stalls >= 1, 10, "a withheld stream found stalled")
        await wait_until(lambda: replica.stats.resyncs["stall"] >= 1, 5, "and subscribed again")


async def test_bybit_audits_compare_a_rest_book_at_the_served_u(redis_client: redis.Redis) -> None:
    exchange, symbols = BYBIT
    async with running(venue_config(), redis_client, exchanges=exchange) as harness:
        replica = harness.replica(exchange, symbols[0])
        await wait_synced([replica])
        for audits in (1, 2):
            replica.resnapshot()
            await wait_until(lambda: replica.stats.audits >= audits, 10, "an audit at equal u")  # noqa: B023
        assert replica.stats.audit_mismatches == 0 and replica.engine.synced
        # A book that went wrong unseen (a level changed behind the stream's back) is caught.
        await harness.control(action="rate", venue=exchange, rate=0)
        await asyncio.sleep(0.3)
        book = replica.engine.book
        level = book.bids()[0]
        book.apply([(level[0], "123456789")], [])
        replica.resnapshot()
        await wait_until(lambda: replica.stats.audit_mismatches == 1, 10, "the audit disagrees")
        await wait_until(lambda: replica.stats.resyncs["audit_mismatch"] == 1, 5, "and the book resyncs")
        await harness.control(action="rate", venue=exchange, rate=20)
        await wait_synced([replica])
        await harness.truth(replica)
