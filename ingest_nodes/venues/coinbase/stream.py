"""Coinbase Advanced Trade's market-data WebSocket (``wss://advanced-trade-ws.coinbase.com``)
behind the venue boundary.

No key: the ``level2`` and ``heartbeats`` channels need no JWT (the channel table of the
Advanced Trade docs marks neither as requiring authentication). The venue closes a socket that
subscribes nothing within 5 s, and a channel that stays quiet for a minute or so, so the
connection subscribes ``heartbeats`` the moment it opens (one message a second keeps it alive),
then each batch of books with ``{"type":"subscribe","product_ids":[...],"channel":"level2"}``. The
venue answers every subscribe and unsubscribe, in order and naming no request, with the whole
subscription set.

Every message takes the next number of the connection (``sequence_num``); this stream keeps the
numbering (``core/sync/coinbase.py``) and turns a break into ``MessagesLost``: the message is
dropped and every book of the connection resubscribed. A heartbeat in an unbroken numbering says
every book of the connection is current (``Heartbeat``), so a quiet book stays served. A frame
that cannot be read broke the numbering just as surely, so it costs every book at once
(``sequenced`` False).

A USDC alias (BTC-USDC of BTC-USD) is subscribed as the book it names, whose product id labels its
events whichever name was subscribed: the runtime does the renaming (``runtime/connection.py``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Final

import orjson

from ingest_nodes.core.sync.coinbase import ConnectionSequence, Continuity
from ingest_nodes.venues.coinbase.parse import parse_coinbase_frame
from ingest_nodes.venues.stream import Acked, Heartbeat, MessagesLost, Rejected, StreamEvent

CONNECTS_PER_S: Final = 2.0
"""The docs' limit is 8 connections a second per IP address: a node opens at most 2 a second, so up
to four nodes may share an IP."""
CONTROL_MESSAGES_PER_S: Final = 8
"""The docs' limit on unauthenticated messages: 8 a second per IP address."""
_HEARTBEATS: Final = orjson.dumps({"type": "subscribe", "channel": "heartbeats"}).decode()
_HEARTBEAT: Final = (Heartbeat(),)


class CoinbaseStream:
    """One connection's view of the Coinbase stream: its numbering and its unanswered requests."""

    sequenced = False
    handshake = False
    control_messages_per_s = CONTROL_MESSAGES_PER_S
    keepalive: tuple[float, str] | None = None
    """Nothing to send: the heartbeats channel, subscribed on open, keeps the connection open."""
    requests_per_hour: int | None = None
    topics_per_request: int | None = None

    def __init__(self, url: str) -> None:
        self.url = url
        self.numbering = ConnectionSequence()
        self._pending: deque[int | None] = deque()

    def topic(self, symbol: str, depth: int) -> str:
        """A product's ``level2`` subscription; it is the full book whatever the depth."""
        return symbol

    def opening(self) -> list[str]:
        """The heartbeats subscription (a new socket: numbering and requests start afresh)."""
        self.numbering.restart()
        self._pending.clear()
        self._pending.append(None)  # the heartbeats subscription is answered like any request
        return [_HEARTBEATS]

    def requests(self, subscribe: bool, topics: Sequence[str], request_id: int) -> list[str]:
        self._pending.append(request_id)
        kind = "subscribe" if subscribe else "unsubscribe"
        return [orjson.dumps({"type": kind, "product_ids": list(topics), "channel": "level2"}).decode()]

    def read(self, raw: str | bytes, ingest_time: int) -> Sequence[StreamEvent]:
        message = parse_coinbase_frame(raw, ingest_time)
        if message.sequence_num is not None:
            expected = None if self.numbering.last is None else self.numbering.last + 1
            if self.numbering.receive(message.sequence_num) is Continuity.BROKEN:
                return (MessagesLost(expected, message.sequence_num),)
        if message.updates:
            return message.updates
        if message.heartbeat:
            return _HEARTBEAT
        if message.subscriptions:
            return (Acked(self._answered()),)
        if message.error is not None:
            return (Rejected(self._answered(), None, message.error),)
        return ()

    def _answered(self) -> int | None:
        """The request an answer belongs to: the oldest one pending (the venue answers in order)."""
        return self._pending.popleft() if self._pending else None
