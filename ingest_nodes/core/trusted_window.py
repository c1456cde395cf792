"""How deep a replica's REST snapshots go, and when its trusted window needs a fresh one.

Theory of operation
-------------------
A snapshot of ``limit`` levels a side trusts the book down to its worst price (see
:mod:`ingest_nodes.core.book`). As the market moves, levels leave that window at the touch, and once
fewer than the published ``depth`` remain, every answer of that depth stops short (it says
``truncated``). A deeper snapshot lasts longer but costs more weight (Binance charges by tier:
spot 5/25/50/250 for up to 100/500/1000/5000 levels), and at a cold start thousands of books need
one each, so the margin is spent where a book shows it needs it:

- a book syncing from scratch (a new replica, a resync) asks for the cheapest tier that covers
  its depth (within a tier every limit costs the same, so it takes the tier's largest);
- once its window has shrunk below ``depth`` plus half the margin its last snapshot gave it, a
  *refresh* is due: a snapshot from the tier that covers twice the depth, fetched in the
  background and swapped in make-before-break by the replica;
- a book that needs refreshes in quick succession (its price runs) climbs one tier more each
  time, up to the venue's largest; one that stayed put for an hour starts again at the bottom.

Pure and clock-free: times are passed in.
"""

from __future__ import annotations

from typing import Final

from ingest_nodes.core.book import SideWindow

ESCALATE_WITHIN_S: Final = 300.0
"""A refresh this soon after the previous one climbs a tier."""
RELAX_AFTER_S: Final = 3600.0
"""A refresh this long after the previous one starts from the bottom again."""
MIN_REFRESH_GAP_S: Final = 10.0
"""Refreshes of one replica are at least this far apart (a book that no tier can keep deep
enough, such as a 1000-level futures book, must not refresh in a loop)."""


def snapshot_limit(tiers: tuple[tuple[int, int], ...], depth: int) -> int:
    """The cheapest valid snapshot limit that covers ``depth`` levels.

    Within a spot tier every limit costs the same, so take the tier's largest: more trusted depth
    for the same weight (and futures accepts only the listed limits anyway).
    """
    for largest, _weight in tiers:
        if depth <= largest:
            return largest
    return tiers[-1][0]


class WindowKeeper:
    """The snapshot limits of one replica and its refresh rule (see the module docstring)."""

    __slots__ = ("_climb", "_last_refresh_s", "_tiers", "depth", "served_limit")

    def __init__(self, tiers: tuple[tuple[int, int], ...], depth: int) -> None:
        self._tiers = tiers
        self.depth = depth
        self.served_limit = self.sync_limit
        """The limit of the snapshot the served book was built from."""
        self._climb = 0
        self._last_refresh_s = float("-inf")

    @property
    def sync_limit(self) -> int:
        """The limit of a snapshot that syncs the book from scratch: the cheapest that covers it."""
        return snapshot_limit(self._tiers, self.depth)

    def refresh_due(self, bids: SideWindow, asks: SideWindow, now_s: float) -> bool:
        """Whether a side that the venue may extend has shrunk past the low-water mark."""
        if now_s - self._last_refresh_s < MIN_REFRESH_GAP_S:
            return False
        low_water = self.depth + max(self.served_limit - self.depth, 0) // 2
        return (bids.bounded and bids.trusted < low_water) or (asks.bounded and asks.trusted < low_water)

    def refresh_limit(self, now_s: float) -> int:
        """The limit of the refresh starting now (and remember it started)."""
        since = now_s - self._last_refresh_s
        if since < ESCALATE_WITHIN_S:
            self._climb += 1
        elif since > RELAX_AFTER_S:
            self._climb = 0
        self._last_refresh_s = now_s
        limit = snapshot_limit(self._tiers, 2 * self.depth)
        for _ in range(self._climb):
            limit = snapshot_limit(self._tiers, limit + 1)
        return limit
