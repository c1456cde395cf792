"""The routing rule for a market that is another name of a venue book (the catalogue's alias), rule
by rule, without a socket: a connection fed Coinbase frames by hand, and routes that record."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import aiohttp
import orjson
import pytest

from book_store.catalog import MarketCatalog, MarketInfo
from book_store.connect import StoreClient
from book_store.schema import KEY_PREFIX, BookKey
from control_plane.models import ReplicaAssignment
from control_plane.stores.redis import RedisControlStore
from fake_venue import FakeVenue
from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.runtime.connection import StreamConnection
from ingest_nodes.settings import IngestSettings
from ingest_nodes.venues.catalog import aliases_of
from ingest_nodes.venues.registry import ExchangeSpec, VenueProtocol
from ingest_nodes.venues.stream import Refused
from tests.fake_venue.conftest import small_config
from tests.ingest_nodes.runtime.harness import running_node
from tests.waiting import wait_until

NODE = "alias-node"
COINBASE = ExchangeSpec("coinbase", VenueProtocol.COINBASE, "http://unused", "ws://unused")


class Recorder:
    """A route that keeps what it is given."""

    depth = 100

    def __init__(self) -> None:
        self.updates: list[DepthUpdate] = []
        self.invalidated: list[str] = []

    def on_update(self, update: DepthUpdate, source: StreamConnection) -> None:
        self.updates.append(update)

    def on_disconnect(self, source: StreamConnection) -> None: ...

    def invalidate(self, reason: str) -> None:
        self.invalidated.append(reason)

    def heard(self, source: StreamConnection, at_ms: int) -> None: ...

    def on_refused(self, source: StreamConnection, refusal: Refused) -> None: ...

    def begin_handover(self, old: StreamConnection, new: StreamConnection) -> None: ...

    def finish_handover(self, old: StreamConnection) -> None: ...


def l2(number: int, kind: str, product: str, price: str) -> bytes:
    level = {"side": "bid", "event_time": "1970-01-01T00:00:00Z", "price_level": price, "new_quantity": "1.5"}
    event = {"type": kind, "product_id": product, "updates": [level]}
    return orjson.dumps(
        {"channel": "l2_data", "client_id": "", "timestamp": "2026-12-06T11:00:00.000000001Z",
         "sequence_num": number, "events": [event]}
    )  # fmt: skip


def connection() -> StreamConnection:
    return StreamConnection(COINBASE, name="coinbase#test", max_streams=10)


def test_an_alias_gets_its_books_events_under_its_own_name() -> None:
    conn, alias = connection(), Recorder()
    conn.add("BTC-USDC", alias, "BTC-USD")
    conn._receive(l2(1, "snapshot", "BTC-USD", "100.5"))
    conn._receive(l2(2, "update", "BTC-USD", "100.25"))
    assert [(u.symbol, u.reset, u.bids) for u in alias.updates] == [
        ("BTC-USDC", True, (("100.5", "1.5"),)),
        ("BTC-USDC", False, (("100.25", "1.5"),)),
    ]
    assert conn.venue_name("BTC-USDC") == "BTC-USD"
    assert conn.venue.topic(conn.venue_name("BTC-USDC"), 100) == "BTC-USD", "subscribed as the book"


def test_a_market_under_its_own_name_gets_its_events_as_they_are() -> None:
    conn, book = connection(), Recorder()
    conn.add("ETH-USD", book)
    frame = l2(1, "snapshot", "ETH-USD", "3000")
    conn._receive(frame)
    [update] = book.updates
    assert update.symbol == "ETH-USD" and conn.venue_name("ETH-USD") == "ETH-USD"


def test_without_the_alias_the_books_events_reach_nobody() -> None:
    """What the real venue did to Ladder before: BTC-USDC subscribed as itself, its events labelled
    BTC-USD, routed nowhere."""
    conn, alias = connection(), Recorder()
    conn.add("BTC-USDC", alias)
    conn._receive(l2(1, "snapshot", "BTC-USD", "100.5"))
    assert alias.updates == []


def test_two_names_of_one_venue_book_never_share_a_connection() -> None:
    conn = connection()
    conn.add("BTC-USD", Recorder())
    assert conn.carries("BTC-USD")
    with pytest.raises(ValueError, match="BTC-USD"):
        conn.add("BTC-USDC", Recorder(), "BTC-USD")
    conn.remove("BTC-USD")
    assert not conn.carries("BTC-USD")
    alias = Recorder()
    conn.add("BTC-USDC", alias, "BTC-USD")
    assert conn.carries("BTC-USD") and not conn.carries("BTC-USDC")
    conn.remove("BTC-USDC")
    assert not conn.carries("BTC-USD") and len(conn) == 0


def test_a_lost_message_resyncs_the_alias_like_any_book() -> None:
    conn, alias, other = connection(), Recorder(), Recorder()
    conn.add("BTC-USDC", alias, "BTC-USD")
    conn.add("ETH-USD", other)
    conn._receive(l2(1, "snapshot", "BTC-USD", "100.5"))
    conn._receive(l2(3, "update", "BTC-USD", "100.25"))  # number 2 lost
    assert alias.invalidated == ["gap"] and other.invalidated == ["gap"]
    assert len(alias.updates) == 1, "the message that shows the break is dropped"


def test_the_catalogue_names_each_alias_and_its_book() -> None:
    markets = [
        MarketInfo("coinbase", "BTC-USD", "TRADING", "BTC", "USD"),
        MarketInfo("coinbase", "BTC-USDC", "TRADING", "BTC", "USDC", alias="BTC-USD"),
        MarketInfo("coinbase", "USDT-USDC", "TRADING", "USDT", "USDC"),
    ]
    assert aliases_of(markets) == {"BTC-USDC": "BTC-USD"}


async def test_a_node_subscribes_an_alias_under_its_books_name_once_the_catalogue_says_so(
    redis_client: StoreClient, clean_redis_url: str
) -> None:
    """A node whose catalogue does not name BTC-USDC an alias yet subscribes it as itself and, the
    venue labelling its events BTC-USD, never syncs it; once the catalogue names the alias, the
    replica starts over under BTC-USD's name and syncs."""
    venue = FakeVenue(small_config())
    await venue.start()
    catalog = MarketCatalog(redis_client)
    btc = MarketInfo("coinbase", "BTC-USD", "TRADING", "BTC", "USD")
    usdc = MarketInfo("coinbase", "BTC-USDC", "TRADING", "BTC", "USDC")
    await catalog.replace("coinbase", [btc, usdc])
    await redis_client.set(f"{KEY_PREFIX}:catalog-lock:coinbase", "test", px=60_000)  # no node refreshes it
    await RedisControlStore(redis_client).replace_assignments(
        NODE, [ReplicaAssignment("coinbase", "BTC-USDC", 1, NODE)]
    )
    settings = IngestSettings(
        redis_url=clean_redis_url, node_id=NODE, exchanges="coinbase", catalog_refresh_s=0.2,
        coinbase_rest_url=venue.coinbase_rest_url, coinbase_ws_url=venue.coinbase_ws_url,
    )  # fmt: skip
    try:
        async with aiohttp.ClientSession() as session, running_node(settings, redis_client, session) as node:
            key = (BookKey("coinbase", "BTC-USDC"), 1)
            feed = node.exchanges["coinbase"].feed
            await wait_until(lambda: key in node.replicas and feed.connections[0].connected, 10, "connected")
            await asyncio.sleep(1.0)
            replica = node.replicas[key]
            assert not replica.engine.synced and replica.stats.events == 0, "BTC-USD's events reach nobody"
            await catalog.replace("coinbase", [btc, replace(usdc, alias="BTC-USD")])
            # The replica is out of node.replicas while the old one stops (awaits on the store).
            await wait_until(
                lambda: (now := node.replicas.get(key)) is not None and now.engine.synced,
                10,
                "synced under BTC-USD's name",
            )
            assert feed.aliases == {"BTC-USDC": "BTC-USD"} and node.replicas[key] is not replica
    finally:
        await venue.stop()
