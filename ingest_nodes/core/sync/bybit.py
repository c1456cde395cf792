"""Bybit v5 order-book sync (``orderbook.{depth}.{symbol}``): the venue's rules, and their machine.

What the venue's docs say ("Orderbook" WebSocket stream, spot, linear and inverse), in our words:

  - After a subscribe the venue sends a ``snapshot`` of the channel's depth (1, 50, 200 or 1000
    levels per side), then ``delta`` messages whenever the book changes: absolute sizes, a size
    of 0 deletes the level, an unknown price is inserted.
  - A new ``snapshot`` may come at any time ("if there is a problem on Bybit's end"); it is the
    latest book and replaces the local one.
  - ``u``, the update id, is a sequence: normally contiguous, each message's ``u`` the previous
    one's plus 1. After a restart of the venue's service it starts over with a snapshot whose
    ``u`` is 1. ``seq`` is the matching engine's cross sequence, comparable across depths.
  - Level 1 repeats its snapshot, with the same ``u``, after 3 seconds without change.

So a delta continues the book when its ``u`` is the last message's ``u`` + 1; the snapshot rule
takes care of restarts and repeats. A delta with the last ``u`` again is a duplicate; any other
``u`` is a gap, and only that book is subscribed again (a ``u`` running backwards without a
snapshot is not a restart Ladder may assume). The parser maps ``u`` to ``final_update_id`` (and
``first_update_id``).
"""

from __future__ import annotations

from typing import Final

from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.core.sync._stream_chain import ChainRules, StreamChainMachine


def _next_id(update: DepthUpdate, last: DepthUpdate) -> bool:
    return update.final_update_id == last.final_update_id + 1


def _same_id(update: DepthUpdate, last: DepthUpdate) -> bool:
    return update.final_update_id == last.final_update_id


BYBIT_RULES: Final = ChainRules(continues=_next_id, repeats=_same_id)


class BybitSyncMachine(StreamChainMachine):
    """Keeps one Bybit book's sync state (see the module docstring for the rules)."""

    rules = BYBIT_RULES
    __slots__ = ()
