"""Deep books on the read path: ``truncated``, the deep snapshot behind a short head, its age."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson

from book_store.codec import DEEP, MORE_ASKS, MORE_BIDS, BookStatus
from ladder_process.clock import now_ms
from tests.read_functions.helpers import ETH, Stack, levels, snapshot, validate

BIDS = [f"{1000 - i}" for i in range(300)]
ASKS = [f"{1001 + i}" for i in range(300)]


def head(update_id: int, publish_time: int | None = None, *, more: int = MORE_BIDS | MORE_ASKS) -> bytes:
    return snapshot(update_id, publish_time=publish_time, bids=levels(BIDS[:100]), asks=levels(ASKS[:100]),
                    flags=more)  # fmt: skip


def deep(update_id: int, publish_time: int | None = None, *, status: BookStatus = BookStatus.SYNCED) -> bytes:
    return snapshot(update_id, publish_time=publish_time, status=status, bids=levels(BIDS),
                    asks=levels(ASKS), flags=DEEP | MORE_BIDS | MORE_ASKS)  # fmt: skip


async def book(stack: Stack, headers: dict[str, str], depth: int, side: str = "") -> dict[str, Any]:
    url = f"{stack.url}/v1/books/binance.com/ETHBTC{side}?depth={depth}"
    async with stack.http.get(url, headers=headers) as r:
        assert r.status == 200, await r.text()
        answer: dict[str, Any] = orjson.loads(await r.read())
        return answer


async def book_after(stack: Stack, headers: dict[str, str], depth: int, before: int) -> dict[str, Any]:
    """The first answer that no longer carries ``before``: a publish's change message reaches the
    cache a moment after the store has answered the write."""
    deadline = asyncio.get_running_loop().time() + 5
    while (answer := await book(stack, headers, depth))["update_id"] == before:
        assert asyncio.get_running_loop().time() < deadline, f"still {before} after 5 s"
        await asyncio.sleep(0.01)
    return answer


async def test_a_side_that_stops_short_while_the_venue_may_hold_more_says_truncated(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    short_asks = snapshot(5, bids=levels(BIDS[:100]), asks=levels(ASKS[:40]), flags=MORE_BIDS | MORE_ASKS)
    await stack.publish(ETH, 0, short_asks)  # the asks' trusted window has shrunk to 40 levels
    full = await book(stack, headers, 40)
    validate(full, "Book")
    assert full["truncated"] is False and len(full["asks"]) == 40
    short = await book(stack, headers, 100)
    assert short["truncated"] is True and len(short["asks"]) == 40 and len(short["bids"]) == 100
    assert (await book(stack, headers, 100, "/bids"))["truncated"] is False
    assert (await book(stack, headers, 100, "/asks"))["truncated"] is True


async def test_a_genuinely_shallow_book_is_not_truncated(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(5, bids=levels(BIDS[:3]), asks=levels(ASKS[:2])))  # the whole book
    answer = await book(stack, headers, 100)
    assert answer["truncated"] is False and len(answer["bids"]) == 3


async def test_a_deep_ask_is_served_from_the_deep_snapshot_as_fresh_as_the_head(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    published = now_ms()
    await stack.publish(ETH, 0, deep(7, published - 5000), deep=True)  # written 5 s ago ...
    await stack.publish(ETH, 0, head(7))  # ... and the head, just now, still at its update id
    shallow = await book(stack, headers, 50)
    assert shallow["truncated"] is False and len(shallow["asks"]) == 50
    answer = await book(stack, headers, 300)
    assert answer["truncated"] is False and len(answer["asks"]) == 300 and len(answer["bids"]) == 300
    assert answer["update_id"] == 7 and answer["age_ms"] < 1000
    beyond = await book(stack, headers, 500)
    assert beyond["truncated"] is True and len(beyond["asks"]) == 300


async def test_an_older_deep_snapshot_is_served_with_its_own_age_and_never_when_silent_or_unsynced(
    stack: Stack,
) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, deep(6, now_ms() - 60_000), deep=True)  # written a minute ago: silent
    await stack.publish(ETH, 0, head(9))  # the book moved on since
    fallback = await book(stack, headers, 300)
    assert fallback["update_id"] == 9 and fallback["truncated"] is True and len(fallback["asks"]) == 100
    await stack.publish(ETH, 0, deep(7, now_ms() - 800), deep=True)
    answer = await book_after(stack, headers, 300, 9)
    assert answer["update_id"] == 7 and 800 <= answer["age_ms"] < 2000
    await stack.publish(ETH, 0, deep(9, status=BookStatus.RESYNCING), deep=True)
    unsynced = await book_after(stack, headers, 300, 7)
    assert unsynced["update_id"] == 9 and unsynced["truncated"] is True and len(unsynced["asks"]) == 100


async def test_a_deep_stream_sends_each_deep_snapshot_and_not_each_head(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, deep(7), deep=True)
    await stack.publish(ETH, 0, head(7))
    url = f"{stack.url}/v1/stream?exchange=binance.com&market=ETHBTC&depth=300"
    async with stack.http.ws_connect(url, headers=headers) as ws:
        first = orjson.loads((await ws.receive(timeout=5)).data)
        assert first["update_id"] == 7 and len(first["asks"]) == 300 and first["truncated"] is False
        await stack.publish(ETH, 0, head(7))  # a keepalive of the head: nothing new at depth 300
        await stack.publish(ETH, 0, head(8))  # the head moves; the deep snapshot comes later
        await stack.publish(ETH, 0, deep(8), deep=True)
        second = orjson.loads((await ws.receive(timeout=5)).data)
        if second["update_id"] == 7:  # the head's move can be seen before the deep snapshot lands
            second = orjson.loads((await ws.receive(timeout=5)).data)
        assert second["update_id"] == 8 and len(second["asks"]) == 300
        await asyncio.sleep(0.2)
        try:
            extra = await ws.receive(timeout=0.3)
        except TimeoutError:
            extra = None
        assert extra is None or extra.type is not aiohttp.WSMsgType.TEXT, "no repeat of the same deep book"


async def test_ubdcc_reads_every_level_a_deep_book_holds(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, deep(7), deep=True)
    await stack.publish(ETH, 0, head(7))
    path = "/get_asks?exchange=binance.com&market=ETHBTC"
    for query, expected in (("", 300), ("&limit_count=20", 20), ("&limit_count=250", 250)):
        async with stack.http.get(f"{stack.url}{path}{query}", headers=headers) as r:
            answer = orjson.loads(await r.read())
        assert answer["result"] == "OK" and len(answer["asks"]) == expected, query


async def test_book_info_shows_each_replica_its_stored_depth_and_its_counters(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, deep(7), deep=True)
    await stack.publish(ETH, 0, head(7))
    await stack.publish(ETH, 1, snapshot(3, replica=1, status=BookStatus.RESYNCING, bids=[], asks=[]))
    counters = {"resyncs": {"gap": 2}, "restarts": 2, "refreshes": 3, "audits": 4, "audit_mismatches": 1,
                "last_audit_ms": 1700000000000, "mismatches": 1}  # fmt: skip
    await stack.store.hset(ETH.stats, "0", orjson.dumps(counters))
    async with stack.http.get(f"{stack.url}/v1/books/binance.com/ETHBTC/info", headers=headers) as r:
        assert r.status == 200, await r.text()
        info = orjson.loads(await r.read())
    validate(info, "BookInfo")
    first, second = info["replicas"]
    assert info["status"] == "synced" and first["status"] == "synced" and second["status"] == "resyncing"
    assert first["head"] == {"bids": 100, "asks": 100, "more_bids": True, "more_asks": True}
    assert first["deep"]["asks"] == 300 and first["deep"]["update_id"] == 7 and second["deep"] is None
    assert (first["audits"], first["audit_mismatches"], first["resyncs"]) == (4, 1, {"gap": 2})
    assert second["audits"] is None
    other = await stack.subscriber()
    async with stack.http.get(f"{stack.url}/v1/books/binance.com/ETHBTC/info", headers=other) as r:
        assert r.status == 403
