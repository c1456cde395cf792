"""Kraken spot order-book sync (WebSocket v2 ``book`` channel): the venue's rules, and their machine.

What the venue's docs (the ``book`` channel reference and the "Book checksum (WebSocket v2)"
guide) say, in our words:

  1. Subscribe with a depth of 10, 25, 100, 500 or 1000 levels a side: the venue sends a snapshot
     of that many levels, then updates. Both carry ``checksum``.
  2. An update sets each listed level to its absolute quantity; quantity 0 removes it. Apply every
     level of a message, in order, before checking anything.
  3. After each message, truncate the book to the subscribed depth: the venue never sends a removal
     for a level that falls out of scope (when a level inside the depth goes, the next one in line
     is sent as an insert).
  4. ``checksum`` is the CRC32 (as an unsigned 32-bit number) of one string: for each of the top
     10 asks, low to high, then each of the top 10 bids, high to low, the price and then the
     quantity, each with its decimal point removed and its leading zeros stripped. The strings are
     the venue's own, at full precision: ``45285.2`` and ``0.00100000`` give ``452852100000``. It
     covers the top 10 whatever the subscribed depth.
  5. Verifying is optional for a client; a mismatch means the local book is wrong.

How Ladder reads them:

  - Every message is verified, the snapshot included: a mismatch throws the book away at once
    (reason ``checksum``) and the caller resubscribes the symbol for a fresh snapshot.
  - The venue numbers nothing, so the checksum is the only proof: it proves the top 10 at every
    message. Levels deeper than 10 are as right as in-order delivery on one connection makes them,
    as an Alpaca book's are; a frame that cannot be read costs every book of its connection its sync.
  - The subscribed depth travels with the snapshot (``DepthUpdate.limit``: the stream knows what it
    asked for); a book serves that many levels a side, a side holding fewer being the venue's whole
    side. Unlike a REST snapshot's, the levels do not age: the venue keeps the top ``limit`` current
    (rule 3), so nothing past a watermark is distrusted.
  - This is the snapshot-on-the-stream machine (``_stream_chain.py``) with the rules of a venue that
    numbers nothing (``IN_ORDER``) and rules 3 and 4 as its checks.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Final

from ingest_nodes.core.events import DepthUpdate, Level
from ingest_nodes.core.sync._stream_chain import IN_ORDER, StreamChainMachine
from ingest_nodes.core.sync.actions import Action, Truncate, VerifyChecksum

DEPTHS: Final = (10, 25, 100, 500, 1000)
"""The depths the ``book`` channel can be subscribed at."""
CHECKSUM_LEVELS: Final = 10


def subscription_depth(depth: int) -> int:
    """The smallest depth the channel offers that covers ``depth`` levels (at most the largest)."""
    return next((offered for offered in DEPTHS if offered >= depth), DEPTHS[-1])


def kraken_checksum(bids: Sequence[Level], asks: Sequence[Level]) -> int:
    """Rule 4 over the best 10 levels of each side (``bids`` and ``asks`` best first)."""
    text = "".join(
        _digits(price) + _digits(quantity)
        for price, quantity in (*asks[:CHECKSUM_LEVELS], *bids[:CHECKSUM_LEVELS])
    )
    return zlib.crc32(text.encode("ascii"))


def _digits(number: str) -> str:
    return number.replace(".", "").lstrip("0")


class KrakenSyncMachine(StreamChainMachine):
    """Keeps one Kraken book's sync state (see the module docstring for the rules)."""

    rules = IN_ORDER
    __slots__ = ("depth",)

    def __init__(self, *, max_buffer: int = 10_000) -> None:
        super().__init__(max_buffer=max_buffer)
        self.depth: int | None = None
        """The subscribed depth of the last snapshot (None before the first)."""

    def checks(self, update: DepthUpdate) -> list[Action]:
        if update.reset:
            if not update.limit:
                raise ValueError("a Kraken snapshot must say the depth it was subscribed at")
            self.depth = update.limit
        assert self.depth is not None, "only a snapshot starts a book"
        actions: list[Action] = [Truncate(self.depth)]
        if update.checksum is not None:
            actions.append(VerifyChecksum(update.checksum, CHECKSUM_LEVELS, kraken_checksum))
        return actions
