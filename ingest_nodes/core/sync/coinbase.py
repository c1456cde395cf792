"""Coinbase Advanced Trade order-book sync (``level2`` channel): the venue's rules, and their machines.

What the venue's docs (the Advanced Trade WebSocket overview, channels and ``level2`` reference)
say, in our words:

  1. Subscribe ``level2`` for a list of products within 5 s of connecting; each product's first
     message is a ``snapshot`` event holding the whole book, later ``update`` events set levels to
     absolute quantities (``new_quantity`` is not a delta; ``"0"`` removes the level).
  2. ``level2`` guarantees delivery of every update: it is "the easiest way to keep an order book
     snapshot in sync". There is no depth limit: a snapshot is the full book.
  3. Every message carries ``sequence_num``. It numbers the messages of the connection, whatever
     their channel (the subscription acknowledgement and the heartbeats take numbers too), not
     the messages of one product.
  4. Subscribe ``heartbeats`` as well: a channel with nothing to send is closed after 60-90 s.

How Ladder reads them:

  - A book trusts nothing before its snapshot and applies every later message of its product
    (``CoinbaseSyncMachine``: the snapshot-on-the-stream machine, ``_stream_chain.py``, with the
    rules of a venue that numbers no book, ``IN_ORDER``).
  - Continuity is a property of the connection (``ConnectionSequence``): each message must carry
    the number after the previous one. Any other number (a skip, or a number at or below the last,
    which a counter restarted on the same socket would also produce) means the connection may have
    lost a message, and since the numbers do not say which product it was for, every book on that
    connection is thrown away (reason ``gap``) and resubscribed for a fresh snapshot. The message
    that shows the break counts from then on: later numbers must follow it.
  - A new socket starts a new numbering.
"""

from __future__ import annotations

import enum

from ingest_nodes.core.sync._stream_chain import IN_ORDER, StreamChainMachine


class CoinbaseSyncMachine(StreamChainMachine):
    """Keeps one Coinbase book's sync state: its snapshot, then every update of its product."""

    rules = IN_ORDER
    __slots__ = ()


class Continuity(enum.Enum):
    """What one message's number says about the connection."""

    FIRST = "first"
    """The first numbered message of this socket."""
    NEXT = "next"
    """The number after the previous one: nothing was lost."""
    BROKEN = "broken"
    """Any other number: a message may have been lost; every book of the connection resyncs."""


class ConnectionSequence:
    """The numbering of one connection's messages (rule 3; see the module docstring)."""

    __slots__ = ("breaks", "last")

    def __init__(self) -> None:
        self.last: int | None = None
        """The number of the latest message (None before the first of a socket)."""
        self.breaks = 0
        """Times the numbering broke (for metrics)."""

    def receive(self, sequence_num: int) -> Continuity:
        """One message's ``sequence_num``, in arrival order."""
        last, self.last = self.last, sequence_num
        if last is None:
            return Continuity.FIRST
        if sequence_num == last + 1:
            return Continuity.NEXT
        self.breaks += 1
        return Continuity.BROKEN

    def restart(self) -> None:
        """A new socket: its numbering starts afresh."""
        self.last = None
