"""Kraken's WebSocket v2 market-data protocol (``wss://ws.kraken.com/v2``) behind the venue boundary.

No handshake and no key: books are added with ``{"method":"subscribe","params":{"channel":"book",
"symbol":[...],"depth":N},"req_id":...}`` and removed with ``unsubscribe``; one request names one
depth, so a batch of books kept at several depths is sent as one request per depth. The venue
answers each pair of a request on its own (``KrakenAnswer``), then sends the pair's snapshot.

A book's topic is its pair and the depth it is subscribed at (``BTC/USD@100``): the smallest depth
the channel offers that covers the book's published depth, so a deeper subscriber changes the
topic, and the connection resubscribes the pair at the new depth. Each snapshot is stamped with the
depth its subscription was answered with (``DepthUpdate.limit``; the depth asked for, should a
snapshot come before its answer), which the book is trimmed to from then on.

Kraken numbers nothing, so a frame that cannot be read may have been any pair's update: it costs
every book of the connection its sync (``sequenced`` False); a pair's checksum catches what reaches
its top 10 (``core/sync/kraken.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final

import orjson

from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.core.sync.kraken import subscription_depth
from ingest_nodes.venues.kraken.parse import parse_kraken_frame
from ingest_nodes.venues.kraken.schemas import KrakenHeartbeat
from ingest_nodes.venues.stream import Acked, Heartbeat, Rejected, StreamEvent

CONTROL_MESSAGES_PER_S: Final = 10
"""Kraken names no limit on a public connection's requests; subscriptions are few and batched."""
_SEPARATOR: Final = "@"
_HEARTBEAT: Final = Heartbeat()


def book_topic(symbol: str, depth: int) -> str:
    """``BTC/USD`` kept 50 deep -> ``BTC/USD@100``."""
    return f"{symbol}{_SEPARATOR}{subscription_depth(depth)}"


def split_topic(topic: str) -> tuple[str, int]:
    symbol, _, depth = topic.rpartition(_SEPARATOR)
    return symbol, int(depth)


class KrakenStream:
    """One connection's view of Kraken's v2 stream: what depth each pair was subscribed at."""

    sequenced = False
    handshake = False
    control_messages_per_s = CONTROL_MESSAGES_PER_S
    keepalive: tuple[float, str] | None = None
    """Nothing to send: the venue sends a heartbeat a second while a channel is subscribed."""
    requests_per_hour: int | None = None
    topics_per_request: int | None = None

    def __init__(self, url: str) -> None:
        self.url = url
        self._asked: dict[str, int] = {}
        """Pair -> the depth of its latest subscribe request."""
        self._answered: dict[str, int] = {}
        """Pair -> the depth its latest successful subscribe was answered with."""

    def topic(self, symbol: str, depth: int) -> str:
        return book_topic(symbol, depth)

    def opening(self) -> list[str]:
        """Nothing to send first; a new socket has no subscriptions."""
        self._asked.clear()
        self._answered.clear()
        return []

    def requests(self, subscribe: bool, topics: Sequence[str], request_id: int) -> list[str]:
        by_depth: dict[int, list[str]] = {}
        for topic in topics:
            symbol, depth = split_topic(topic)
            by_depth.setdefault(depth, []).append(symbol)
            if subscribe:
                self._asked[symbol] = depth
        method = "subscribe" if subscribe else "unsubscribe"
        return [
            orjson.dumps(
                {"method": method, "params": {"channel": "book", "symbol": symbols, "depth": depth},
                 "req_id": request_id}
            ).decode()
            for depth, symbols in sorted(by_depth.items())
        ]  # fmt: skip

    def read(self, raw: str | bytes, ingest_time: int) -> Sequence[StreamEvent]:
        events: list[StreamEvent] = []
        for message in parse_kraken_frame(raw, ingest_time):
            if isinstance(message, DepthUpdate):
                if message.reset:
                    depth = self._answered.get(message.symbol) or self._asked.get(message.symbol)
                    if depth is None:
                        continue  # a snapshot of a pair never asked for
                    message = replace(message, limit=depth)
                events.append(message)
            elif isinstance(message, KrakenHeartbeat):
                events.append(_HEARTBEAT)
            elif not message.subscribe:
                events.append(Acked(message.req_id))  # a failed unsubscribe leaves nothing subscribed
            elif message.success:
                if message.symbol is not None and message.depth is not None:
                    self._answered[message.symbol] = message.depth
                events.append(Acked(message.req_id))
            else:
                asked = None if message.symbol is None else self._asked.get(message.symbol)
                topic = None if asked is None or message.symbol is None else book_topic(message.symbol, asked)
                events.append(Rejected(message.req_id, None, message.error, topic=topic))
        return events
