"""OKX and Bybit through the whole stack, under the venues' faults, judged by the read API.

Two properties hold throughout: whenever ``/v1/books`` says ``synced`` the book equals the venue's
true book at the served ``update_id`` (the wire ``seqId`` or ``u``), level count included unless
the answer says ``truncated``; and every fault ends in a resync of the books it hit alone (the
per-replica counters in the store say which, and why). Two replicas of each book ride on two
nodes and are cross-checked at equal ids.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from ladder_sdk import Ladder

from tests.e2e.stack import Stack, start_stack
from tests.e2e.test_faults import (
    eventually,
    node_stats,
    path,
    resyncs,
    start_book,
    subscribe,
    synced_replicas,
)
from tests.stores import SyncClient

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("okx-bybit")]

EXCHANGES = ("okx", "bybit", "bybit-linear")
BOOKS = {
    "okx": ("BTC-USDT", "ETH-USDT-SWAP"),
    "bybit": ("BTCUSDT", "ETHUSDT"),
    "bybit-linear": ("BTCUSDT", "SOLUSDT"),
}
DEPTH = 50


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    running = start_stack(
        extra_env={
            "LADDER_EXCHANGES": ",".join(EXCHANGES),
            "LADDER_CATALOG_REFRESH_S": "120",
            "LADDER_KEEPALIVE_MS": "200",
            "LADDER_CHECKPOINT_EVERY": "4",
            "LADDER_REPLICA_CHECK_INTERVAL_S": "1",
            "LADDER_STATS_INTERVAL_S": "0.3",
        },
        extra_venue_args=["--okx-symbols", "8", "--bybit-symbols", "8"],
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def key(stack: Stack) -> str:
    return stack.tenant_key(
        "okx-bybit", max_markets=100, max_replicas=2, rate_limit_rps=100_000, burst=100_000
    )


@pytest.fixture(scope="module")
def store(stack: Stack) -> Iterator[SyncClient]:
    client = stack.store(stack.redis_url)
    yield client
    client.close()


def read(stack: Stack, key: str, exchange: str, market: str, depth: int = DEPTH) -> dict[str, Any]:
    """One read; a synced answer must be the venue's true book at its id, as deep as asked or
    saying it is cut short."""
    response = stack.call(key, "GET", path(exchange, market), params={"depth": depth})
    if response.status_code != 200:
        return {"http": response.status_code}
    book = response.json()
    assert book["status"] == "synced", book
    truth = stack.truth(exchange, market, book["update_id"])
    assert truth.status_code == 200, truth.text
    true_book = truth.json()
    for side in ("bids", "asks"):
        served = [tuple(level) for level in book[side]]
        assert served == [tuple(level) for level in true_book[side][: len(served)]], (
            f"{exchange} {market} {side} differ from the venue at {book['update_id']}"
        )
        if not book["truncated"]:
            assert len(served) == min(depth, len(true_book[side])), f"{exchange} {market} {side}: level count"
    assert Decimal(book["bids"][0][0]) < Decimal(book["asks"][0][0])
    return {"http": 200, "update_id": book["update_id"], "truncated": book["truncated"]}


def synced(stack: Stack, key: str, exchange: str, market: str, timeout_s: float = 10.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        answer = read(stack, key, exchange, market)
        if answer["http"] == 200:
            return answer
        assert time.monotonic() < deadline, f"{exchange} {market} not synced in {timeout_s} s: {answer}"
        time.sleep(0.05)


def watch(stack: Stack, key: str, exchange: str, market: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        read(stack, key, exchange, market)
        time.sleep(0.01)


@pytest.mark.parametrize("exchange", EXCHANGES)
def test_markets_are_listed_and_books_served_equal_the_venue(
    stack: Stack, key: str, store: SyncClient, exchange: str
) -> None:
    eventually(
        lambda: stack.call(key, "GET", "/v1/markets", params={"exchange": exchange}).json().get("markets"),
        f"{exchange} markets listed",
        20,
    )
    listed = {
        m["market"]
        for m in stack.call(key, "GET", "/v1/markets", params={"exchange": exchange}).json()["markets"]
    }
    assert set(BOOKS[exchange]) <= listed
    for market in BOOKS[exchange]:
        start_book(stack, key, store, exchange, market)
        synced(stack, key, exchange, market)
        watch(stack, key, exchange, market, 0.5)
    tops = stack.call(key, "GET", "/v1/tops", params={"exchange": exchange})
    assert tops.status_code == 200, tops.text
    assert {t["market"] for t in tops.json()["tops"]} >= set(BOOKS[exchange])
    market = BOOKS[exchange][0]
    with Ladder(api_key=key, base_url=stack.api) as ladder:
        book = ladder.book(exchange, market, depth=5)
        assert book.status == "synced" and len(book.bids) == 5 and book.spread is not None
        streamed = next(iter(ladder.stream(exchange, market, depth=5)))
        assert streamed.market == market and streamed.exchange == exchange


@pytest.mark.parametrize("exchange", EXCHANGES)
def test_a_gap_resyncs_that_book_alone(stack: Stack, key: str, store: SyncClient, exchange: str) -> None:
    hit, other = BOOKS[exchange]
    for market in (hit, other):
        start_book(stack, key, store, exchange, market)
    before = resyncs(store, exchange, other)
    stack.fault(action="gap", venue=exchange, symbol=hit, count=2)
    eventually(lambda: resyncs(store, exchange, hit)["gap"] >= 2, "both replicas of the book resync")
    synced(stack, key, exchange, hit)
    watch(stack, key, exchange, hit, 0.5)
    assert resyncs(store, exchange, other) == before, "a gap on one book resynced another"


@pytest.mark.parametrize("exchange", EXCHANGES)
def test_duplicates_restarts_snapshots_disconnects(
    stack: Stack, key: str, store: SyncClient, exchange: str
) -> None:
    market = BOOKS[exchange][0]
    start_book(stack, key, store, exchange, market)
    before = resyncs(store, exchange, market)
    stack.fault(action="duplicate", venue=exchange, symbol=market)
    stack.fault(action="book_snapshot", venue=exchange, symbol=market)
    stack.fault(action="sequence_restart", venue=exchange, symbol=market)
    watch(stack, key, exchange, market, 1.0)
    assert resyncs(store, exchange, market) == before, "a repeat, a snapshot or an id restart is no gap"
    stack.fault(action="withhold", venue=exchange, symbol=market, seconds=0.5, resume="gap")
    eventually(lambda: resyncs(store, exchange, market)["gap"] > before["gap"], "withheld events are a gap")
    eventually(lambda: synced_replicas(store, exchange, market) == 2, "both replicas synced again", 10)
    stack.fault(action="disconnect", venue=exchange, symbol=market, mode="drop")
    eventually(lambda: resyncs(store, exchange, market)["disconnect"] >= 2, "both connections dropped")
    synced(stack, key, exchange, market)
    watch(stack, key, exchange, market, 0.5)


def test_deep_activity_and_drift_keep_answers_exact_or_truncated(
    stack: Stack, key: str, store: SyncClient
) -> None:
    exchange, market = "okx", "SOL-USDT"
    start_book(stack, key, store, exchange, market)
    stack.fault(action="deep_activity", venue=exchange, symbol=market, share=0.5)
    stack.fault(
        action="drift", venue=exchange, symbol=market, ticks_per_s=40, sweep_every_s=1, sweep_levels=20
    )
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        answer = read(stack, key, exchange, market, depth=400)
        assert answer["http"] in (200, 503)
    stack.fault(action="reset", venue=exchange)


def test_bulk_subscribe_by_filter_and_replicas_agree(stack: Stack, key: str, store: SyncClient) -> None:
    body = {"exchange": "bybit-linear", "quote": "USDT", "replicas": 2, "depth": 20}
    response = stack.call(key, "POST", "/v1/subscriptions/bulk", json=body)
    assert response.status_code in (200, 201), response.text
    for market in ("ETHUSDT", "XRPUSDT"):
        synced(stack, key, "bybit-linear", market, 20)
    eventually(lambda: sum(n["replica_checks"] for n in node_stats(store)) > 0, "replica comparisons", 20)
    assert sum(n["replica_mismatches"] for n in node_stats(store)) == 0
    subscribe(stack, key, "okx", "ETH-USDT")
