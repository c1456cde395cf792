"""Binance spot order-book sync: the venue's rules, and the machine that follows them.

The venue's procedure ("How to manage a local order book correctly", spot WebSocket streams
docs, as corrected in November 2025), in our words:

  1. Open the diff stream ``<symbol>@depth`` and buffer its events; note the ``U`` of the first.
  2. Fetch ``GET /api/v3/depth``. A snapshot whose ``lastUpdateId`` is strictly older than that
     first ``U`` is too old: fetch again, the stream stays open.
  3. Drop buffered events with ``u <= lastUpdateId``; start the book from the snapshot, its id
     being ``lastUpdateId``; then run every remaining event, and each live one, through:
       - ``u`` below the book id: ignore it (stale or duplicate);
       - ``U`` above book id + 1: events were missed, throw the book away and start over;
       - otherwise set each level to its absolute quantity (zero removes it), id = ``u``.
     Ids are contiguous: normally the next ``U`` is the previous ``u`` + 1.

How Ladder reads the corner cases:

  - "Too old" means an id is missing between the snapshot and the stream: ``lastUpdateId + 1 <
    U``. A snapshot with ``lastUpdateId == U - 1`` is exactly the state the first event starts
    from, and is accepted (recorded traffic shows this boundary case).
  - Ids equal to the book id count as already applied (``u <= id``), before and after the first
    event, so replays never trigger a resync.
  - A snapshot newer than every buffered event is kept until an event reaches it.
"""

from __future__ import annotations

from typing import Final

from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.core.sync.binance._diff_snapshot import (
    DiffSnapshotMachine,
    DiffSnapshotRules,
    already_applied,
)


def _starts_at_or_before_next(update: DepthUpdate, update_id: int) -> bool:
    return update.first_update_id <= update_id + 1


SPOT_RULES: Final = DiffSnapshotRules(
    is_stale=already_applied,
    bridges=_starts_at_or_before_next,
    is_duplicate=already_applied,
    continues=_starts_at_or_before_next,
)


class SpotSyncMachine(DiffSnapshotMachine):
    """Keeps one Binance spot book's sync state (see the module docstring for the rules)."""

    rules = SPOT_RULES
    __slots__ = ()
