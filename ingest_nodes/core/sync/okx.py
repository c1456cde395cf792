"""OKX v5 order-book sync (``books`` channel): the venue's rules, and the machine that follows them.

What the venue's docs say ("WS / Order book channel" and its "Sequence ID" notes), in our words:

  - Subscribing ``books`` for an instrument pushes its top 400 levels per side as a snapshot
    (``action: snapshot``), then, every 100 ms, the levels that changed (``action: update``):
    absolute sizes, a size of 0 removes the level.
  - Every message carries ``seqId``; an update's ``prevSeqId`` equals the ``seqId`` of the message
    before it, a snapshot's ``prevSeqId`` is always -1. Each instrument has its own ids, and every
    connection subscribed to the same channel sees the same ones (so replicas compare at equal
    ids). Ids are not contiguous: ``seqId`` usually grows, by any amount.
  - A book with no change for about 60 seconds gets an update with empty ``bids`` and ``asks``
    whose ``seqId`` is the last one sent and ``prevSeqId`` equals ``seqId``: the venue's word that
    the channel is alive.
  - After maintenance the ids may start over: an update then has ``seqId`` smaller than its
    ``prevSeqId``, and later updates chain from the new, smaller, ids.
  - The ``checksum`` field (CRC32 of the top 25 levels) is always 0 since 2026-06-23, so nothing
    rests on it: continuity is the ``prevSeqId`` chain alone.

So one rule covers the ordinary update, the heartbeat and the restart alike: a message continues
the book when its ``prevSeqId`` is the ``seqId`` of the last message applied. The parser maps
``seqId`` to ``final_update_id`` (and ``first_update_id``) and ``prevSeqId`` to
``prev_final_update_id``. A duplicate is the last message again (same ``prevSeqId`` and
``seqId``); anything else that does not chain is a gap, and only that book is subscribed again.
"""

from __future__ import annotations

from typing import Final

from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.core.sync._stream_chain import ChainRules, StreamChainMachine


def _chains(update: DepthUpdate, last: DepthUpdate) -> bool:
    return update.prev_final_update_id == last.final_update_id


def _same_ids(update: DepthUpdate, last: DepthUpdate) -> bool:
    return (
        update.final_update_id == last.final_update_id
        and update.prev_final_update_id == last.prev_final_update_id
    )


OKX_RULES: Final = ChainRules(continues=_chains, repeats=_same_ids)


class OkxSyncMachine(StreamChainMachine):
    """Keeps one OKX book's sync state (see the module docstring for the rules)."""

    rules = OKX_RULES
    __slots__ = ()
