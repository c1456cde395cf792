"""Consolidated books over real HTTP (and streamed over a real WebSocket), fed by a real writer
through Valkey, on five exchanges' catalogues.

The central property: every answer is exactly the merge of the snapshots it names, each at its own
``update_id`` (the test keeps every snapshot it published, so it rebuilds the answer from them and
sorts everything, as the server must not), never includes a book that is not served alone, and never
mixes quote currencies or instrument kinds unasked.
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import aiohttp
import orjson
import pytest

from book_store.catalog import PERPETUAL, CatalogState, MarketCatalog, MarketInfo
from book_store.codec import DEEP, MORE_ASKS, MORE_BIDS, BookStatus
from book_store.schema import BookKey
from ladder_process.clock import now_ms
from read_functions.handlers.reads.consolidated import (
    MAX_BOOKS,
    MAX_DEPTH,
    MAX_PAIRS,
    MAX_VENUES,
    one_per_venue_book,
)
from tests.read_functions.helpers import ALPACA, MARKETS, Stack, snapshot, validate
from tests.read_functions.wire import Reply, connect, read_reply

BINANCE = BookKey("binance.com", "BTCUSDT")
BINANCE_USDC = BookKey("binance.com", "BTCUSDC")
OKX = BookKey("okx", "BTC-USDT")
OKX_SWAP = BookKey("okx", "BTC-USDT-SWAP")
BYBIT = BookKey("bybit", "BTCUSDT")
BYBIT_LINEAR = BookKey("bybit-linear", "BTCUSDT")
USDT_BOOKS = (BINANCE, OKX, BYBIT)
CATALOGUES = {
    "binance.com": [
        *(m for m in MARKETS if m.exchange == "binance.com"),
        MarketInfo("binance.com", "BTCUSDC", "TRADING", "BTC", "USDC"),
    ],
    "okx": [
        MarketInfo("okx", "BTC-USDT", "TRADING", "BTC", "USDT"),
        MarketInfo("okx", "BTC-USDT-SWAP", "TRADING", "BTC", "USDT", PERPETUAL),
        MarketInfo("okx", "ETH-USDT", "TRADING", "ETH", "USDT"),
    ],
    "bybit": [MarketInfo("bybit", "BTCUSDT", "TRADING", "BTC", "USDT")],
    "bybit-linear": [MarketInfo("bybit-linear", "BTCUSDT", "TRADING", "BTC", "USDT", PERPETUAL)],
}


@pytest.fixture
async def venues(stack: Stack) -> Stack:
    for exchange, markets in CATALOGUES.items():
        await MarketCatalog(stack.store).replace(exchange, markets)
    return stack


async def get(stack: Stack, path: str, headers: dict[str, str], **params: Any) -> tuple[int, Any]:
    async with stack.http.get(f"{stack.url}{path}", headers=headers, params=params) as r:
        return r.status, await r.json()


def side(prices: list[str], qty: str = "1") -> list[bytes]:
    return [f'["{p}","{qty}"]'.encode() for p in prices]


class Published:
    """Every snapshot the test published, by book and update id, to rebuild answers from."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.levels: dict[tuple[BookKey, int], tuple[list[bytes], list[bytes]]] = {}

    async def book(
        self, book: BookKey, update_id: int, bids: list[bytes], asks: list[bytes], **kw: Any
    ) -> None:
        self.levels[book, update_id] = (bids, asks)
        replica = kw.pop("replica", 0)
        await self.stack.publish(book, replica, snapshot(update_id, replica, bids=bids, asks=asks, **kw))

    def expected(self, answer: dict[str, Any], depth: int) -> dict[str, list[Any]]:
        """The answer's levels rebuilt from the snapshots it names, by summing and sorting them all."""
        expected = {}
        for name, bids in (("bids", True), ("asks", False)):
            totals: dict[Decimal, Decimal] = defaultdict(Decimal)
            parts: dict[Decimal, dict[str, str]] = defaultdict(dict)
            for named in answer["books"]:
                book = BookKey(named["exchange"], named["market"])
                levels = self.levels[book, named["update_id"]][0 if bids else 1]
                for level in levels[:depth]:
                    price, qty = (s.decode() for s in level[2:-2].split(b'","'))
                    totals[Decimal(price)] += Decimal(qty)
                    parts[Decimal(price)][named["id"]] = qty
            best = sorted(totals, reverse=bids)[:depth]
            expected[name] = [[canonical(p), canonical(totals[p]), parts[p]] for p in best]
        return expected


def canonical(number: Decimal) -> str:
    return format(number.normalize(), "f")


def random_levels(rng: random.Random, mid: int, bids: bool) -> list[bytes]:
    ticks = sorted(rng.sample(range(1, 40), rng.randrange(1, 12)))  # best first on both sides
    levels = []
    for tick in ticks:
        price = Decimal(mid + (-tick if bids else tick)) / 100
        text = format(price, f".{rng.choice((2, 8))}f") if rng.random() < 0.5 else canonical(price)
        levels.append(f'["{text}","{rng.randrange(1, 10**5)}.{rng.randrange(10**8):08d}"]'.encode())
    return levels


async def settled(
    stack: Stack, me: dict[str, str], want: dict[BookKey, int], pair: str = "BTC-USDT", **params: Any
) -> dict[str, Any]:
    """The answer once every book of ``want`` is served at its update id (the feed is asynchronous)."""
    for _ in range(250):
        status, answer = await get(stack, f"/v1/consolidated/{pair}", me, **params)
        assert status == 200, answer
        named = {BookKey(b["exchange"], b["market"]): b["update_id"] for b in answer["books"]}
        if all(named.get(book) == uid for book, uid in want.items()):
            served: dict[str, Any] = answer
            return served
        await asyncio.sleep(0.02)
    raise AssertionError(f"never served {want}: {answer}")


async def test_every_answer_is_exactly_the_merge_of_the_snapshots_it_names(venues: Stack) -> None:
    stack = venues
    me = await stack.subscriber(*USDT_BOOKS)
    published = Published(stack)
    rng = random.Random(42)
    update_ids = dict.fromkeys(USDT_BOOKS, 1000)
    for _ in range(30):
        for book in rng.sample(USDT_BOOKS, rng.randrange(1, 4)):
            update_ids[book] += rng.randrange(1, 5)
            mid = 6_700_000 + rng.randrange(-3, 4)  # books of one pair overlap, and sometimes cross
            bids, asks = random_levels(rng, mid, True), random_levels(rng, mid, False)
            await published.book(book, update_ids[book], bids, asks)
        depth = rng.choice((1, 3, 10, 100))
        answer = await settled(stack, me, update_ids, depth=depth)
        validate(answer, "ConsolidatedBook")
        assert (answer["base"], answer["quote"], answer["quotes"], answer["depth"]) == (
            "BTC",
            "USDT",
            ["USDT"],
            depth,
        )
        assert {b["id"] for b in answer["books"]} == {"binance.com:BTCUSDT", "okx:BTC-USDT", "bybit:BTCUSDT"}
        assert answer["left_out"] == [] and not answer["truncated"]
        assert {k: answer[k] for k in ("bids", "asks")} == published.expected(answer, depth)
        bids, asks = answer["bids"], answer["asks"]
        assert answer["crossed"] == (bool(bids and asks) and Decimal(bids[0][0]) > Decimal(asks[0][0]))


async def test_a_book_not_served_alone_is_left_out_and_named_never_merged(venues: Stack) -> None:
    stack = venues
    me = await stack.subscriber(*USDT_BOOKS)
    published = Published(stack)
    await published.book(BINANCE, 10, side(["100.0"]), side(["101.0"]))
    await published.book(OKX, 20, side(["99.5"]), side(["100.5"]), status=BookStatus.RESYNCING)
    await published.book(BYBIT, 30, side(["99"]), side(["102"]), publish_time=1)  # silent for ages
    answer = await settled(stack, me, {BINANCE: 10})
    validate(answer, "ConsolidatedBook")
    assert [b["id"] for b in answer["books"]] == ["binance.com:BTCUSDT"]
    left = {b["exchange"]: b for b in answer["left_out"]}
    assert (left["okx"]["code"], left["okx"]["status"], left["okx"]["market"]) == (
        "book_not_synced",
        "resyncing",
        "BTC-USDT",
    )
    assert (left["bybit"]["code"], left["bybit"]["status"]) == ("book_not_synced", "stale")
    assert answer["bids"] == [["100", "1", {"binance.com:BTCUSDT": "1"}]]
    # A synced replica of okx next to the resyncing one goes in; the resyncing one never does.
    await published.book(OKX, 21, side(["99.6"]), side(["100.4"]), replica=1)
    answer = await settled(stack, me, {BINANCE: 10, OKX: 21})
    assert [b["replica"] for b in answer["books"] if b["exchange"] == "okx"] == [1]
    assert {k: answer[k] for k in ("bids", "asks")} == published.expected(answer, 100)
    # Too old for the caller: left out by name, like a read of it alone.
    status, young = await get(stack, "/v1/consolidated/BTC-USDT", me, max_age_ms=0)
    assert status == 200
    assert {b["code"] for b in young["left_out"] if b["exchange"] != "bybit"} <= {"book_too_old"}


async def test_quote_currencies_and_instrument_kinds_stay_apart_unless_asked(venues: Stack) -> None:
    stack = venues
    books = (*USDT_BOOKS, BINANCE_USDC, ALPACA, OKX_SWAP, BYBIT_LINEAR)
    me = await stack.subscriber(*books, max_markets=20)
    published = Published(stack)
    for i, book in enumerate(books):
        await published.book(book, 100 + i, side([f"{90 + i}.5"]), side([f"{110 + i}.5"]))
    usdt = await settled(stack, me, {b: 100 + i for i, b in enumerate(USDT_BOOKS)})
    assert {b["market"] for b in usdt["books"]} == {"BTCUSDT", "BTC-USDT"}  # no swap, no perpetual
    assert {b["quote"] for b in usdt["books"]} == {"USDT"}
    status, usd = await get(stack, "/v1/consolidated/btc-usd", me)
    assert status == 200, usd
    assert [b["id"] for b in usd["books"]] == ["alpaca-crypto:BTC/USD"] and usd["quotes"] == ["USD"]
    status, equated = await get(stack, "/v1/consolidated/BTC-USD", me, quotes="USD,USDT,usdc")
    assert status == 200, equated
    validate(equated, "ConsolidatedBook")
    assert equated["quotes"] == ["USD", "USDT", "USDC"]
    assert {b["id"]: b["quote"] for b in equated["books"]} == {
        "alpaca-crypto:BTC/USD": "USD",
        "binance.com:BTCUSDT": "USDT",
        "binance.com:BTCUSDC": "USDC",
        "okx:BTC-USDT": "USDT",
        "bybit:BTCUSDT": "USDT",
    }
    assert {k: equated[k] for k in ("bids", "asks")} == published.expected(equated, 100)
    status, error = await get(stack, "/v1/consolidated/BTC-USD", me, quotes="USDT,USDC")
    assert (status, error["error"]["code"]) == (400, "invalid_request")
    assert "own quote USD" in error["error"]["message"]


COINBASE_USD = BookKey("coinbase", "BTC-USD")
COINBASE_USDC = BookKey("coinbase", "BTC-USDC")
COINBASE = [
    MarketInfo("coinbase", "BTC-USD", "TRADING", "BTC", "USD"),
    MarketInfo("coinbase", "BTC-USDC", "TRADING", "BTC", "USDC", alias="BTC-USD"),
]


async def test_an_alias_of_a_book_merged_is_named_and_never_counted_twice(venues: Stack) -> None:
    """Coinbase's BTC-USDC is its BTC-USD book under another name: a tenant holding both, asking
    USD and USDC together, gets Coinbase's liquidity once, on the read, the tops and the stream."""
    stack = venues
    await MarketCatalog(stack.store).replace("coinbase", COINBASE)
    me = await stack.subscriber(ALPACA, COINBASE_USD, COINBASE_USDC)
    published = Published(stack)
    await published.book(ALPACA, 1, side(["100"], "2"), side(["101"], "2"))
    for book in (COINBASE_USD, COINBASE_USDC):  # one venue book, sent under each name
        await published.book(book, 7, side(["100", "99"], "0.5"), side(["100.5"], "0.5"))
    want = {ALPACA: 1, COINBASE_USD: 7}
    answer = await settled(stack, me, want, "BTC-USD", quotes="USD,USDC")
    validate(answer, "ConsolidatedBook")
    assert [b["id"] for b in answer["books"]] == ["alpaca-crypto:BTC/USD", "coinbase:BTC-USD"]
    assert [(b["market"], b["code"], b["alias_of"]) for b in answer["left_out"]] == [
        ("BTC-USDC", "alias", "BTC-USD")
    ]
    assert answer["bids"][0] == ["100", "2.5", {"alpaca-crypto:BTC/USD": "2", "coinbase:BTC-USD": "0.5"}]
    assert {k: answer[k] for k in ("bids", "asks")} == published.expected(answer, 100)
    # Asked from the USDC side, the book the alias names is still the one merged.
    usdc = await settled(stack, me, want, "BTC-USDC", quotes="USDC,USD")
    assert [b["id"] for b in usdc["books"]] == ["alpaca-crypto:BTC/USD", "coinbase:BTC-USD"]
    assert [b["market"] for b in usdc["left_out"]] == ["BTC-USDC"]
    status, tops = await get(stack, "/v1/consolidated/tops", me, pairs="BTC-USD", quotes="USD,USDC")
    assert status == 200, tops
    validate(tops, "ConsolidatedTops")
    (top,) = tops["tops"]
    assert top["bid"] == answer["bids"][0] and [b["code"] for b in top["left_out"]] == ["alias"]
    url = f"{stack.url}/v1/stream/consolidated?pair=BTC-USD&quotes=USD,USDC"
    async with stack.http.ws_connect(url, headers=me) as socket:
        streamed = await next_until(socket, at(want))
        assert (streamed["bids"], streamed["left_out"]) == (answer["bids"], answer["left_out"])


async def test_an_alias_whose_book_is_not_merged_is_a_book_like_any_other(venues: Stack) -> None:
    stack = venues
    await MarketCatalog(stack.store).replace("coinbase", COINBASE)
    only_usdc = await stack.subscriber(COINBASE_USDC)
    published = Published(stack)
    await published.book(COINBASE_USD, 3, side(["99"]), side(["101"]))
    await published.book(COINBASE_USDC, 3, side(["99"]), side(["101"]))
    answer = await settled(stack, only_usdc, {COINBASE_USDC: 3}, "BTC-USDC")
    assert answer["left_out"] == [] and answer["bids"] == [["99", "1", {"coinbase:BTC-USDC": "1"}]]
    # A tenant holding both, whose BTC-USD book is not synced: the alias serves the venue book.
    both = await stack.subscriber(COINBASE_USD, COINBASE_USDC)
    await published.book(COINBASE_USD, 4, side(["99"]), side(["101"]), status=BookStatus.RESYNCING)
    answer = await settled(stack, both, {COINBASE_USDC: 3}, "BTC-USD", quotes="USD,USDC")
    assert [b["id"] for b in answer["books"]] == ["coinbase:BTC-USDC"]
    assert [(b["market"], b["code"]) for b in answer["left_out"]] == [("BTC-USD", "book_not_synced")]
    await published.book(COINBASE_USD, 5, side(["99"]), side(["101"]))
    answer = await settled(stack, both, {COINBASE_USD: 5}, "BTC-USD", quotes="USD,USDC")
    assert [b["id"] for b in answer["books"]] == ["coinbase:BTC-USD"]
    assert [(b["market"], b["alias_of"]) for b in answer["left_out"]] == [("BTC-USDC", "BTC-USD")]


async def test_a_pair_subscription_holds_one_name_of_a_venue_book_and_costs_one_market(
    venues: Stack,
) -> None:
    """Asked for USD and USDC on Coinbase, one call subscribes BTC-USD, the book the read merges,
    and answers its alias BTC-USDC as skipped (code alias, alias_of): one venue book, one market
    of max_markets, one set of replicas; the read names the alias the same way, never forbidden."""
    stack = venues
    await MarketCatalog(stack.store).replace("coinbase", COINBASE)
    _, key = await stack.tenant(max_markets=2)
    me = {"X-API-Key": key}
    url = f"{stack.url}/v1/subscriptions/consolidated"
    body = {"pair": "BTC-USD", "venues": ["coinbase"], "quotes": ["USD", "USDC"], "depth": 50}
    async with stack.http.post(url, json=body, headers=me) as r:
        assert r.status == 200, await r.text()
        answer = await r.json()
    async with stack.http.get(f"{stack.url}/v1/subscriptions", headers=me) as r:
        assert [(s["exchange"], s["market"]) for s in (await r.json())["subscriptions"]] == [
            ("coinbase", "BTC-USD")
        ]
    async with stack.http.get(f"{stack.url}/v1/usage", headers=me) as r:
        assert (await r.json())["markets"] == 1
    validate(answer, "PairSubscriptionResult")
    counts = tuple(answer[k] for k in ("created", "updated", "skipped", "failed"))
    assert counts == (1, 0, 1, 0), answer
    created, skipped = answer["results"]
    assert (created["market"], created["result"]) == ("BTC-USD", "created")
    assert {k: skipped[k] for k in ("exchange", "market", "result", "alias_of")} == {
        "exchange": "coinbase", "market": "BTC-USDC", "result": "skipped", "alias_of": "BTC-USD"
    }  # fmt: skip
    assert skipped["error"]["code"] == "alias" and "BTC-USD" in skipped["error"]["message"]
    # Asked again, from the USDC side: the book held is updated, its alias skipped again.
    again = body | {"pair": "BTC-USDC", "quotes": ["USDC", "USD"], "depth": 100}
    async with stack.http.post(url, json=again, headers=me) as r:
        answer = await r.json()
    assert [(r["market"], r["result"], r.get("alias_of")) for r in answer["results"]] == [
        ("BTC-USDC", "skipped", "BTC-USD"), ("BTC-USD", "updated", None)
    ]  # fmt: skip
    assert answer["results"][1]["changed"] == {"depth": {"from": 50, "to": 100}}
    validate(answer, "PairSubscriptionResult")
    # The second of max_markets is still free.
    second = {"exchange": ALPACA.exchange, "market": ALPACA.market}
    async with stack.http.post(f"{stack.url}/v1/subscriptions", json=second, headers=me) as r:
        assert r.status == 201, await r.text()
    # The read merges the book once and names its other name as the subscription did.
    published = Published(stack)
    await published.book(COINBASE_USD, 7, side(["100"], "0.5"), side(["100.5"], "0.5"))
    read = await settled(stack, me, {COINBASE_USD: 7}, "BTC-USD", quotes="USD,USDC", venues="coinbase")
    assert [b["id"] for b in read["books"]] == ["coinbase:BTC-USD"]
    assert [(b["market"], b["code"], b["alias_of"]) for b in read["left_out"]] == [
        ("BTC-USDC", "alias", "BTC-USD")
    ]
    # The alias alone, in its own quote, is the one book that read would merge: the call subscribes
    # it (here past max_markets: BTC-USD and Alpaca's book hold both).
    async with stack.http.post(url, json={"pair": "BTC-USDC", "venues": ["coinbase"]}, headers=me) as r:
        assert r.status == 422 and (await r.json())["error"]["code"] == "limit_exceeded"


async def test_an_alias_named_alone_is_subscribed_by_its_own_name(venues: Stack) -> None:
    """A plain subscription of an alias, or a pair subscription that lists no other name of its
    book, subscribes the alias as it is named: a tenant may want BTC-USDC by that name."""
    stack = venues
    await MarketCatalog(stack.store).replace("coinbase", COINBASE)
    _, key = await stack.tenant(max_markets=2)
    me = {"X-API-Key": key}
    body = {"exchange": "coinbase", "market": "BTC-USDC"}
    async with stack.http.post(f"{stack.url}/v1/subscriptions", json=body, headers=me) as r:
        assert r.status == 201, await r.text()
    pair = {"pair": "BTC-USDC", "venues": ["coinbase"], "depth": 50}
    async with stack.http.post(f"{stack.url}/v1/subscriptions/consolidated", json=pair, headers=me) as r:
        answer = await r.json()
    assert (answer["updated"], answer["skipped"]) == (1, 0)
    assert [(r["market"], r["result"]) for r in answer["results"]] == [("BTC-USDC", "updated")]


def test_the_names_of_one_venue_book_are_merged_once() -> None:
    """The book the aliases name when it is there, else the first alias; other books untouched."""
    usdc, usdx, other = COINBASE_USDC, BookKey("coinbase", "BTC-USDX"), BookKey("coinbase", "ETH-USD")
    aliases = {usdc: COINBASE_USD, usdx: COINBASE_USD}
    assert one_per_venue_book([usdc, other, COINBASE_USD, usdx], aliases) == {
        usdc: COINBASE_USD, other: other, COINBASE_USD: COINBASE_USD, usdx: COINBASE_USD
    }  # fmt: skip
    assert one_per_venue_book([usdx, usdc], aliases) == {usdx: usdx, usdc: usdx}
    assert one_per_venue_book([usdc], aliases) == {usdc: usdc}
    assert one_per_venue_book([COINBASE_USD, other], {}) == {COINBASE_USD: COINBASE_USD, other: other}


async def test_a_crossed_consolidated_book_is_information_not_an_error(venues: Stack) -> None:
    stack = venues
    me = await stack.subscriber(BINANCE, OKX)
    published = Published(stack)
    await published.book(BINANCE, 5, side(["101.00000000"], "2.0"), side(["102.00000000"]))
    await published.book(OKX, 6, side(["100.5", "100"]), side(["100.8", "101"], "0.25"))
    answer = await settled(stack, me, {BINANCE: 5, OKX: 6})
    assert answer["crossed"] is True
    assert answer["bids"][0] == ["101", "2", {"binance.com:BTCUSDT": "2.0"}]
    assert answer["asks"][:2] == [
        ["100.8", "0.25", {"okx:BTC-USDT": "0.25"}],
        ["101", "0.25", {"okx:BTC-USDT": "0.25"}],
    ]


async def test_a_truncated_book_cuts_the_consolidated_side_where_its_knowledge_ends(venues: Stack) -> None:
    stack = venues
    me = await stack.subscriber(BINANCE, OKX)
    published = Published(stack)
    await published.book(BINANCE, 1, side([f"{100 - i}" for i in range(10)]), side(["200"]))
    # okx holds two bids and the venue more below 98.5: nothing below 98.5 is known in full.
    await published.book(OKX, 2, side(["99.5", "98.5"]), side(["201"]), flags=MORE_BIDS)
    answer = await settled(stack, me, {BINANCE: 1, OKX: 2}, depth=5)
    assert [level[0] for level in answer["bids"]] == ["100", "99.5", "99", "98.5"]
    assert answer["truncated"] is True
    assert {b["exchange"]: b["truncated"] for b in answer["books"]} == {"binance.com": False, "okx": True}
    _, shallow = await get(stack, "/v1/consolidated/BTC-USDT", me, depth=2)  # within what is known
    assert (len(shallow["bids"]), shallow["truncated"]) == (2, False)


async def test_a_deep_answer_merges_each_books_deep_snapshot(venues: Stack) -> None:
    stack = venues
    me = await stack.subscriber(BINANCE, BYBIT)
    published = Published(stack)
    head_bids = side([f"{1000 - i}" for i in range(100)])
    await published.book(BINANCE, 7, head_bids, side(["2000"]), flags=MORE_BIDS)
    deep_bids = side([f"{1000 - i}" for i in range(300)])
    published.levels[BINANCE, 7] = (deep_bids, side(["2000"]))
    await stack.publish(BINANCE, 0, snapshot(7, bids=deep_bids, asks=side(["2000"]), flags=DEEP), deep=True)
    await published.book(BYBIT, 8, side(["999.5"]), side(["2001"]), flags=MORE_ASKS)
    answer = await settled(stack, me, {BINANCE: 7, BYBIT: 8}, depth=250)
    assert len(answer["bids"]) == 250 and answer["bids"][1][0] == "999.5"
    assert {k: answer[k] for k in ("bids", "asks")} == published.expected(answer, 250)
    # bybit's asks go on past 2001 at the venue: nothing past it is known in full.
    assert [level[0] for level in answer["asks"]] == ["2000", "2001"]
    assert answer["truncated"] is True


async def test_each_book_needs_a_subscription(venues: Stack) -> None:
    stack = venues
    me = await stack.subscriber(BINANCE, OKX)
    published = Published(stack)
    for i, book in enumerate(USDT_BOOKS):
        await published.book(book, 50 + i, side([f"{99 - i}"]), side([f"{101 + i}"]))
    mine = await settled(stack, me, {BINANCE: 50, OKX: 51})
    assert {b["exchange"] for b in mine["books"]} == {"binance.com", "okx"}
    assert mine["left_out"] == []  # the caller named no venue: its own books of the pair
    status, named = await get(stack, "/v1/consolidated/BTC-USDT", me, venues="okx,bybit,alpaca-crypto")
    assert status == 200, named
    assert [b["exchange"] for b in named["books"]] == ["okx"]
    assert [(b["exchange"], b["code"]) for b in named["left_out"]] == [
        ("alpaca-crypto", "unknown_market"),  # it lists no BTC/USDT
        ("bybit", "forbidden"),
    ]
    stranger = await stack.subscriber(ALPACA)
    status, refused = await get(stack, "/v1/consolidated/BTC-USDT", stranger)
    assert (status, refused["error"]["code"]) == (403, "forbidden")
    assert "/v1/subscriptions/consolidated" in refused["error"]["message"]
    status, everything = await get(stack, "/v1/consolidated/BTC-USDT", stack.admin)  # the operator reads all
    assert status == 200 and len(everything["books"]) == 3


async def test_a_venue_whose_catalogue_is_not_loaded_is_named_not_unknown(venues: Stack) -> None:
    stack = venues
    now = now_ms()
    reason = "kraken /0/public/AssetPairs: cannot resolve api.kraken.com"
    failed = CatalogState("kraken", "unavailable", now, now, reason, retry_at_ms=now + 9000, failures=1)
    await MarketCatalog(stack.store).record(failed)
    me = await stack.subscriber(OKX)
    published = Published(stack)
    await published.book(OKX, 7, side(["99"]), side(["101"]))
    await settled(stack, me, {OKX: 7})
    for _ in range(100):  # the worker re-reads the catalogues' states within a second
        status, answer = await get(stack, "/v1/consolidated/BTC-USDT", me, venues="okx,kraken")
        if answer.get("left_out"):
            break
        await asyncio.sleep(0.05)
    assert status == 200 and [b["id"] for b in answer["books"]] == ["okx:BTC-USDT"]
    [kraken] = answer["left_out"]
    assert (kraken["exchange"], kraken["code"]) == ("kraken", "catalog_unavailable")
    assert reason in kraken["message"]
    async with stack.http.get(
        f"{stack.url}/v1/consolidated/BTC-USDT", headers=me, params={"venues": "kraken"}
    ) as r:  # nothing else asked: try again later, not "unknown"
        assert (r.status, (await r.json())["error"]["code"]) == (503, "catalog_unavailable")
        assert 1 <= int(r.headers["Retry-After"]) <= 9
    body = {"pair": "BTC-USDT", "venues": ["okx", "kraken"]}
    async with stack.http.post(f"{stack.url}/v1/subscriptions/consolidated", json=body, headers=me) as r:
        assert r.status == 200, await r.text()
        results = (await r.json())["results"]
    assert [(r["exchange"], r["result"]) for r in results] == [("okx", "updated"), ("kraken", "failed")]
    assert results[0]["changed"] == {} and results[1]["error"]["code"] == "catalog_unavailable"


async def test_one_call_subscribes_the_pair_on_several_venues_and_limits_count_each_book(
    venues: Stack,
) -> None:
    stack = venues
    _, key = await stack.tenant(max_markets=3)
    me = {"X-API-Key": key}
    body = {"pair": "BTC-USDT", "venues": ["binance.com", "okx", "bybit", "alpaca-crypto"], "depth": 50}
    async with stack.http.post(f"{stack.url}/v1/subscriptions/consolidated", json=body, headers=me) as r:
        assert r.status == 200, await r.text()
        answer = await r.json()
    validate(answer, "PairSubscriptionResult")
    assert (answer["pair"], answer["created"], answer["updated"], answer["failed"]) == ("BTC-USDT", 3, 0, 1)
    assert [(r["exchange"], r.get("market"), r["result"]) for r in answer["results"]] == [
        ("binance.com", "BTCUSDT", "created"),
        ("okx", "BTC-USDT", "created"),
        ("bybit", "BTCUSDT", "created"),
        ("alpaca-crypto", None, "failed"),
    ]
    async with stack.http.get(f"{stack.url}/v1/subscriptions", headers=me) as r:
        assert {(s["exchange"], s["market"], s["depth"]) for s in (await r.json())["subscriptions"]} == {
            ("binance.com", "BTCUSDT", 50),
            ("okx", "BTC-USDT", 50),
            ("bybit", "BTCUSDT", 50),
        }
    # Subscribing again changes only what the call names, and says what changed.
    again = {"pair": "BTC-USDT", "venues": ["binance.com", "okx", "bybit"]}
    for sent, changed, depth in [({}, {}, 50), ({"depth": 100}, {"depth": {"from": 50, "to": 100}}, 100)]:
        async with stack.http.post(
            f"{stack.url}/v1/subscriptions/consolidated", json=again | sent, headers=me
        ) as r:
            assert r.status == 200, await r.text()
            results = (await r.json())["results"]
        assert [(r["result"], r["changed"], r["subscription"]["depth"]) for r in results] == [
            ("updated", changed, depth)
        ] * 3
    async with stack.http.post(
        f"{stack.url}/v1/subscriptions/consolidated", json=again | {"depth": None}, headers=me
    ) as r:
        assert r.status == 400 and "leave it out" in (await r.json())["error"]["message"]
    # Each venue book counts against max_markets, all or nothing.
    more = {"pair": "BTC-USD", "venues": ["binance.com"], "quotes": ["USD", "USDC"]}
    async with stack.http.post(f"{stack.url}/v1/subscriptions/consolidated", json=more, headers=me) as r:
        assert r.status == 422, await r.text()
        assert (await r.json())["error"]["code"] == "limit_exceeded"
    # A depth one venue cannot keep refuses the whole call, naming it.
    deep = {"pair": "BTC-USDT", "venues": ["binance.com", "okx"], "depth": 1000}
    async with stack.http.post(f"{stack.url}/v1/subscriptions/consolidated", json=deep, headers=me) as r:
        assert r.status == 400 and "okx" in (await r.json())["error"]["message"]
    no_venues = {"pair": "BTC-USDT"}
    async with stack.http.post(f"{stack.url}/v1/subscriptions/consolidated", json=no_venues, headers=me) as r:
        assert r.status == 400 and "venues" in (await r.json())["error"]["message"]


async def test_tops_of_many_pairs_in_one_call(venues: Stack) -> None:
    stack = venues
    eth = BookKey("okx", "ETH-USDT")
    me = await stack.subscriber(BINANCE, OKX, eth)
    published = Published(stack)
    await published.book(BINANCE, 1, side(["100", "99"], "1.5"), side(["102"]))
    await published.book(OKX, 2, side(["100.0", "98"], "0.5"), side(["101.5", "103"]))
    await published.book(eth, 3, side(["10"]), side(["11"]))
    await settled(stack, me, {BINANCE: 1, OKX: 2})
    status, answer = await get(stack, "/v1/consolidated/tops", me, pairs="BTC-USDT,ETH-USDT,LTC-USDT,ETH-BTC")
    assert status == 200, answer
    validate(answer, "ConsolidatedTops")
    btc, eth_top, ltc, eth_btc = answer["tops"]
    assert btc["bid"] == ["100", "2", {"binance.com:BTCUSDT": "1.5", "okx:BTC-USDT": "0.5"}]
    assert btc["ask"] == ["101.5", "1", {"okx:BTC-USDT": "1"}]
    assert [b["update_id"] for b in btc["books"]] == [1, 2] and btc["crossed"] is False
    assert eth_top["bid"] == ["10", "1", {"okx:ETH-USDT": "1"}]
    assert (ltc["pair"], ltc["error"]["code"]) == ("LTC-USDT", "unknown_market")
    assert (eth_btc["pair"], eth_btc["error"]["code"]) == ("ETH-BTC", "forbidden")


async def test_a_steady_read_loads_no_book_and_makes_no_merge(venues: Stack) -> None:
    stack = venues
    me = await stack.subscriber(*USDT_BOOKS)
    published = Published(stack)
    for i, book in enumerate(USDT_BOOKS):
        await published.book(book, 60 + i, side([f"{99 - i}"]), side([f"{101 + i}"]))
    await settled(stack, me, {book: 60 + i for i, book in enumerate(USDT_BOOKS)})
    # The cache's misses are its loads from the store (the store's own HGETALL count would include
    # the catalog's timed rechecks, which a slow machine reaches within the test).
    loads, merges = stack.deps.books.misses, stack.deps.consolidated.merges
    for _ in range(5):
        status, _ = await get(stack, "/v1/consolidated/BTC-USDT", me)
        assert status == 200
    assert stack.deps.books.misses == loads
    assert stack.deps.consolidated.merges == merges
    await published.book(OKX, 99, side(["98.5"]), side(["101.5"]))
    await settled(stack, me, {OKX: 99})
    assert stack.deps.consolidated.merges == merges + 1


@pytest.mark.parametrize(
    ("path", "params", "status", "code"),
    [
        ("/v1/consolidated/BTCUSDT", {}, 400, "invalid_request"),
        ("/v1/consolidated/BTC-", {}, 400, "invalid_request"),
        ("/v1/consolidated/BTC-US%20DT", {}, 400, "invalid_request"),
        ("/v1/consolidated/" + "X" * 40 + "-USDT", {}, 400, "invalid_request"),
        ("/v1/consolidated/NOPE-USDT", {}, 404, "unknown_market"),
        ("/v1/consolidated/BTC-USDT", {"venues": "nosuch.exchange"}, 404, "unknown_exchange"),
        ("/v1/consolidated/BTC-USDT", {"venues": "Bad Venue"}, 400, "invalid_request"),
        (
            "/v1/consolidated/BTC-USDT",
            {"venues": ",".join(f"v{i}" for i in range(MAX_VENUES + 1))},
            400,
            "invalid_request",
        ),
        ("/v1/consolidated/BTC-USDT", {"venues": "okx," * 5_000}, 400, "invalid_request"),
        ("/v1/consolidated/BTC-USDT", {"depth": MAX_DEPTH + 1}, 400, "invalid_request"),
        ("/v1/consolidated/BTC-USDT", {"depth": 10**30}, 400, "invalid_request"),
        (
            "/v1/consolidated/BTC-USDT",
            {"quotes": ",".join(f"Q{i}" for i in range(9)) + ",USDT"},
            400,
            "invalid_request",
        ),
        ("/v1/consolidated/BTC-USDT", {"quotes": "USDT,US$"}, 400, "invalid_request"),
        ("/v1/consolidated/tops", {}, 400, "invalid_request"),
        (
            "/v1/consolidated/tops",
            {"pairs": ",".join(f"A{i}-USDT" for i in range(MAX_PAIRS + 1))},
            400,
            "invalid_request",
        ),
        ("/v1/consolidated/tops", {"pairs": "BTC-USDT,nonsense"}, 400, "invalid_request"),
    ],
)
async def test_hostile_questions_get_clear_errors_at_bounded_cost(
    venues: Stack, path: str, params: dict[str, Any], status: int, code: str
) -> None:
    me = await venues.subscriber(BINANCE)
    got, answer = await get(venues, path, me, **params)
    assert (got, answer["error"]["code"]) == (status, code), answer
    assert "X" * 40 not in answer["error"]["message"]  # nothing sent is echoed at length


async def test_too_many_books_for_one_answer_is_refused(venues: Stack) -> None:
    for exchange in ("bybit", "okx", "alpaca-crypto", "binance.com", "bybit-linear"):
        listed = [MarketInfo(exchange, f"BTCQ{i}", "TRADING", "BTC", f"Q{i}") for i in range(8)]
        await MarketCatalog(venues.store).replace(exchange, listed)
    got, answer = await get(
        venues, "/v1/consolidated/BTC-Q0", venues.admin, quotes=",".join(f"Q{i}" for i in range(8))
    )
    assert (got, answer["error"]["code"]) == (400, "invalid_request")
    assert f"at most {MAX_BOOKS}" in answer["error"]["message"]


# -- GET /v1/stream/consolidated ------------------------------------------------------------------
STREAM = "/v1/stream/consolidated?pair=BTC-USDT"


async def next_until(
    socket: aiohttp.ClientWebSocketResponse, done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The first message for which ``done`` holds (earlier ones are states on the way to it)."""
    while True:
        message = await asyncio.wait_for(socket.receive(), 5)
        assert message.type is aiohttp.WSMsgType.TEXT, message
        answer: dict[str, Any] = orjson.loads(message.data)
        if done(answer):
            return answer


def at(want: dict[BookKey, int]) -> Callable[[dict[str, Any]], bool]:
    """Whether an answer merges exactly the books of ``want``, each at its update id."""

    def check(answer: dict[str, Any]) -> bool:
        return {BookKey(b["exchange"], b["market"]): b["update_id"] for b in answer["books"]} == want

    return check


async def test_each_streamed_message_is_exactly_the_merge_of_the_snapshots_it_names(venues: Stack) -> None:
    stack = venues
    me = await stack.subscriber(*USDT_BOOKS)
    published = Published(stack)
    for i, book in enumerate(USDT_BOOKS):
        await published.book(book, 10 + i, side([f"{99 - i}", "97"]), side([f"{101 + i}", "103"]))
    async with stack.http.ws_connect(f"{stack.url}{STREAM}&depth=3", headers=me) as socket:
        answer = await next_until(socket, at({BINANCE: 10, OKX: 11, BYBIT: 12}))
        validate(answer, "ConsolidatedBook")
        assert answer["depth"] == 3 and answer["left_out"] == []
        assert {k: answer[k] for k in ("bids", "asks")} == published.expected(answer, 3)
        for step in range(3):  # okx's bid climbs through binance's ask: crossed, said so
            update_id = 20 + step
            await published.book(OKX, update_id, side([f"{100 + step}.5", "96"]), side(["102.5"]))
            answer = await next_until(socket, at({BINANCE: 10, OKX: update_id, BYBIT: 12}))
            assert {k: answer[k] for k in ("bids", "asks")} == published.expected(answer, 3)
            assert answer["crossed"] is (step > 0)
        _, read = await get(stack, "/v1/consolidated/BTC-USDT", me, depth=3)  # a read says the same
        assert [b["update_id"] for b in read["books"]] == [b["update_id"] for b in answer["books"]]
        assert (read["bids"], read["asks"], read["crossed"]) == (answer["bids"], answer["asks"], True)


async def test_a_streamed_book_not_served_alone_leaves_and_comes_back(venues: Stack) -> None:
    stack = venues
    me = await stack.subscriber(*USDT_BOOKS)
    published = Published(stack)
    for i, book in enumerate(USDT_BOOKS):
        await published.book(book, 30 + i, side(["99"]), side(["101"]))
    everyone = {"binance.com:BTCUSDT": "1", "okx:BTC-USDT": "1", "bybit:BTCUSDT": "1"}
    async with stack.http.ws_connect(f"{stack.url}{STREAM}&top=true", headers=me) as socket:
        top = await next_until(socket, at({BINANCE: 30, OKX: 31, BYBIT: 32}))
        validate(top, "ConsolidatedTop")
        assert top["bid"] == ["99", "3", everyone] and "bids" not in top
        await published.book(OKX, 33, side(["99.5"]), side(["100.5"]), status=BookStatus.RESYNCING)
        top = await next_until(socket, at({BINANCE: 30, BYBIT: 32}))
        assert [(b["exchange"], b["code"], b["status"]) for b in top["left_out"]] == [
            ("okx", "book_not_synced", "resyncing")
        ]
        assert top["bid"] == ["99", "2", {"binance.com:BTCUSDT": "1", "bybit:BTCUSDT": "1"}]
        await published.book(OKX, 34, side(["99.5"]), side(["100.5"]))
        top = await next_until(socket, at({BINANCE: 30, OKX: 34, BYBIT: 32}))
        assert top["left_out"] == [] and top["bid"] == ["99.5", "1", {"okx:BTC-USDT": "1"}]


async def test_a_dropped_subscription_is_left_out_or_ends_the_stream(venues: Stack) -> None:
    stack = venues
    me = await stack.subscriber(BINANCE, OKX)
    published = Published(stack)
    await published.book(BINANCE, 40, side(["99"]), side(["101"]))
    await published.book(OKX, 41, side(["98"]), side(["102"]))
    async with (
        stack.http.ws_connect(f"{stack.url}{STREAM}&venues=binance.com,okx", headers=me) as named,
        stack.http.ws_connect(stack.url + STREAM, headers=me) as mine,
    ):
        await next_until(named, at({BINANCE: 40, OKX: 41}))
        await next_until(mine, at({BINANCE: 40, OKX: 41}))
        async with stack.http.delete(f"{stack.url}/v1/subscriptions/okx/BTC-USDT", headers=me) as r:
            assert r.status == 204
        answer = await next_until(named, at({BINANCE: 40}))  # at the next recheck, within a second
        assert [(b["exchange"], b["code"]) for b in answer["left_out"]] == [("okx", "forbidden")]
        await next_until(mine, at({BINANCE: 40}))  # it named no venue: its own books of the pair
        async with stack.http.delete(f"{stack.url}/v1/subscriptions/binance.com/BTCUSDT", headers=me) as r:
            assert r.status == 204
        closing = await asyncio.wait_for(mine.receive(), 5)
        assert (closing.type, mine.close_code) == (aiohttp.WSMsgType.CLOSE, 4403)


@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        ("", 400, "invalid_request"),
        ("?pair=BTCUSDT", 400, "invalid_request"),
        ("?pair=BTC-USDT&top=yes", 400, "invalid_request"),
        ("?pair=BTC-USDT&depth=0", 400, "invalid_request"),
        ("?pair=NOPE-USDT", 404, "unknown_market"),
        ("?pair=BTC-USDT&venues=nosuch.exchange", 404, "unknown_exchange"),
        ("?pair=ETH-USDT", 403, "forbidden"),
    ],
)
async def test_a_stream_that_cannot_be_served_is_refused_before_the_upgrade(
    venues: Stack, query: str, status: int, code: str
) -> None:
    me = await venues.subscriber(BINANCE)
    url = f"{venues.url}/v1/stream/consolidated{query}"
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await venues.http.ws_connect(url, headers=me)
    assert refused.value.status == status
    async with venues.http.get(url, headers=me) as r:  # the same refusal, its body read
        assert (r.status, (await r.json())["error"]["code"]) == (status, code)


# -- hostile bytes on the consolidated routes, sent raw -------------------------------------------
KEY_SHAPED = "ldr_live_0123456789abcdef0123456789abcdef"


async def raw_answer(stack: Stack, request: bytes) -> Reply:
    async with connect(stack.url) as (reader, writer):
        writer.write(request)
        await writer.drain()
        return await read_reply(reader)


def raw_get(target: str, key: str) -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: test\r\nX-API-Key: {key}\r\n\r\n".encode("latin-1")


@pytest.mark.parametrize(
    ("target", "status"),
    [
        ("/v1/consolidated/BTC-%FF%FE", 400),  # not UTF-8 once decoded
        ("/v1/consolidated/BTC-USDT%00", 400),
        ("/v1/consolidated/BTC\xff-USDT", 400),  # a raw byte in the request line
        ("/v1/consolidated/%42TC-USDT", 200),  # percent-encoded letters are letters
        ("/v1/consolidated/BTC-USDT?venues=%FF", 400),
        ("/v1/consolidated/BTC-USDT?venues=okx%00", 400),
        ("/v1/consolidated/BTC-USDT?depth=1%00", 400),
        ("/v1/consolidated/BTC-USDT?depth=%EF%BC%91", 400),  # a full-width digit one
        ("/v1/consolidated/BTC-USDT?quotes=USDT%2C%2C%2C", 200),  # empty names are no names
        (f"/v1/consolidated/BTC-USDT?venues={'a' * 60_000}", 431),  # past the request head's bound
        (f"/v1/consolidated/{KEY_SHAPED}-USDT", 400),
        (f"/v1/consolidated/BTC-USDT?venues={KEY_SHAPED}", 400),
        (f"/v1/consolidated/tops?pairs=BTC-USDT,{KEY_SHAPED}-USDT", 400),
        ("/v1/stream/consolidated?pair=BTC-%FF", 400),
    ],
)
async def test_raw_hostile_reads_get_a_clear_error_and_never_echo_a_key(
    venues: Stack, target: str, status: int
) -> None:
    me = await venues.subscriber(BINANCE)
    await Published(venues).book(BINANCE, 1, side(["99"]), side(["101"]))
    await settled(venues, me, {BINANCE: 1})
    reply = await raw_answer(venues, raw_get(target, me["X-API-Key"]))
    assert reply.status == status, reply.body[:300]
    assert reply.headers["content-type"] == "application/json"
    if status >= 400:
        assert reply.error_code() in {"invalid_request", "headers_too_large"}
    assert KEY_SHAPED.encode() not in reply.body and b"\xff" not in reply.body


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"\xff\xfe{", 400),  # not UTF-8
        (b'{"pair": "BTC-USDT", "venues": ["okx"]', 400),  # cut short
        (b"[" * 30_000 + b"]" * 30_000, 400),  # nested past any parser's patience
        (b"[" * 40_000 + b"]" * 40_000, 413),  # past the body's bound
        (b'{"pair": "BTC-USDT", "venues": "binance.com,okx"}', 200),  # a comma list is a list
        (b'{"pair": "BTC-USDT", "venues": [1, 2]}', 400),
        (b'{"pair": "BTC-USDT", "venues": ["okx"], "depth": 1e400}', 400),
        (b'{"pair": "BTC-USDT", "venues": ["okx"], "replicas": true}', 400),
        (b'{"pair": "BTC-USDT", "venues": ["' + b"okx," * 5000 + b'"]}', 400),
        (b'{"pair": "BTC\\u0000-USDT", "venues": ["okx"]}', 400),
        (b'{"pair": "' + KEY_SHAPED.encode() + b'-USDT", "venues": ["okx"]}', 400),
        (b'{"pair": "BTC-USDT", "venues": ["okx"], "' + KEY_SHAPED.encode() + b'": 1}', 400),
    ],
)
async def test_raw_hostile_pair_subscriptions_get_a_clear_error_and_never_echo_a_key(
    venues: Stack, body: bytes, status: int
) -> None:
    _, key = await venues.tenant(max_markets=5)
    head = (
        "POST /v1/subscriptions/consolidated HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        f"X-API-Key: {key}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    reply = await raw_answer(venues, head.encode("latin-1") + body)
    assert reply.status == status, reply.body[:300]
    if status == 400:
        assert reply.error_code() == "invalid_request"
    elif status == 413:
        assert reply.error_code() == "payload_too_large"
    assert KEY_SHAPED.encode() not in reply.body and b"\xff" not in reply.body
