"""The multiplexed stream (``ladder.v2``) over a real WebSocket: 50 books in diff mode on one socket,
kept by the SDK's LocalBook and compared with the truth at every update id, through resyncs, a
replica failover, a slow consumer and a reconnect with resume; and the protocol's answers."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, cast

import aiohttp
import orjson
import pytest
import redis.asyncio as redis
from ladder_sdk import AsyncLadder, Ladder, LocalBook
from ladder_sdk._client.stream import StreamSession
from ladder_sdk._client.watch import WatchSession

from book_store.catalog import MarketInfo
from book_store.codec import BookStatus, SnapshotMeta, encode_snapshot
from book_store.delta import encode_delta
from book_store.schema import BookKey
from ingest_nodes.core.book import OrderBook
from ladder_process.clock import now_ms
from read_functions.handlers.reads.multiplex import MultiStream
from tests.read_functions.helpers import Stack, open_stack, snapshot
from tests.waiting import wait_until

BOOKS = [BookKey("binance.com", f"M{i:02d}USDT") for i in range(50)]
DEPTH = 20
LEVELS = 40  # levels a side published: deeper than followed, so levels cross the depth's edge


@pytest.fixture
async def stack50(clean_redis_url: str, redis_client: redis.Redis) -> AsyncIterator[Stack]:
    markets = [MarketInfo(b.exchange, b.market, "TRADING", b.market[:3], "USDT") for b in BOOKS]
    stack = await open_stack(clean_redis_url, redis_client, markets)
    try:
        yield stack
    finally:
        await stack.close()


@dataclass
class Venue:
    """The true books: each replica's levels at each update id it published."""

    stack: Stack
    rng: random.Random = field(default_factory=lambda: random.Random(39))
    levels: dict[BookKey, tuple[dict[str, str], dict[str, str]]] = field(default_factory=dict)
    update_ids: dict[BookKey, int] = field(default_factory=dict)
    truth: dict[tuple[BookKey, int, int], tuple[list[list[str]], list[list[str]]]] = field(
        default_factory=dict
    )

    def start(self, book: BookKey) -> None:
        mid = 1000 + 10 * BOOKS.index(book)
        bids = {f"{mid - i}.{self.rng.randrange(100):02d}": "1.5" for i in range(1, LEVELS + 1)}
        asks = {f"{mid + i}.{self.rng.randrange(100):02d}": "2.5" for i in range(1, LEVELS + 1)}
        self.levels[book] = (bids, asks)
        self.update_ids[book] = 1

    def move(self, book: BookKey, changes: int = 6) -> None:
        """A venue event: quantities change, levels come and go (near the touch and past the depth)."""
        rng = self.rng
        for side in self.levels[book]:
            prices = list(side)
            for _ in range(changes):
                price = prices[rng.randrange(len(prices))]
                roll = rng.random()
                if price not in side:
                    continue
                if roll < 0.5:
                    side[price] = f"{rng.randrange(1, 900)}.{rng.randrange(1000):03d}"
                elif roll < 0.75 and len(side) > 5:
                    del side[price]
                else:
                    side[f"{float(price) + rng.choice((0.001, -0.001)):.3f}"] = "7.25"
        self.update_ids[book] += rng.randrange(1, 4)

    def put(self, book: BookKey, replica: int = 0, status: BookStatus = BookStatus.SYNCED) -> None:
        bids, asks = self.levels[book]
        bid_rows = [[p, bids[p]] for p in sorted(bids, key=float, reverse=True)][:LEVELS]
        ask_rows = [[p, asks[p]] for p in sorted(asks, key=float)][:LEVELS]
        update_id = self.update_ids[book]
        self.truth[book, replica, update_id] = (bid_rows[:DEPTH], ask_rows[:DEPTH])
        raw = snapshot(update_id, replica, status=status, bids=_encode(bid_rows), asks=_encode(ask_rows))
        self.stack.writer.put(book, replica, raw)

    async def drain(self) -> None:
        await self.stack.writer.drain()


def _encode(rows: list[list[str]]) -> list[bytes]:
    return [orjson.dumps(row) for row in rows]


@dataclass
class Client:
    """One socket's LocalBooks, checked against the venue's truth after every message."""

    venue: Venue
    books: dict[BookKey, LocalBook] = field(default_factory=dict)
    failure: BaseException | None = None
    checked: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    acks: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[tuple[BookKey, str]] = field(default_factory=list)

    def take(self, raw: str) -> None:
        message = orjson.loads(raw)
        kind = message["type"]
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if kind == "ack":
            self.acks.append(message)
            return
        book = BookKey(message["exchange"], message["market"])
        local = self.books.setdefault(book, LocalBook(book.exchange, book.market))
        local.apply(message)  # raises OutOfSync on a broken chain or a checksum mismatch
        if kind == "status":
            self.statuses.append((book, message["status"]))
            return
        assert local.replica is not None and local.update_id is not None
        bids, asks = self.venue.truth[book, local.replica, local.update_id]
        assert [[str(level.price), str(level.quantity)] for level in local.bids()] == _exact(bids), book
        assert [[str(level.price), str(level.quantity)] for level in local.asks()] == _exact(asks), book
        self.checked += 1

    def at(self, book: BookKey) -> tuple[int | None, int | None]:
        local = self.books.get(book)
        return (None, None) if local is None else (local.replica, local.update_id)


def _exact(rows: list[list[str]]) -> list[list[str]]:
    """The rows as the SDK hands them out (Decimals of the exact strings)."""
    return [[str(Decimal(p)), str(Decimal(q))] for p, q in rows]


async def _subscribe_tenant(stack: Stack) -> dict[str, str]:
    _, key = await stack.tenant(max_markets=len(BOOKS))
    headers = {"X-API-Key": key}
    body = {"exchange": "binance.com", "markets": [b.market for b in BOOKS]}
    async with stack.http.post(f"{stack.url}/v1/subscriptions/bulk", json=body, headers=headers) as r:
        assert r.status == 200, await r.text()
    return headers


async def _connect(stack: Stack, headers: dict[str, str]) -> aiohttp.ClientWebSocketResponse:
    return await stack.http.ws_connect(f"{stack.url}/v1/stream", headers=headers, protocols=("ladder.v2",))


def _text(message: dict[str, Any]) -> str:
    return orjson.dumps(message).decode()


def _subscribe(books: list[BookKey], resume: Client | None = None, depth: int = DEPTH) -> dict[str, Any]:
    wanted = []
    for book in books:
        item: dict[str, Any] = {
            "exchange": book.exchange,
            "market": book.market,
            "depth": depth,
            "mode": "diff",
        }
        if resume is not None:
            replica, update_id = resume.at(book)
            item["resume"] = {"replica": replica, "update_id": update_id}
        wanted.append(item)
    return {"op": "subscribe", "id": 1, "books": wanted}


async def _read(socket: aiohttp.ClientWebSocketResponse, client: Client) -> None:
    try:
        async for message in socket:
            if message.type is aiohttp.WSMsgType.TEXT:
                client.take(message.data)
    except Exception as exc:  # the test's wait names it
        client.failure = exc


def _caught_up(client: Client, venue: Venue, books: list[BookKey], replica: int = 0) -> bool:
    if client.failure is not None:
        raise AssertionError("the client failed") from client.failure
    return all(client.at(b) == (replica, venue.update_ids[b]) for b in books)


async def test_fifty_books_in_diff_mode_on_one_socket_equal_the_truth_throughout(stack50: Stack) -> None:
    stack = stack50
    venue = Venue(stack)
    for book in BOOKS:
        venue.start(book)
        venue.put(book)
    await venue.drain()
    headers = await _subscribe_tenant(stack)
    client = Client(venue)
    socket = await _connect(stack, headers)
    assert socket.protocol == "ladder.v2"
    await socket.send_str(_text(_subscribe(BOOKS)))
    reader = asyncio.create_task(_read(socket, client))
    await wait_until(lambda: _caught_up(client, venue, BOOKS), 10, "every book's snapshot")
    assert [r["result"] for r in client.acks[0]["results"]] == ["subscribed"] * 50

    # Steady changes: every book moves, one event per book per round.
    for _ in range(10):
        for book in BOOKS:
            venue.move(book)
            venue.put(book)
        await venue.drain()
        await asyncio.sleep(0.01)
    await wait_until(lambda: _caught_up(client, venue, BOOKS), 10, "the steady changes")
    assert client.kinds.get("diff", 0) > 100

    # A resync: the book says so at once, then a fresh snapshot once it is synced again.
    resynced = BOOKS[3]
    venue.move(resynced)
    venue.put(resynced, status=BookStatus.RESYNCING)
    await venue.drain()
    await wait_until(lambda: (resynced, "resyncing") in client.statuses, 5, "the status message")
    assert not client.books[resynced].synced
    snapshots = client.kinds["snapshot"]
    venue.move(resynced, changes=20)
    venue.put(resynced)
    await venue.drain()
    await wait_until(lambda: _caught_up(client, venue, [resynced]), 5, "the snapshot after the resync")
    assert client.kinds["snapshot"] == snapshots + 1

    # A replica failover: replica 1 keeps the book too, replica 0 goes stale: served from 1.
    failed = BOOKS[7]
    venue.put(failed, replica=1)
    await venue.drain()
    venue.move(failed)
    venue.put(failed, replica=0, status=BookStatus.STALE)
    venue.put(failed, replica=1)
    await venue.drain()
    await wait_until(lambda: _caught_up(client, venue, [failed], replica=1), 5, "the failover")
    venue.move(failed)
    venue.put(failed, replica=1)
    await venue.drain()
    await wait_until(lambda: _caught_up(client, venue, [failed], replica=1), 5, "diffs of replica 1")

    # A slow consumer: the client stops reading while every book keeps changing, until the server
    # feels it (its socket's buffers full: most books wait to be sent), and a while longer.
    (stream,) = _streams(stack)
    reader.cancel()
    others = [b for b in BOOKS if b != failed]
    rounds = blocked = 0
    while blocked < 10:
        rounds += 1
        assert rounds < 1000, "the server never felt the slow consumer"
        for book in others:
            venue.move(book, changes=30)
            venue.put(book)
        await venue.drain()
        blocked += stream.waiting > len(others) // 2
    print(f"the server felt the slow consumer after {rounds} rounds")
    reader = asyncio.create_task(_read(socket, client))
    await wait_until(lambda: _caught_up(client, venue, others), 20, "the slow consumer caught up")
    assert stream.merged > 0, "diffs were merged while the client was behind"

    # A reconnect with resume: the socket closes, books move, a new socket resumes every book.
    await socket.close()
    reader.cancel()
    for book in others:
        venue.move(book)
        venue.put(book)
    await venue.drain()
    socket = await _connect(stack, headers)
    snapshots = client.kinds["snapshot"]
    await socket.send_str(_text(_subscribe(others, resume=client)))
    reader = asyncio.create_task(_read(socket, client))
    await wait_until(lambda: _caught_up(client, venue, others), 10, "the resumed books")
    assert {r["result"] for r in client.acks[-1]["results"]} == {"resumed"}
    assert client.kinds["snapshot"] == snapshots, "resumed books get the diffs they missed, not snapshots"
    print(f"50 books: {client.checked} messages checked, {client.kinds}, merged {stream.merged}")
    reader.cancel()
    await socket.close()


async def test_books_published_as_deltas_are_diffed_from_them_and_stay_equal_to_the_truth(
    stack50: Stack,
) -> None:
    """As an ingest node publishes: a whole head, then deltas of it (its journal's positional
    operations); the stream's diffs are made from them and every client book equals the truth."""
    stack, books, rng = stack50, BOOKS[:10], random.Random(36)
    venue = Venue(stack)
    kept: dict[BookKey, tuple[OrderBook, list[int]]] = {}

    def meta(update_id: int) -> SnapshotMeta:
        published = now_ms()
        return SnapshotMeta(update_id, published - 2, published - 1, published, 0, BookStatus.SYNCED)

    def record(book: BookKey, order_book: OrderBook) -> None:
        update_id = venue.update_ids[book]
        rows = (
            [list(level) for level in order_book.bids()[:DEPTH]],
            [list(level) for level in order_book.asks()[:DEPTH]],
        )
        venue.truth[book, 0, update_id] = rows

    for book in books:
        order_book = OrderBook()
        order_book.load([(str(1000 - i), "1") for i in range(60)], [(str(1001 + i), "1") for i in range(60)],
                        bids_complete=True, asks_complete=True)  # fmt: skip
        order_book.open_journal(LEVELS)
        shown = [LEVELS, LEVELS]
        venue.update_ids[book] = 1
        head = encode_snapshot(meta(1), order_book.first_bids(LEVELS), order_book.first_asks(LEVELS))
        stack.writer.put(book, 0, head)
        kept[book] = (order_book, shown)
        record(book, order_book)
    await venue.drain()
    headers = await _subscribe_tenant(stack)
    client = Client(venue)
    socket = await _connect(stack, headers)
    await socket.send_str(_text(_subscribe(books)))
    reader = asyncio.create_task(_read(socket, client))
    await wait_until(lambda: _caught_up(client, venue, books), 10, "every book's snapshot")
    for _ in range(15):
        for book in books:
            order_book, shown = kept[book]
            for _event in range(rng.randint(1, 3)):  # near the touch, across the depth, past the head
                order_book.apply(
                    [(str(rng.randint(930, 1005)), str(rng.choice([0, 0, 1, 2, 3]))) for _ in range(8)],
                    [(str(rng.randint(996, 1070)), str(rng.choice([0, 0, 1, 2, 3]))) for _ in range(8)],
                )
            journal = order_book.take_journal()
            assert journal is not None
            counts = min(LEVELS, len(order_book.bids())), min(LEVELS, len(order_book.asks()))
            changes = (order_book.bid_changes(journal[0], shown[0], counts[0]),
                       order_book.ask_changes(journal[1], shown[1], counts[1]))  # fmt: skip
            update_id = venue.update_ids[book] = venue.update_ids[book] + 1
            stack.writer.put_delta(
                book, 0, encode_delta(meta(update_id), update_id - 1, 0, LEVELS, counts, *changes)
            )
            shown[:] = counts
            record(book, order_book)
        await venue.drain()
        await asyncio.sleep(0.01)
    await wait_until(lambda: _caught_up(client, venue, books), 10, "the deltas")
    assert client.kinds["snapshot"] == len(books) and client.kinds["diff"] >= 10 * len(books)
    assert stack.deps.books.doubts == 0
    reader.cancel()
    await socket.close()


def _streams(stack: Stack) -> list[MultiStream]:
    return [
        follower.owner
        for feed in stack.deps.diffs.feeds.values()
        for follower in feed.followers
        if hasattr(follower, "owner")
    ][:1]


async def test_refusals_use_the_read_error_codes_and_the_socket_goes_on(stack50: Stack) -> None:
    stack = stack50
    venue = Venue(stack)
    venue.start(BOOKS[0])
    venue.put(BOOKS[0])
    await venue.drain()
    _, key = await stack.tenant(max_markets=5)
    headers = {"X-API-Key": key}
    body = {"exchange": "binance.com", "market": BOOKS[0].market}
    async with stack.http.post(f"{stack.url}/v1/subscriptions", json=body, headers=headers) as r:
        assert r.status == 201
    socket = await _connect(stack, headers)
    books: list[dict[str, Any]] = [
        {"exchange": "binance.com", "market": BOOKS[0].market, "mode": "diff", "depth": 10},
        {"exchange": "binance.com", "market": BOOKS[1].market, "mode": "diff", "depth": 10},
        {"exchange": "binance.com", "market": "NOSUCH", "mode": "diff"},
        {"exchange": "binance.com", "market": BOOKS[0].market, "mode": "diff", "depth": 7},
        {"exchange": "binance.com", "market": BOOKS[0].market, "mode": "sideways"},
    ]
    await socket.send_str(orjson.dumps({"op": "subscribe", "id": "a", "books": books}).decode())
    ack = orjson.loads((await socket.receive(5)).data)
    assert ack["type"] == "ack" and ack["id"] == "a"
    results = [(r["result"], r.get("error", {}).get("code")) for r in ack["results"]]
    assert results == [
        ("subscribed", None),
        ("refused", "forbidden"),
        ("refused", "unknown_market"),
        ("refused", "invalid_request"),
        ("refused", "invalid_request"),
    ]
    first = orjson.loads((await socket.receive(5)).data)
    assert first["type"] == "snapshot" and len(first["bids"]) == 10 and isinstance(first["checksum"], int)
    for bad in (b"{", b"[1]", b'{"op": "dance"}', b'{"op": "subscribe", "books": []}'):
        await socket.send_str(bad.decode())
        answer = orjson.loads((await socket.receive(5)).data)
        assert answer["type"] == "error" and answer["error"]["code"] == "invalid_request", answer
    await socket.send_str(
        '{"op": "unsubscribe", "id": 2, "books": [{"exchange": "binance.com", "market": "M01USDT"}]}'
    )
    answer = orjson.loads((await socket.receive(5)).data)
    assert answer["results"][0]["error"]["code"] == "not_found"
    await socket.send_str(
        '{"op": "unsubscribe", "id": 3, "books": [{"exchange": "binance.com", "market": "M00USDT"}]}'
    )
    assert orjson.loads((await socket.receive(5)).data)["results"][0]["result"] == "unsubscribed"
    venue.move(BOOKS[0])
    venue.put(BOOKS[0])
    await venue.drain()
    with pytest.raises(asyncio.TimeoutError):
        await socket.receive(0.3)  # an unsubscribed book sends nothing more
    await socket.close()


async def test_a_socket_follows_at_most_max_stream_books(
    clean_redis_url: str, redis_client: redis.Redis
) -> None:
    markets = [MarketInfo(b.exchange, b.market, "TRADING", "M", "USDT") for b in BOOKS[:5]]
    stack = await open_stack(clean_redis_url, redis_client, markets, max_stream_books=3)
    try:
        _, key = await stack.tenant(max_markets=5)
        headers = {"X-API-Key": key}
        body = {"exchange": "binance.com", "markets": [b.market for b in BOOKS[:5]]}
        async with stack.http.post(f"{stack.url}/v1/subscriptions/bulk", json=body, headers=headers) as r:
            assert r.status == 200
        socket = await _connect(stack, headers)
        await socket.send_str(_text(_subscribe(BOOKS[:5], depth=10)))
        ack = orjson.loads((await socket.receive(5)).data)
        results = [(r["result"], r.get("error", {}).get("code")) for r in ack["results"]]
        assert results == [("subscribed", None)] * 3 + [("refused", "limit_exceeded")] * 2
        await socket.close()
    finally:
        await stack.close()


async def test_the_sdk_s_watch_keeps_verified_books_and_resubscribes_a_book_whose_checksum_fails(
    stack50: Stack,
) -> None:
    stack = stack50
    venue = Venue(stack)
    books = BOOKS[:3]
    for book in books:
        venue.start(book)
        venue.put(book)
    await venue.drain()
    headers = await _subscribe_tenant(stack)
    # The SDK agrees compression and deflates its subscribe messages, as browsers do: they are read.
    async with AsyncLadder(headers["X-API-Key"], base_url=stack.url) as ladder:
        watching = ladder.watch([(b.exchange, b.market) for b in books], depth=10)
        seen: set[str] = set()
        while len(seen) < 3:
            local = await anext(watching)
            assert local.synced and local.messages == 1
            seen.add(local.market)
        venue.move(books[0])
        venue.put(books[0])
        await venue.drain()
        local = await anext(watching)
        bids, _ = venue.truth[books[0], 0, venue.update_ids[books[0]]]
        assert local.update_id == venue.update_ids[books[0]] and local.best_bid is not None
        assert [str(local.best_bid.price), str(local.best_bid.quantity)] == _exact(bids)[0]
        await watching.aclose()

    def first_of_the_blocking_client() -> LocalBook:
        with Ladder(headers["X-API-Key"], base_url=stack.url) as blocking:
            books = blocking.watch([(BOOKS[1].exchange, BOOKS[1].market)], depth=5)
            try:
                return next(books)
            finally:
                books.close()

    local = await asyncio.to_thread(first_of_the_blocking_client)
    bids, _ = venue.truth[BOOKS[1], 0, venue.update_ids[BOOKS[1]]]
    assert local.synced and [[str(b.price), str(b.quantity)] for b in local.bids()] == _exact(bids)[:5]

    session = WatchSession(cast(StreamSession, None), [("binance.com", "M00USDT")], 10, "diff")
    names = {"exchange": "binance.com", "market": "M00USDT"}
    snapshot = {**names, "type": "snapshot", "replica": 0, "update_id": 5, "status": "synced",
                "bids": [["1.5", "2"]], "asks": [], "checksum": 0}  # fmt: skip
    voided, replies = session.accept(orjson.dumps(snapshot))
    assert voided is not None and not voided.synced and session.mismatches == voided.mismatches == 1
    assert orjson.loads(replies[0])["books"] == [{**names, "mode": "diff", "depth": 10}]
