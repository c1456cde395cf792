"""The venue boundary of a stream connection: what one venue's WebSocket protocol looks like.

A :class:`~ingest_nodes.runtime.connection.StreamConnection` carries the depth streams of many books and
knows nothing of the venue it talks to: it connects to ``url``, sends ``opening()`` (an auth
message, say), waits for ``Ready`` when the venue has a handshake, then keeps the wanted
``topic`` of every book subscribed (a book's symbol, and for venues that subscribe a depth, the
depth it is kept at) with ``requests`` messages paced under ``control_messages_per_s`` (and
``requests_per_hour``, ``topics_per_request`` where the venue caps them), sends its ``keepalive``
if it has one, and reads every frame with ``read`` into these venue-neutral events.
Each venue implements it under ``ingest_nodes/venues/<venue>/stream.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ingest_nodes.core.events import DepthUpdate


@dataclass(frozen=True, slots=True)
class Acked:
    """The venue accepted a subscription request (``request_id`` None: the oldest one pending)."""

    request_id: int | None


@dataclass(frozen=True, slots=True)
class Rejected:
    """The venue refused a subscription request; it is taken back and retried later.

    ``topic``: the venue answers each topic of a request on its own (Kraken) and refused this one;
    only it is taken back."""

    request_id: int | None
    code: int | None
    msg: str
    topic: str | None = None


@dataclass(frozen=True, slots=True)
class Ready:
    """The handshake is done: subscriptions may be sent."""


@dataclass(frozen=True, slots=True)
class Refused:
    """The venue refused the session itself (bad credentials, too many connections).

    Reconnecting at once would be refused again (and, for a connection limit, take the slot of the
    connection that holds it), so the connection waits ``REFUSED_RETRY_S`` and the books it
    carries say why they are not served.
    """

    reason: str
    """Machine-readable, for readers: ``credentials_refused``, ``connection_limit``,
    ``credentials_missing``."""
    code: int | None
    msg: str


@dataclass(frozen=True, slots=True)
class ShutdownNotice:
    """The venue will close this connection soon: hand its books over now."""


@dataclass(frozen=True, slots=True)
class MessagesLost:
    """The venue numbers this connection's messages (Coinbase) and a number broke the run: any book
    the connection carries may have missed a message, so each resyncs."""

    expected: int | None
    received: int


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """The venue's heartbeat on this connection (Kraken, Coinbase): everything it sent the connection
    before has arrived (in order on one socket; Coinbase's unbroken numbering says so too), so each
    book it carries was current when the heartbeat came, however quiet the market."""


StreamEvent = DepthUpdate | Acked | Rejected | Ready | Refused | ShutdownNotice | MessagesLost | Heartbeat


class VenueStream(Protocol):
    """One venue's stream protocol, for one connection (it may hold that connection's credential)."""

    @property
    def url(self) -> str:
        """Where to connect."""

    @property
    def control_messages_per_s(self) -> int:
        """Messages a client may send a second (pings and pongs included)."""

    @property
    def handshake(self) -> bool:
        """True when subscriptions must wait for ``Ready`` after ``opening()``."""

    @property
    def sequenced(self) -> bool:
        """True when a lost frame shows up as a gap in its book's update ids; False (no ids): a frame
        that cannot be read costs every book of the connection its sync."""

    @property
    def keepalive(self) -> tuple[float, str] | None:
        """``(seconds, message)``: send ``message`` that often (the venue cuts silent clients)."""

    @property
    def requests_per_hour(self) -> int | None:
        """Subscribe and unsubscribe requests one connection may send an hour (None: no limit)."""

    @property
    def topics_per_request(self) -> int | None:
        """Topics one subscribe or unsubscribe request may carry (None: no limit of the venue's)."""

    def topic(self, symbol: str, depth: int) -> str:
        """What the venue subscribes for a book kept ``depth`` levels a side: ``btcusdt@depth@100ms``,
        ``BTC/USD``, ``BTC/USD@100`` (Kraken subscribes a depth)."""

    def opening(self) -> list[str]:
        """Messages to send as soon as the socket is open."""

    def requests(self, subscribe: bool, topics: Sequence[str], request_id: int) -> list[str]:
        """The messages that subscribe (or unsubscribe) ``topics``: usually one, one per depth where
        a request names a single depth (Kraken)."""

    def read(self, raw: str | bytes, ingest_time: int) -> Sequence[StreamEvent]:
        """Every event of one frame, in order; raises ``VenuePayloadError`` when it cannot."""
