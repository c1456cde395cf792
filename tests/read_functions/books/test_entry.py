"""``Entry.served``: the replica choice is remembered, and never outlives what it was based on."""

from __future__ import annotations

import asyncio

import pytest

from book_store.codec import BookStatus, Snapshot, SnapshotMeta
from book_store.delta import REPLACE, encode_delta, read_delta
from ladder_process.errors import StoreError
from read_functions.books.entry import Entry
from read_functions.books.render import Side
from tests.read_functions.helpers import ETH, snapshot

SILENCE_MS = 1000


def entry_with(*snapshots: Snapshot) -> Entry:
    entry = Entry(ETH, asyncio.get_running_loop().create_future())
    for snap in snapshots:
        entry.apply(snap.meta.replica, snap)
    return entry


async def test_the_choice_is_choose_replica_s() -> None:
    older = Snapshot(snapshot(10, 0, publish_time=1000))
    newer = Snapshot(snapshot(12, 1, publish_time=1000))
    resyncing = Snapshot(snapshot(50, 2, status=BookStatus.RESYNCING, publish_time=1000))
    entry = entry_with(older, newer, resyncing)
    assert entry.served(1500, SILENCE_MS) is newer
    assert entry.served(1500, SILENCE_MS) is newer  # remembered


async def test_a_change_of_any_replica_is_seen_at_once() -> None:
    first = Snapshot(snapshot(10, 0, publish_time=1000))
    entry = entry_with(first)
    assert entry.served(1100, SILENCE_MS) is first
    better = Snapshot(snapshot(11, 1, publish_time=1050))
    entry.apply(1, better)
    assert entry.served(1100, SILENCE_MS) is better
    falling_out = Snapshot(snapshot(12, 1, status=BookStatus.RESYNCING, publish_time=1060))
    entry.apply(1, falling_out)
    assert entry.served(1100, SILENCE_MS) is first


async def test_a_chosen_replica_that_falls_silent_is_dropped_on_time() -> None:
    quiet = Snapshot(snapshot(20, 0, publish_time=1000))
    heard = Snapshot(snapshot(10, 1, publish_time=1400))
    entry = entry_with(quiet, heard)
    assert entry.served(2000, SILENCE_MS) is quiet  # exactly max_silence_ms old: still trusted
    assert entry.served(2001, SILENCE_MS) is heard
    assert entry.served(2401, SILENCE_MS) is None
    assert entry.served(2402, SILENCE_MS) is None


async def test_a_rejected_older_message_keeps_the_choice() -> None:
    current = Snapshot(snapshot(10, 0, publish_time=1000))
    entry = entry_with(current)
    assert entry.served(1100, SILENCE_MS) is current
    assert not entry.apply(0, Snapshot(snapshot(9, 0, publish_time=900)))
    assert entry.served(1100, SILENCE_MS) is current


async def test_another_silence_limit_chooses_again() -> None:
    snap = Snapshot(snapshot(10, 0, publish_time=1000))
    entry = entry_with(snap)
    assert entry.served(1500, SILENCE_MS) is snap
    assert entry.served(1500, 100) is None


async def test_a_replica_whose_deltas_do_not_fit_is_dropped_when_its_levels_are_first_needed() -> None:
    head = Snapshot(snapshot(10, 0, publish_time=1000))
    entry = entry_with(head)
    broken: list[Entry] = []
    entry.on_broken = broken.append
    meta = SnapshotMeta(11, 1, 1, 1001, 0, BookStatus.SYNCED)
    unfit = read_delta(encode_delta(meta, 10, 0, 5, (5, 5), [(REPLACE, 9, b'["1","1"]')], []))
    assert entry.apply_delta(unfit) is True  # its header continues the head: taken, levels not read
    assert entry.served(1500, SILENCE_MS) is entry.replicas[0]
    with pytest.raises(StoreError):
        entry.view(entry.replicas[0], 5, Side.BOTH)
    assert entry.replicas == {} and broken == [entry]
