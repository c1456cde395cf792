"""Binance USD-M (and COIN-M) futures order-book sync: the venue's rules, and their machine.

The venue's procedure ("How to manage a local order book correctly", USD-M futures WebSocket
market streams docs), in our words:

  1. Open the diff stream ``<symbol>@depth`` and buffer its events.
  2. Fetch ``GET /fapi/v1/depth``.
  3. Drop buffered events with ``u < lastUpdateId`` (strictly less, unlike spot).
  4. The first event applied must satisfy ``U <= lastUpdateId <= u``.
  5. From then on each event's ``pu`` must equal the previous event's ``u``; otherwise
     re-initialise from the snapshot step (the stream stays open).
  6. Quantities are absolute; zero removes the level; removing an absent level is normal.

Ids are NOT contiguous between events (one id space is shared across symbols), so the spot test
``U == previous u + 1`` must never be used here: ``pu`` is the only chain.

How Ladder reads the corner cases:

  - An event with ``pu == lastUpdateId`` starts exactly where the snapshot ends, so it is accepted
    as the first event too (the same chain test rule 5 applies to every later event).
  - A ``lastUpdateId`` falling in a hole between two events (``prev u < lastUpdateId < next U``)
    satisfies neither test; the snapshot is refetched rather than guessed at.
  - Events with ``u <= id`` after the first one are replays and are dropped without a resync.
"""

from __future__ import annotations

from typing import Final

from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.core.sync.binance._diff_snapshot import (
    DiffSnapshotMachine,
    DiffSnapshotRules,
    already_applied,
)


def _older_than(update: DepthUpdate, last_update_id: int) -> bool:
    return update.final_update_id < last_update_id


def _covers_or_follows(update: DepthUpdate, last_update_id: int) -> bool:
    return update.first_update_id <= last_update_id or update.prev_final_update_id == last_update_id


def _chains(update: DepthUpdate, update_id: int) -> bool:
    return update.prev_final_update_id == update_id


FUTURES_RULES: Final = DiffSnapshotRules(
    is_stale=_older_than,
    bridges=_covers_or_follows,
    is_duplicate=already_applied,
    continues=_chains,
)


class FuturesSyncMachine(DiffSnapshotMachine):
    """Keeps one Binance futures book's sync state (see the module docstring for the rules)."""

    rules = FUTURES_RULES
    __slots__ = ()
