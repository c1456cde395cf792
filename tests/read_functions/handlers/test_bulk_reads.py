"""``GET /v1/tops`` and ``GET /v1/books?markets=`` over real HTTP, fed by a real writer through Valkey."""

from __future__ import annotations

import asyncio
from typing import Any

from book_store.catalog import MarketCatalog, MarketInfo
from book_store.codec import BookStatus
from book_store.schema import BookKey
from ladder_process.clock import now_ms
from tests.read_functions.helpers import ALPACA, BTC, ETH, Stack, levels, snapshot, validate
from tests.stores import subscribe_calls, subscribe_commands

MANY = [BookKey("binance.com", f"COIN{i}USDT") for i in range(40)]


async def get(stack: Stack, path: str, headers: dict[str, str]) -> tuple[int, Any]:
    async with stack.http.get(f"{stack.url}{path}", headers=headers) as r:
        return r.status, await r.json()


async def test_tops_answer_every_subscribed_book_from_the_cache(stack: Stack) -> None:
    listed = [MarketInfo("binance.com", b.market, "TRADING", b.market[:-4], "USDT") for b in MANY]
    await MarketCatalog(stack.store).replace(
        "binance.com", [*listed, MarketInfo("binance.com", "ETHBTC", "TRADING", "ETH", "BTC")]
    )
    me = await stack.subscriber(*MANY, ETH, ALPACA, max_markets=50)
    for i, book in enumerate(MANY):
        await stack.publish(
            book,
            0,
            snapshot(100 + i, bids=levels([f"{i}.10"], "2.50"), asks=levels([f"{i}.20"], "0.00100000")),
        )
    await stack.publish(ETH, 1, snapshot(7, status=BookStatus.RESYNCING))
    await stack.publish(ALPACA, 0, snapshot(9))

    status, answer = await get(stack, "/v1/tops?exchange=binance.com", me)

    assert status == 200, answer
    validate(answer, "Tops")
    tops = answer["tops"]
    assert [t["market"] for t in tops] == sorted([b.market for b in MANY] + ["ETHBTC"])
    by_market = {t["market"]: t for t in tops}
    coin3 = by_market["COIN3USDT"]
    assert (coin3["status"], coin3["update_id"], coin3["replica"]) == ("synced", 103, 0)
    assert (coin3["bid"], coin3["ask"], coin3["truncated"]) == (
        ["3.10", "2.50"],
        ["3.20", "0.00100000"],
        False,
    )
    assert 0 <= coin3["age_ms"] < 5_000
    assert by_market["ETHBTC"] == {"exchange": "binance.com", "market": "ETHBTC", "status": "resyncing"}
    _, everything = await get(stack, "/v1/tops", me)
    assert everything["tops"][0]["market"] == "BTC/USD"  # every exchange, sorted
    assert len(everything["tops"]) == len(tops) + 1

    # In steady state a tops read loads no stored snapshot (the cache's misses are its loads; the
    # store's own HGETALL count would include the catalog's timed rechecks); a change reaches it
    # through the feed.
    loads = stack.deps.books.misses
    for _ in range(5):
        await get(stack, "/v1/tops?exchange=binance.com", me)
    assert stack.deps.books.misses == loads
    await stack.publish(MANY[3], 0, snapshot(500, bids=levels(["3.11"], "1")))

    for _ in range(250):
        _, again = await get(stack, "/v1/tops?exchange=binance.com", me)
        top = next(t for t in again["tops"] if t["market"] == "COIN3USDT")
        if top["update_id"] == 500:
            break
        await asyncio.sleep(0.02)
    assert (top["update_id"], top["bid"]) == (500, ["3.11", "1"])
    assert stack.deps.books.misses == loads


async def test_tops_never_serve_a_silent_replica_and_say_when_a_side_is_cut(stack: Stack) -> None:
    me = await stack.subscriber(ETH, BTC)
    silent_since = now_ms() - 60_000
    await stack.publish(ETH, 0, snapshot(5, publish_time=silent_since))
    await stack.publish(BTC, 0, snapshot(6, bids=[], flags=1))  # no bid stored, the venue may have some

    _, answer = await get(stack, "/v1/tops", me)

    validate(answer, "Tops")
    eth, btc = (next(t for t in answer["tops"] if t["market"] == m) for m in ("ETHBTC", "BTCUSDT"))
    assert eth["status"] == "stale" and "bid" not in eth
    assert (btc["bid"], btc["truncated"]) == (None, True)


async def test_tops_refuse_the_admin_key_and_bad_input(stack: Stack) -> None:
    me = await stack.subscriber(ETH)
    status, error = await get(stack, "/v1/tops", stack.admin)
    assert (status, error["error"]["code"]) == (403, "forbidden")
    status, error = await get(stack, "/v1/tops?exchange=Not|Valid", me)
    assert (status, error["error"]["code"]) == (400, "invalid_request")
    status, _ = await get(stack, "/v1/tops", {})
    assert status == 401
    _, empty = await get(stack, "/v1/tops?exchange=alpaca-crypto", me)
    assert empty == {"tops": []}


async def test_books_answers_each_book_as_its_own_read(stack: Stack) -> None:
    me = await stack.subscriber(ETH, BTC)
    await stack.publish(ETH, 0, snapshot(11))
    await stack.publish(ETH, 1, snapshot(12))
    await stack.publish(BTC, 0, snapshot(21, status=BookStatus.RESYNCING))

    status, answer = await get(
        stack, "/v1/books?exchange=binance.com&markets=ETHBTC,BTCUSDT,NOPE,ETHBTC&depth=2", me
    )

    assert status == 200, answer
    validate(answer, "Books")
    eth, btc, nope = answer["books"]
    _, alone = await get(stack, "/v1/books/binance.com/ETHBTC?depth=2", me)
    assert {k: v for k, v in eth.items() if k != "age_ms"} == {
        k: v for k, v in alone.items() if k != "age_ms"
    }
    assert (eth["update_id"], len(eth["bids"]), len(eth["asks"])) == (12, 2, 2)
    assert (btc["market"], btc["error"]["code"]) == ("BTCUSDT", "book_not_synced")
    assert (nope["market"], nope["error"]["code"]) == ("NOPE", "unknown_market")

    # A book of another tenant is refused in its place, the others are still served.
    other = await stack.subscriber(BTC)
    _, mixed = await get(stack, "/v1/books?exchange=binance.com&markets=ETHBTC,BTCUSDT", other)
    assert [b.get("error", {}).get("code") for b in mixed["books"]] == ["forbidden", "book_not_synced"]


async def test_books_validates_the_request(stack: Stack) -> None:
    me = await stack.subscriber(ETH)
    many = ",".join(f"M{i}" for i in range(101))
    queries = [
        "",
        "?exchange=binance.com",
        "?exchange=binance.com&markets=,",
        "?markets=ETHBTC",
        f"?exchange=binance.com&markets={many}",
        "?exchange=binance.com&markets=ETHBTC&depth=0",
    ]
    for query in queries:
        status, error = await get(stack, f"/v1/books{query}", me)
        assert (status, error["error"]["code"]) == (400, "invalid_request"), query


async def test_a_cold_bulk_read_loads_its_books_in_one_batch(stack: Stack) -> None:
    listed = [MarketInfo("binance.com", b.market, "TRADING", b.market[:-4], "USDT") for b in MANY]
    await MarketCatalog(stack.store).replace("binance.com", listed)
    me = await stack.subscriber(*MANY, max_markets=50)
    await asyncio.gather(*(stack.publish(book, 0, snapshot(1)) for book in MANY))
    stack.deps.books.misses = 0
    subscribes = await subscribe_calls(stack.store)

    entries = await stack.deps.books.entries(MANY)

    batches = subscribe_commands(stack.store, [b.channel for b in MANY])
    assert (
        await subscribe_calls(stack.store) == subscribes + batches
    )  # one SUBSCRIBE for all 40 (one per slot)

    assert [e.book for e in entries] == MANY and all(e.live for e in entries)
    assert len(stack.deps.books) == len(MANY)
    assert stack.deps.books.misses == len(MANY)
    assert await stack.deps.books.entries(MANY) == entries  # now straight from the cache
    assert stack.deps.books.misses == len(MANY)
    _, answer = await get(stack, "/v1/books?exchange=binance.com&markets=COIN1USDT,COIN2USDT&depth=1", me)
    assert [b["update_id"] for b in answer["books"]] == [1, 1]
