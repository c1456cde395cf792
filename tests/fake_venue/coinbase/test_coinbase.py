"""Coinbase Advanced Trade over a real socket: every message numbered on its connection, snapshots
that are whole books, updates that keep a client equal to the truth, the faults that take messages
(and never their numbers), the 5-second subscribe rule, and the REST product list."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import aiohttp

from fake_venue import FakeVenue
from ingest_nodes.venues.timestamps import rfc3339_to_ms
from tests.fake_venue.conftest import small_config
from tests.fake_venue.helpers import DecimalBook, control, get_json, next_json


class Numbered:
    """A client of one connection: every message's number, checked as it comes."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.last: int | None = None
        self.breaks: list[tuple[int, int]] = []

    async def next(self, channel: str | None = None) -> dict[str, Any]:
        while True:
            message = await next_json(self.ws)
            number = message.get("sequence_num")
            if number is not None:
                if self.last is not None and number != self.last + 1:
                    self.breaks.append((self.last + 1, number))
                self.last = number
            if channel is None or message.get("channel") == channel:
                return message  # type: ignore[no-any-return]


def book_of(event: dict[str, Any]) -> tuple[list[list[Any]], list[list[Any]]]:
    bids = [[u["price_level"], u["new_quantity"]] for u in event["updates"] if u["side"] == "bid"]
    asks = [[u["price_level"], u["new_quantity"]] for u in event["updates"] if u["side"] == "offer"]
    return bids, asks


async def subscribed(http: aiohttp.ClientSession, fake: FakeVenue, *products: str) -> Numbered:
    client = Numbered(await http.ws_connect(fake.ws_url + "/"))
    await client.ws.send_json({"type": "subscribe", "channel": "heartbeats"})
    first = await client.next()
    assert first["channel"] == "subscriptions" and first["sequence_num"] == 0
    assert first["events"] == [{"subscriptions": {"heartbeats": ["heartbeats"]}}]
    await client.ws.send_json({"type": "subscribe", "product_ids": list(products), "channel": "level2"})
    answer = await client.next("subscriptions")
    assert answer["events"][0]["subscriptions"]["level2"] == list(products)
    return client


async def truth(http: aiohttp.ClientSession, fake: FakeVenue, product: str, at_ms: int) -> DecimalBook:
    _, _, body = await get_json(http, f"{fake.url}/_fake/book?venue=coinbase&symbol={product}&at_ms={at_ms}")
    return DecimalBook(body["bids"], body["asks"])


async def test_a_whole_book_then_updates_every_number_in_line(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    client = await subscribed(http, venue, "BTC-USD", "ETH-USD")
    books: dict[str, DecimalBook] = {}
    heartbeats = 0
    while len(books) < 2 or heartbeats < 1 or client.last is None or client.last < 40:
        message = await client.next()
        if message["channel"] == "heartbeats":
            heartbeats += 1
            continue
        [event] = message["events"]
        product = event["product_id"]
        if event["type"] == "snapshot":
            assert product not in books
            assert all(u["event_time"] == "1970-01-01T00:00:00Z" for u in event["updates"])
            books[product] = DecimalBook(*book_of(event))
            assert len(books[product].bids) == 200  # the whole book: level2 has no depth limit
        else:
            books[product].apply(*book_of(event))
        assert books[product].same_as(await truth(http, venue, product, rfc3339_to_ms(message["timestamp"])))
    assert client.breaks == []
    assert isinstance(Decimal(str(next(iter(books["BTC-USD"].bids)))), Decimal)
    await client.ws.close()


async def test_losses_take_their_numbers_and_a_duplicate_keeps_its_own(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    client = await subscribed(http, venue, "SOL-USD")
    await client.next("l2_data")  # the snapshot
    await client.next("l2_data")
    await control(http, venue, action="lose_message", venue="coinbase", connection="one")
    await client.next("l2_data")
    assert len(client.breaks) == 1
    await control(http, venue, action="gap", venue="coinbase", symbol="SOL-USD")
    await client.next("l2_data")
    assert len(client.breaks) == 2
    last = client.last
    await control(http, venue, action="duplicate", venue="coinbase", symbol="SOL-USD")
    again = await client.next("l2_data")
    assert again["sequence_num"] <= (last or 0) and len(client.breaks) == 3  # its old number, out of line
    await client.ws.close()


async def test_a_usdc_alias_is_the_usd_book_labelled_with_its_product_id(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    """Listed with ``alias`` (and its book with ``alias_to``), BTC-USDC's snapshot and updates are
    BTC-USD's, labelled ``BTC-USD`` as the real venue labels them."""
    _, _, body = await get_json(http, f"{venue.url}/api/v3/brokerage/market/products?product_type=SPOT")
    rows = {p["product_id"]: p for p in body["products"]}
    assert (rows["BTC-USDC"]["alias"], rows["BTC-USDC"]["quote_currency_id"]) == ("BTC-USD", "USDC")
    assert (rows["BTC-USD"]["alias"], rows["BTC-USD"]["alias_to"]) == ("", ["BTC-USDC"])
    assert rows["ETH-USD"]["alias_to"] == [] and body["products"][-1]["product_id"] == "BTC-USDC"
    client = await subscribed(http, venue, "BTC-USDC")
    book: DecimalBook | None = None
    while book is None or client.last is None or client.last < 30:
        message = await client.next("l2_data")
        [event] = message["events"]
        assert event["product_id"] == "BTC-USD"
        if event["type"] == "snapshot":
            book = DecimalBook(*book_of(event))
        else:
            assert book is not None
            book.apply(*book_of(event))
        assert book.same_as(await truth(http, venue, "BTC-USD", rfc3339_to_ms(message["timestamp"])))
    assert client.breaks == []
    await client.ws.close()


async def test_both_names_on_one_socket_get_the_book_twice(
    venue: FakeVenue, http: aiohttp.ClientSession
) -> None:
    """Subscribed under both names, a connection gets two snapshots and every update twice, each
    message labelled ``BTC-USD`` and numbered; a loss of the book takes both numbers."""
    client = await subscribed(http, venue, "BTC-USD", "BTC-USDC")
    snapshots, updates = 0, list[tuple[str, Any]]()
    while snapshots < 2 or len(updates) < 20:
        message = await client.next("l2_data")
        [event] = message["events"]
        assert event["product_id"] == "BTC-USD"
        if event["type"] == "snapshot":
            snapshots += 1
        else:
            updates.append((message["timestamp"], event["updates"]))
    assert updates[0::2][:9] == updates[1::2][:9]  # each update, then the same again
    assert client.breaks == []
    await control(http, venue, action="gap", venue="coinbase", symbol="BTC-USD")
    await client.next("l2_data")
    await client.next("l2_data")
    assert len(client.breaks) == 1 and client.breaks[0][1] - client.breaks[0][0] == 2  # both names lost it
    await client.ws.close()


async def test_a_socket_that_subscribes_nothing_is_closed() -> None:
    fake = FakeVenue(small_config(coinbase_subscribe_timeout_s=0.3))
    await fake.start()
    try:
        async with aiohttp.ClientSession() as http:
            ws = await http.ws_connect(fake.ws_url + "/")
            message = await ws.receive(timeout=3)
            assert message.type in (
                aiohttp.WSMsgType.CLOSE,
                aiohttp.WSMsgType.CLOSED,
                aiohttp.WSMsgType.CLOSING,
            )
    finally:
        await fake.stop()


async def test_errors_and_unsubscribe(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    client = await subscribed(http, venue, "LTC-USD")
    await client.ws.send_json({"type": "subscribe", "product_ids": ["NOPE-USD"], "channel": "level2"})
    error = await client.next()
    while error.get("type") != "error":
        error = await client.next()
    assert error == {
        "type": "error",
        "message": "Failed to subscribe",
        "reason": "NOPE-USD is not a valid product",
    }
    await client.ws.send_str("nonsense")
    assert (await client.next())["type"] == "error"
    await client.ws.send_json({"type": "unsubscribe", "product_ids": ["LTC-USD"], "channel": "level2"})
    answer = await client.next("subscriptions")
    assert answer["events"] == [{"subscriptions": {"heartbeats": ["heartbeats"]}}]
    await client.ws.close()


async def test_the_product_list(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    status, _, body = await get_json(http, f"{venue.url}/api/v3/brokerage/market/products?product_type=SPOT")
    assert status == 200 and body["num_products"] == 11  # ten books and BTC-USDC, an alias
    btc = body["products"][0]
    assert btc["product_id"] == "BTC-USD" and btc["status"] == "online" and btc["trading_disabled"] is False
