"""Bybit's public WebSocket (one URL per category: ``/v5/public/spot``, ``/v5/public/linear``).

Books are added with ``{"req_id":"7","op":"subscribe","args":["orderbook.1000.BTCUSDT", ...]}``
(at most 10 topics a request on spot); the venue answers each request with ``success`` and the
``req_id``, then pushes a snapshot of each book before its deltas. A failed subscribe answers
``success: false`` and a message naming the topic. The connection sends ``{"op":"ping"}`` every
20 s, as the venue asks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import orjson

from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.venues.bybit import limits
from ingest_nodes.venues.bybit.parse import parse_bybit_frame
from ingest_nodes.venues.bybit.schemas import BybitAnswer
from ingest_nodes.venues.stream import Acked, Rejected, StreamEvent

_PING: Final = orjson.dumps({"op": "ping"}).decode()
_REQUESTS: Final = ("subscribe", "unsubscribe")


class BybitStream:
    """One connection's view of one Bybit category's public stream (``url``: the category's)."""

    sequenced = True
    handshake = False
    control_messages_per_s = limits.CONTROL_MESSAGES_PER_S
    keepalive = (limits.KEEPALIVE_S, _PING)
    requests_per_hour: int | None = None

    def __init__(self, url: str, *, spot: bool) -> None:
        self.url = url
        self.topics_per_request: int | None = limits.SPOT_TOPICS_PER_REQUEST if spot else None

    def topic(self, symbol: str, depth: int) -> str:
        """The 1000-level book of a symbol whatever the depth kept (the depth REST's ``u`` follows)."""
        return f"orderbook.{limits.BOOK_DEPTH}.{symbol}"

    def opening(self) -> list[str]:
        return []

    def requests(self, subscribe: bool, topics: Sequence[str], request_id: int) -> list[str]:
        op = "subscribe" if subscribe else "unsubscribe"
        return [orjson.dumps({"req_id": str(request_id), "op": op, "args": list(topics)}).decode()]

    def read(self, raw: str | bytes, ingest_time: int) -> Sequence[StreamEvent]:
        item = parse_bybit_frame(raw, ingest_time)
        if type(item) is DepthUpdate:
            return (item,)
        if isinstance(item, BybitAnswer) and item.op in _REQUESTS:
            request_id = int(item.request_id) if item.request_id and item.request_id.isdigit() else None
            if item.success:
                return (Acked(request_id),)
            return (Rejected(request_id, None, item.msg),)
        return ()
