"""Every control fault, observed the way a client would see it."""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import aiohttp

from fake_venue import FakeVenue

from .helpers import DecimalBook, control, get_json, next_event, next_json

SPOT_FAST = "/ws/btcusdt@depth@100ms"


async def events_after(ws: aiohttp.ClientWebSocketResponse, count: int) -> list[dict[str, Any]]:
    return [await next_event(ws) for _ in range(count)]


def spot_jumps(events: list[dict[str, Any]]) -> int:
    return sum(1 for a, b in itertools.pairwise(events) if b["U"] != a["u"] + 1)


async def test_gap_for_everyone_spot_and_futures(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with (
        http.ws_connect(venue.spot_ws_url + SPOT_FAST) as spot,
        http.ws_connect(venue.futures_ws_url + "/ws/btcusdt@depth@100ms") as futures,
    ):
        spot_events = [await next_event(spot)]
        futures_events = [await next_event(futures)]
        await control(http, venue, action="gap", venue="spot", symbol="BTCUSDT", count=3)
        await control(http, venue, action="gap", venue="futures", symbol="BTCUSDT", count=1)
        spot_events += await events_after(spot, 8)
        futures_events += await events_after(futures, 8)
    assert spot_jumps(spot_events) == 1
    assert sum(1 for a, b in itertools.pairwise(futures_events) if b["pu"] != a["u"]) == 1


async def test_gap_for_one_connection(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with (
        http.ws_connect(venue.spot_ws_url + SPOT_FAST) as first,
        http.ws_connect(venue.spot_ws_url + SPOT_FAST) as second,
    ):
        first_events, second_events = [await next_event(first)], [await next_event(second)]
        reply = await control(
            http, venue, action="gap", venue="spot", symbol="BTCUSDT", count=2, connection="one"
        )
        assert len(reply["connections"]) == 1
        first_events += await events_after(first, 8)
        second_events += await events_after(second, 8)
    assert spot_jumps(first_events) == 1  # the oldest listener was picked
    assert spot_jumps(second_events) == 0


async def test_duplicate_resends_the_last_event(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    await control(http, venue, action="rate", venue="spot", symbol="BTCUSDT", rate=0)
    async with http.ws_connect(venue.spot_ws_url + SPOT_FAST) as ws:
        await control(http, venue, action="burst", venue="spot", symbol="BTCUSDT", count=1)
        original = await next_event(ws)
        reply = await control(http, venue, action="duplicate", venue="spot", symbol="BTCUSDT")
        assert reply["resent"] == 1
        assert await next_event(ws) == original


async def test_disconnect_close_and_drop(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with http.ws_connect(venue.spot_ws_url + SPOT_FAST) as ws:
        await next_event(ws)
        await control(
            http, venue, action="disconnect", venue="spot", symbol="BTCUSDT", mode="close", code=4000
        )
        message = await ws.receive(timeout=3)
        while message.type == aiohttp.WSMsgType.TEXT:
            message = await ws.receive(timeout=3)
        assert (message.type, message.data) == (aiohttp.WSMsgType.CLOSE, 4000)
    async with http.ws_connect(venue.futures_ws_url + "/ws/ethusdt@depth@100ms") as ws:
        await next_event(ws)
        await control(http, venue, action="disconnect", venue="futures", mode="drop")
        message = await ws.receive(timeout=3)
        while message.type == aiohttp.WSMsgType.TEXT:
            message = await ws.receive(timeout=3)
        assert message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR)  # no close frame


async def test_server_shutdown_then_close(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with (
        http.ws_connect(venue.spot_ws_url + "/stream?streams=btcusdt@depth@100ms") as wrapped,
        http.ws_connect(venue.futures_ws_url + "/ws/btcusdt@depth@100ms") as raw,
    ):
        await control(http, venue, action="server_shutdown", venue="spot")
        await control(http, venue, action="server_shutdown", venue="futures")
        for ws, shape in ((wrapped, "combined"), (raw, "raw")):
            message = await next_json(ws)
            while "serverShutdown" not in str(message):
                message = await next_json(ws)
            if shape == "combined":
                assert message["stream"] == "!serverShutdown" and message["data"]["e"] == "serverShutdown"
            else:
                assert message["e"] == "serverShutdown" and isinstance(message["E"], int)
            assert (await ws.receive(timeout=3)).type == aiohttp.WSMsgType.CLOSE


async def test_stall_keeps_the_socket_and_resumes_without_a_gap(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    async with http.ws_connect(venue.spot_ws_url + SPOT_FAST) as ws:
        events = [await next_event(ws)]
        arrivals = [time.monotonic()]
        await control(http, venue, action="stall", venue="spot", symbol="BTCUSDT", seconds=0.6)
        for _ in range(6):
            events.append(await next_event(ws))
            arrivals.append(time.monotonic())
    assert max(b - a for a, b in itertools.pairwise(arrivals)) >= 0.4
    assert spot_jumps(events) == 0


async def test_cross_is_seen_by_a_synced_client_and_in_truth(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    async with http.ws_connect(venue.spot_ws_url + "/ws/ethusdt@depth@100ms") as ws:
        buffered = [await next_event(ws)]
        _, _, snapshot = await get_json(http, f"{venue.url}/api/v3/depth?symbol=ETHUSDT&limit=1000")
        book, book_id = DecimalBook(snapshot["bids"], snapshot["asks"]), snapshot["lastUpdateId"]
        await control(http, venue, action="cross", venue="spot", symbol="ETHUSDT", updates=3)
        crossed_at = None
        while crossed_at is None:
            event = buffered.pop(0) if buffered else await next_event(ws)
            if event["u"] <= book_id:
                continue
            book.apply(event["b"], event["a"])
            book_id = event["u"]
            if book.crossed:
                crossed_at = book_id
    _, _, truth = await get_json(
        http, f"{venue.url}/_fake/book?venue=spot&symbol=ETHUSDT&update_id={crossed_at}"
    )
    assert DecimalBook(truth["bids"], truth["asks"]).crossed


async def test_snapshot_delay_and_lag(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    depth = f"{venue.url}/api/v3/depth?symbol=ADAUSDT&limit=1000"
    await get_json(http, depth)
    await asyncio.sleep(0.3)
    await control(http, venue, action="snapshot_delay_ms", venue="spot", symbol="ADAUSDT", ms=300)
    await control(http, venue, action="snapshot_lag", venue="spot", updates=4)
    started = time.monotonic()
    _, _, lagged = await get_json(http, depth)
    assert time.monotonic() - started >= 0.3
    _, _, latest = await get_json(http, f"{venue.url}/_fake/book?venue=spot&symbol=ADAUSDT")
    assert lagged["lastUpdateId"] < latest["update_id"]
    at_lag = f"{venue.url}/_fake/book?venue=spot&symbol=ADAUSDT&update_id={lagged['lastUpdateId']}"
    _, _, truth = await get_json(http, at_lag)
    assert DecimalBook(lagged["bids"], lagged["asks"]).same_as(DecimalBook(truth["bids"], truth["asks"]))


async def test_snapshot_in_a_futures_id_hole(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    await control(http, venue, action="snapshot_in_hole", venue="futures")
    async with http.ws_connect(venue.futures_ws_url + "/ws/xrpusdt@depth@100ms") as ws:
        events = [await next_event(ws)]
        _, _, snapshot = await get_json(http, f"{venue.url}/fapi/v1/depth?symbol=XRPUSDT&limit=1000")
        events += await events_after(ws, 4)
    snapshot_id = snapshot["lastUpdateId"]
    assert not any(event["U"] <= snapshot_id <= event["u"] for event in events)
    assert any(event["u"] < snapshot_id for event in events) and any(
        event["U"] > snapshot_id for event in events
    )


async def test_rate_burst_and_reset(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    await control(http, venue, action="rate", venue="spot", rate=0)
    async with http.ws_connect(venue.spot_ws_url + "/ws/dogeusdt@depth@100ms") as ws:
        await asyncio.sleep(0.3)
        await control(http, venue, action="burst", venue="spot", symbol="DOGEUSDT", count=5)
        started = time.monotonic()
        burst = await events_after(ws, 5)
        assert time.monotonic() - started < 0.5 and spot_jumps(burst) == 0
        await control(http, venue, action="reset")
        assert (await next_event(ws))["U"] == burst[-1]["u"] + 1


async def test_acks_can_trail_the_data(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    await control(http, venue, action="ack_delay_ms", venue="spot", ms=400)
    async with http.ws_connect(venue.spot_ws_url + "/ws") as ws:
        await ws.send_json({"method": "SUBSCRIBE", "params": ["btcusdt@depth@100ms"], "id": 9})
        first = await next_json(ws)
        assert first.get("e") == "depthUpdate"
        message = first
        while "result" not in message:
            message = await next_json(ws)
        assert message == {"result": None, "id": 9}


async def test_empty_book_and_symbol_status(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    reply = await control(http, venue, action="empty_book", venue="futures", symbol="LTCUSDT", side="bids")
    _, _, truth = await get_json(
        http, f"{venue.url}/_fake/book?venue=futures&symbol=LTCUSDT&update_id={reply['update_id']}"
    )
    assert truth["bids"] == [] and truth["asks"]
    await control(http, venue, action="symbol_status", venue="spot", symbol="LTCUSDT", status="HALT")
    _, _, info = await get_json(http, f"{venue.url}/api/v3/exchangeInfo?symbol=LTCUSDT")
    assert info["symbols"][0]["status"] == "HALT"
    before = (await get_json(http, f"{venue.url}/_fake/book?venue=spot&symbol=LTCUSDT"))[2]["update_id"]
    await asyncio.sleep(0.3)
    after = (await get_json(http, f"{venue.url}/_fake/book?venue=spot&symbol=LTCUSDT"))[2]["update_id"]
    assert before == after  # a halted symbol is quiet


async def test_alpaca_reset_sends_a_full_book(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    async with http.ws_connect(
        venue.alpaca_ws_url, headers={"APCA-API-KEY-ID": "k", "APCA-API-SECRET-KEY": "s"}
    ) as ws:
        assert await next_json(ws) == [{"T": "success", "msg": "connected"}]
        assert await next_json(ws) == [{"T": "success", "msg": "authenticated"}]
        await ws.send_json({"action": "subscribe", "orderbooks": ["SOL/USD"]})
        await next_json(ws)
        assert (await next_json(ws))[0]["r"] is True
        await control(http, venue, action="alpaca_reset", symbol="SOL/USD")
        resets = 0
        while not resets:
            resets = sum(1 for message in await next_json(ws) if message.get("r"))
    assert resets == 1


async def test_an_old_event_replayed_after_newer_ones(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    await control(http, venue, action="rate", venue="futures", symbol="ETHUSDT", rate=0)
    async with http.ws_connect(venue.futures_ws_url + "/ws/ethusdt@depth@100ms") as ws:
        await control(http, venue, action="burst", venue="futures", symbol="ETHUSDT", count=3)
        sent = await events_after(ws, 3)
        await control(http, venue, action="duplicate", venue="futures", symbol="ETHUSDT", back=2)
        assert await next_event(ws) == sent[0]


async def test_connections_are_closed_at_their_maximum_age(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    async with http.ws_connect(venue.spot_ws_url + SPOT_FAST) as ws:
        await next_event(ws)
        await control(http, venue, action="max_connection_age", venue="spot", seconds=0.2)
        message = await ws.receive(timeout=3)
        while message.type == aiohttp.WSMsgType.TEXT:
            message = await ws.receive(timeout=3)
    assert (message.type, message.data) == (aiohttp.WSMsgType.CLOSE, 1000)


async def test_withhold_is_a_silent_stall_that_resumes_with_a_gap_or_with_what_it_kept(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    for resume, jumps in (("gap", 1), ("replay", 0)):
        async with http.ws_connect(venue.spot_ws_url + SPOT_FAST) as ws:
            before = [await next_event(ws)]
            await control(http, venue, action="withhold", venue="spot", symbol="BTCUSDT", seconds=0.6,
                          resume=resume)  # fmt: skip
            started = time.monotonic()
            _, _, snapshot = await get_json(
                http, f"{venue.spot_rest_url}/api/v3/depth?symbol=BTCUSDT&limit=5"
            )
            await asyncio.sleep(0.3)
            _, _, later = await get_json(http, f"{venue.spot_rest_url}/api/v3/depth?symbol=BTCUSDT&limit=5")
            assert later["lastUpdateId"] > snapshot["lastUpdateId"], "the book keeps moving meanwhile"
            after = await events_after(ws, 6)
            assert time.monotonic() - started >= 0.5, "nothing was sent while withheld"
        events = [*before, *after]
        assert spot_jumps(events) == jumps, resume
        assert all(b["u"] > a["u"] for a, b in itertools.pairwise(events))
