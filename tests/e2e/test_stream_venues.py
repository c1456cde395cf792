"""Kraken and Coinbase through the whole stack, under every fault the fake venue has for them.

Whenever ``/v1/books`` says ``synced``, the book equals the venue's true book as of the millisecond
it was last stamped with (``event_time``: the fake stamps a symbol's messages at least a millisecond
apart, so that names one state), to the depth served, or the answer says ``truncated``. A Kraken
message lost by the venue is visible to the checksum only where it changed the top 10, so under
the gap faults Kraken books are checked to the 10 levels its checksum proves; everything else is
checked to the depth served. A corrupted Kraken checksum resyncs that book within one message; a
lost Coinbase message resyncs every book of its connection and no other.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from ladder_sdk import Ladder

from tests.e2e.stack import Stack, start_stack
from tests.e2e.test_faults import eventually, path, replica_stats, resyncs, start_book
from tests.stores import SyncClient

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("stream_venues")]

KRAKEN, COINBASE = "kraken", "coinbase"
SETTLE_S = 6.0
DEPTH = 50


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    running = start_stack(
        extra_env={
            "LADDER_EXCHANGES": "kraken,coinbase",
            "LADDER_STALE_AFTER_MS": "1500",
            "LADDER_KEEPALIVE_MS": "200",
            "LADDER_STATS_INTERVAL_S": "0.3",
            "LADDER_STREAM_SNAPSHOT_WAIT_MS": "1500",
            "LADDER_REPLICA_CHECK_INTERVAL_S": "0.5",
        },
        extra_venue_args=["--kraken-symbols", "10", "--coinbase-symbols", "10"],
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def key(stack: Stack) -> str:
    return stack.tenant_key("streams", max_markets=100, max_replicas=2, rate_limit_rps=100_000, burst=100_000)


@pytest.fixture(scope="module")
def store(stack: Stack) -> Iterator[SyncClient]:
    client = stack.store(stack.redis_url)
    yield client
    client.close()


# -- helpers ---------------------------------------------------------------------------------------


def read(
    stack: Stack, key: str, exchange: str, market: str, checked: int = DEPTH, book_of: str | None = None
) -> dict[str, Any]:
    """One read; a synced answer is checked against the truth (of ``book_of``, the venue book the
    market is an alias of, if given) as of its ``event_time``, ``checked`` levels deep (a side
    shorter than that and not ``truncated`` must be the venue's whole side)."""
    response = stack.call(key, "GET", path(exchange, market), params={"depth": DEPTH})
    if response.status_code != 200:
        return {"http": response.status_code, "status": response.json()["error"]["code"]}
    book = response.json()
    assert book["status"] == "synced", book
    params = {"venue": exchange, "symbol": book_of or market, "at_ms": book["event_time"]}
    truth = stack.http.get(f"{stack.venue}/_fake/book", params=params)
    assert truth.status_code == 200, truth.text
    true_book = truth.json()
    for side in ("bids", "asks"):
        served = [tuple(level) for level in book[side]][:checked]
        expected = [tuple(level) for level in true_book[side]]
        assert served == expected[: len(served)], f"{exchange} {market} {side} differ at {book['event_time']}"
        if len(book[side]) < DEPTH and not book["truncated"]:
            assert len(book[side]) == len(expected), f"{market} {side}: a short side that is not the venue's"
    if book["bids"] and book["asks"]:
        assert Decimal(book["bids"][0][0]) < Decimal(book["asks"][0][0]), "a served book is never crossed"
    return {"http": 200, "status": "synced", "event_time": book["event_time"]}


def watch(
    stack: Stack,
    key: str,
    exchange: str,
    market: str,
    seconds: float,
    checked: int = DEPTH,
    book_of: str | None = None,
) -> list[dict[str, Any]]:
    answers = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        answers.append(read(stack, key, exchange, market, checked, book_of))
        time.sleep(0.01)
    return answers


def synced(stack: Stack, key: str, exchange: str, market: str) -> None:
    eventually(
        lambda: read(stack, key, exchange, market)["http"] == 200,
        f"{exchange} {market} synced again",
        SETTLE_S,
    )


def connections(stack: Stack, exchange: str, market: str) -> list[dict[str, Any]]:
    params = {"venue": exchange, "symbol": market}
    listed: list[dict[str, Any]] = stack.http.get(f"{stack.venue}/_fake/connections", params=params).json()[
        "connections"
    ]
    return listed


# -- the books, and what they show ---------------------------------------------------------------


@pytest.mark.parametrize(("exchange", "market"), [(KRAKEN, "BTC/USD"), (COINBASE, "BTC-USD")])
def test_books_are_true_while_the_venue_moves(
    stack: Stack, key: str, store: SyncClient, exchange: str, market: str
) -> None:
    start_book(stack, key, store, exchange, market)
    answers = watch(stack, key, exchange, market, 2.0)
    assert all(a["http"] == 200 for a in answers)
    info = stack.call(key, "GET", path(exchange, market) + "/info").json()
    checksums = [replica["checksum"] for replica in info["replicas"]]
    if exchange == KRAKEN:
        eventually(lambda: all(
            r["checksum"] and r["checksum"]["matched"] is True
            for r in stack.call(key, "GET", path(exchange, market) + "/info").json()["replicas"]),
            "every replica shows the venue's latest checksum, matched")  # fmt: skip
    else:
        assert checksums == [None, None], "Coinbase sends no checksum: none is shown"
    markets = stack.call(key, "GET", "/v1/markets", params={"exchange": exchange}).json()["markets"]
    assert market in {m["market"] for m in markets}


def test_a_corrupted_kraken_checksum_resyncs_that_book_within_one_message(
    stack: Stack, key: str, store: SyncClient
) -> None:
    exchange, market = KRAKEN, "ETH/USD"
    start_book(stack, key, store, exchange, market)
    other = "SOL/USD"
    start_book(stack, key, store, exchange, other)
    stack.fault(action="rate", venue="kraken", symbol=market, rate=0)
    time.sleep(0.3)
    stack.fault(action="kraken_checksum", venue="kraken", symbol=market, count=1)
    stack.fault(action="burst", venue="kraken", symbol=market, count=1)  # exactly one message
    eventually(lambda: resyncs(store, exchange, market)["checksum"] == 2, "both replicas saw the bad sum", 3)
    stack.fault(action="rate", venue="kraken", symbol=market, rate=20)
    synced(stack, key, exchange, market)
    watch(stack, key, exchange, market, 0.5)
    assert resyncs(store, exchange, other)["checksum"] == 0, "another book is untouched"


def test_a_lost_coinbase_message_resyncs_that_connections_books(
    stack: Stack, key: str, store: SyncClient
) -> None:
    exchange, markets = COINBASE, ["ETH-USD", "SOL-USD"]
    for market in markets:
        start_book(stack, key, store, exchange, market)
    shared = [c for c in connections(stack, exchange, markets[0]) if set(markets) <= set(c["products"])]
    assert shared, "a connection carries both books"
    before = {market: resyncs(store, exchange, market)["gap"] for market in markets}
    stack.fault(action="lose_message", venue="coinbase", connection=shared[0]["id"])
    for market in markets:
        eventually(lambda m=market: resyncs(store, exchange, m)["gap"] == before[m] + 1,  # type: ignore[misc]
                   f"{market}'s replica on that connection resyncs")  # fmt: skip
    for market in markets:
        answers = watch(stack, key, exchange, market, 0.5)
        assert all(a["http"] == 200 for a in answers), "the other replica of each book kept it served"
    for market in markets:
        assert resyncs(store, exchange, market)["gap"] == before[market] + 1, "only that connection's books"


# -- every other fault -----------------------------------------------------------------------------


@pytest.mark.parametrize(("exchange", "market"), [(KRAKEN, "XRP/USD"), (COINBASE, "XRP-USD")])
def test_a_gap_for_everyone(stack: Stack, key: str, store: SyncClient, exchange: str, market: str) -> None:
    start_book(stack, key, store, exchange, market)
    stack.fault(action="gap", venue=exchange, symbol=market, count=3)
    checked = 10 if exchange == KRAKEN else DEPTH  # the 10 levels Kraken's checksum proves
    watch(stack, key, exchange, market, 1.0, checked)
    if exchange == COINBASE:
        eventually(lambda: resyncs(store, exchange, market)["gap"] >= 2, "both replicas resync for the gap")
    synced(stack, key, exchange, market)


@pytest.mark.parametrize(("exchange", "market"), [(KRAKEN, "DOGE/USD"), (COINBASE, "DOGE-USD")])
def test_a_duplicate(stack: Stack, key: str, store: SyncClient, exchange: str, market: str) -> None:
    start_book(stack, key, store, exchange, market)
    for _ in range(3):
        stack.fault(action="duplicate", venue=exchange, symbol=market)
        watch(stack, key, exchange, market, 0.3)
    if exchange == KRAKEN:
        assert resyncs(store, exchange, market)["checksum"] == 0, "the last message again changes nothing"
    else:
        eventually(lambda: resyncs(store, exchange, market)["gap"] >= 2, "a repeated number breaks the run")
    synced(stack, key, exchange, market)


@pytest.mark.parametrize("mode", ["close", "drop"])
@pytest.mark.parametrize(("exchange", "market"), [(KRAKEN, "ADA/USD"), (COINBASE, "ADA-USD")])
def test_a_lost_connection(
    stack: Stack, key: str, store: SyncClient, exchange: str, market: str, mode: str
) -> None:
    start_book(stack, key, store, exchange, market)
    lost = resyncs(store, exchange, market)["disconnect"]
    newest = max(int(c["id"]) for c in connections(stack, exchange, market))
    stack.fault(action="disconnect", venue=exchange, symbol=market, mode=mode, connection=newest)
    answers = watch(stack, key, exchange, market, 1.0)
    eventually(lambda: resyncs(store, exchange, market)["disconnect"] > lost, "a resync for the lost socket")
    assert all(a["http"] == 200 for a in answers), "the other replica kept the book served"
    synced(stack, key, exchange, market)


@pytest.mark.parametrize(("exchange", "market"), [(KRAKEN, "LTC/USD"), (COINBASE, "LTC-USD")])
def test_a_quiet_market_stays_served_on_heartbeats(
    stack: Stack, key: str, store: SyncClient, exchange: str, market: str
) -> None:
    start_book(stack, key, store, exchange, market)
    restarts = sum(s["restarts"] for s in replica_stats(store, exchange, market).values())
    stack.fault(action="stall", venue=exchange, symbol=market, seconds=3.5)  # longer than stale_after
    answers = watch(stack, key, exchange, market, 3.0)
    assert all(a["http"] == 200 for a in answers), [a for a in answers if a["http"] != 200][:3]
    assert sum(s["restarts"] for s in replica_stats(store, exchange, market).values()) == restarts


@pytest.mark.parametrize("resume", ["replay", "gap"])
@pytest.mark.parametrize(("exchange", "market"), [(KRAKEN, "ETH/BTC"), (COINBASE, "ETH-BTC")])
def test_withheld_updates(
    stack: Stack, key: str, store: SyncClient, exchange: str, market: str, resume: str
) -> None:
    start_book(stack, key, store, exchange, market)
    stack.fault(action="withhold", venue=exchange, symbol=market, seconds=1.0, resume=resume)
    checked = 10 if exchange == KRAKEN and resume == "gap" else DEPTH
    watch(stack, key, exchange, market, 1.6, checked)
    if exchange == COINBASE and resume == "gap":
        eventually(lambda: resyncs(store, exchange, market)["gap"] >= 2, "the numbers show the loss")
    synced(stack, key, exchange, market)


@pytest.mark.parametrize(("exchange", "market"), [(KRAKEN, "DOT/USD"), (COINBASE, "AVAX-USD")])
def test_a_crossed_book_is_an_alarm(
    stack: Stack, key: str, store: SyncClient, exchange: str, market: str
) -> None:
    start_book(stack, key, store, exchange, market)
    stack.fault(action="cross", venue=exchange, symbol=market, updates=6)
    watch(stack, key, exchange, market, 1.0)
    eventually(lambda: resyncs(store, exchange, market)["crossed"] >= 2, "both replicas raise the alarm")
    synced(stack, key, exchange, market)


@pytest.mark.parametrize(("exchange", "market"), [(KRAKEN, "LINK/USD"), (COINBASE, "LINK-USD")])
def test_an_emptied_side_and_a_lost_snapshot(
    stack: Stack, key: str, store: SyncClient, exchange: str, market: str
) -> None:
    start_book(stack, key, store, exchange, market)
    stack.fault(action="rate", venue=exchange, symbol=market, rate=0)
    try:
        stack.fault(action="empty_book", venue=exchange, symbol=market, side="asks")
        eventually(lambda: stack.call(key, "GET", path(exchange, market)).json().get("asks") == [],
                   "a synced book without asks", 3)  # fmt: skip
        read(stack, key, exchange, market)
    finally:
        stack.fault(action="rate", venue=exchange, symbol=market, rate=20)
    synced(stack, key, exchange, market)
    # Each connection's next message is lost; a disconnect makes it the snapshot after the reconnect.
    for conn in connections(stack, exchange, market):
        stack.fault(action="lose_message", venue=exchange, connection=int(conn["id"]))
        stack.fault(action="disconnect", venue=exchange, connection=int(conn["id"]), mode="drop")
    synced(stack, key, exchange, market)
    watch(stack, key, exchange, market, 0.5)


def test_only_listed_trading_markets_can_be_subscribed(stack: Stack, key: str) -> None:
    for exchange, market in ((KRAKEN, "NOPE/USD"), (COINBASE, "NOPE-USD")):
        body = {"exchange": exchange, "market": market}
        response = stack.call(key, "POST", "/v1/subscriptions", json=body)
        assert response.status_code == 404, response.text


@pytest.mark.parametrize(
    ("exchange", "markets"), [(KRAKEN, ["BTC/USD", "ETH/USD"]), (COINBASE, ["BTC-USD", "ETH-USD"])]
)
def test_every_route_a_binance_book_has(stack: Stack, key: str, exchange: str, markets: list[str]) -> None:
    with Ladder(api_key=key, base_url=stack.api) as ladder:
        result = ladder.subscribe_many(exchange, markets, replicas=2, depth=20)
        assert not result.failed, result
        for market in markets:
            synced(stack, key, exchange, market)
        book = ladder.book(exchange, markets[0], depth=5)
        assert book.status == "synced" and len(book.bids) == 5 and book.spread is not None and book.spread > 0
        assert len(ladder.bids(exchange, markets[0], depth=3).bids) == 3
        reads = ladder.books(exchange, markets, depth=5)
        assert {r.market for r in reads} == set(markets)
        tops = [t for t in ladder.tops(exchange) if t.market in markets]
        assert len(tops) == 2 and all(t.bid is not None and t.status == "synced" for t in tops)
        streamed = []
        for streamed_book in ladder.stream(exchange, markets[1], depth=5):
            streamed.append(streamed_book)
            if len(streamed) == 3:
                break
        assert all(b.market == markets[1] and b.status == "synced" for b in streamed)
        assert exchange in ladder.exchanges()
    raw = stack.call(
        key, "GET", "/get_asks", params={"exchange": exchange, "market": markets[0], "limit_count": 3}
    )
    assert raw.status_code == 200 and raw.json()["result"] == "OK" and len(raw.json()["asks"]) == 3


# -- Coinbase's USDC aliases (run last: they put more connections on BTC-USD) -----------------------


def test_a_coinbase_usdc_alias_alone_is_served_from_its_usd_books_stream(
    stack: Stack, store: SyncClient
) -> None:
    """The fake labels the events of a BTC-USDC subscription ``BTC-USD``, as the real venue does: a
    tenant holding only BTC-USDC gets a synced book equal to the venue's BTC-USD book at every
    answer's ``event_time``."""
    alone = stack.tenant_key(
        "usdc-alone", max_markets=1, max_replicas=2, rate_limit_rps=100_000, burst=100_000
    )
    start_book(stack, alone, store, COINBASE, "BTC-USDC")
    answers = watch(stack, alone, COINBASE, "BTC-USDC", 1.5, book_of="BTC-USD")
    assert len(answers) > 10 and all(a["http"] == 200 for a in answers)
    assert len({a["event_time"] for a in answers}) > 1, "the book moved while it was read"
    assert connections(stack, COINBASE, "BTC-USDC") == [], "subscribed as the venue book, BTC-USD"


def test_a_tenant_holding_both_names_gets_both_books_synced_and_true(stack: Stack, store: SyncClient) -> None:
    both = stack.tenant_key("usdc-both", max_markets=2, max_replicas=2, rate_limit_rps=100_000, burst=100_000)
    for market in ("BTC-USD", "BTC-USDC"):
        start_book(stack, both, store, COINBASE, market)
    for market in ("BTC-USD", "BTC-USDC"):
        answers = watch(stack, both, COINBASE, market, 0.75, book_of="BTC-USD")
        assert all(a["http"] == 200 for a in answers), market
