"""Binance spot sync rules, one test per rule or edge case, driven through scripted sequences."""

from __future__ import annotations

import pytest

from ingest_nodes.core.sync import (
    ApplyUpdate,
    FetchSnapshot,
    LoadSnapshot,
    ResyncRequired,
    SpotSyncMachine,
    SyncState,
)
from tests.ingest_nodes.core.driver import Disconnect, Invalidate, drive, snap, upd


def synced_at(update_id: int) -> SpotSyncMachine:
    """A machine synced at ``update_id`` through the normal path."""
    machine = SpotSyncMachine()
    drive(
        machine,
        (upd(update_id, update_id), [FetchSnapshot()]),
        (snap(update_id - 1), [LoadSnapshot(snap(update_id - 1)), ApplyUpdate(upd(update_id, update_id))]),
    )
    assert machine.update_id == update_id
    return machine


def test_first_event_asks_for_a_snapshot_and_later_ones_are_buffered() -> None:
    machine = SpotSyncMachine()
    initial = machine.state  # asserted through a local: mypy would keep machine.state narrowed past drive()
    assert initial is SyncState.IDLE
    assert machine.update_id is None
    drive(machine, (upd(157, 160), [FetchSnapshot()]), (upd(161, 165), []), (upd(166, 166), []))
    assert machine.state is SyncState.BUFFERING
    assert machine.buffered == 3
    assert not machine.synced
    assert machine.update_id is None


def test_snapshot_inside_the_first_event_drops_older_events_and_applies_the_rest() -> None:
    machine = SpotSyncMachine()
    drive(
        machine,
        (upd(150, 156), [FetchSnapshot()]),
        (upd(157, 160), []),
        (upd(161, 165), []),
        (snap(158), [LoadSnapshot(snap(158)), ApplyUpdate(upd(157, 160)), ApplyUpdate(upd(161, 165))]),
    )
    assert machine.synced
    assert machine.update_id == 165
    assert machine.buffered == 0


def test_recorded_boundary_snapshot_ending_right_before_the_next_event_is_accepted() -> None:
    # NKNUSDT: snapshot 499869752; buffered 750-752 is dropped (u <= lastUpdateId) and 753 starts
    # exactly at lastUpdateId + 1.
    machine = SpotSyncMachine()
    drive(
        machine,
        (upd(499869750, 499869752), [FetchSnapshot()]),
        (upd(499869753, 499869754), []),
        (snap(499869752), [LoadSnapshot(snap(499869752)), ApplyUpdate(upd(499869753, 499869754))]),
    )
    assert machine.update_id == 499869754


def test_first_buffered_event_starting_exactly_at_last_update_id_plus_one_is_accepted() -> None:
    machine = SpotSyncMachine()
    drive(
        machine,
        (upd(101, 105), [FetchSnapshot()]),
        (snap(100), [LoadSnapshot(snap(100)), ApplyUpdate(upd(101, 105))]),
    )
    assert machine.synced


def test_snapshot_strictly_older_than_the_first_event_is_fetched_again() -> None:
    machine = SpotSyncMachine()
    drive(
        machine,
        (upd(101, 105), [FetchSnapshot()]),
        (snap(99), [FetchSnapshot("snapshot_too_old")]),
        (upd(106, 107), []),
        (snap(104), [LoadSnapshot(snap(104)), ApplyUpdate(upd(101, 105)), ApplyUpdate(upd(106, 107))]),
    )
    assert machine.update_id == 107


def test_snapshot_newer_than_everything_buffered_is_held_until_an_event_reaches_it() -> None:
    machine = SpotSyncMachine()
    drive(
        machine,
        (upd(1, 5), [FetchSnapshot()]),
        (upd(6, 8), []),
        (snap(10), []),
    )
    assert machine.state is SyncState.SNAPSHOT_HELD
    assert not machine.synced
    drive(
        machine,
        (upd(9, 10), []),  # still inside the snapshot: stale, no resync, no refetch
        (upd(11, 12), [LoadSnapshot(snap(10)), ApplyUpdate(upd(11, 12))]),
    )
    assert machine.update_id == 12


def test_held_snapshot_is_also_reached_by_an_event_straddling_it() -> None:
    machine = SpotSyncMachine()
    drive(
        machine,
        (upd(1, 5), [FetchSnapshot()]),
        (snap(7), []),
        (upd(6, 9), [LoadSnapshot(snap(7)), ApplyUpdate(upd(6, 9))]),
    )
    assert machine.update_id == 9


def test_held_snapshot_that_the_stream_jumps_past_is_fetched_again() -> None:
    machine = SpotSyncMachine()
    drive(
        machine,
        (upd(1, 5), [FetchSnapshot()]),
        (snap(10), []),
        (upd(13, 14), [FetchSnapshot("snapshot_too_old")]),
    )
    assert machine.state is SyncState.BUFFERING
    assert machine.buffered == 1
    drive(machine, (snap(12), [LoadSnapshot(snap(12)), ApplyUpdate(upd(13, 14))]))


def test_held_snapshot_ignores_another_snapshot() -> None:
    machine = SpotSyncMachine()
    drive(machine, (upd(1, 5), [FetchSnapshot()]), (snap(10), []), (snap(20), []))
    drive(machine, (upd(11, 11), [LoadSnapshot(snap(10)), ApplyUpdate(upd(11, 11))]))


def test_duplicates_and_replays_when_synced_are_ignored_without_a_resync() -> None:
    machine = synced_at(10)
    drive(
        machine,
        (upd(11, 15), [ApplyUpdate(upd(11, 15))]),
        (upd(11, 15), []),  # exact duplicate
        (upd(3, 7), []),  # an old event re-sent
        (upd(15, 15), []),  # u == book id: already applied
        (upd(14, 18), [ApplyUpdate(upd(14, 18))]),  # overlaps the book id: absolute quantities, apply
        (upd(19, 20), [ApplyUpdate(upd(19, 20))]),
    )
    assert machine.update_id == 20


def test_duplicates_inside_the_buffer_are_dropped_while_draining() -> None:
    machine = SpotSyncMachine()
    drive(
        machine,
        (upd(5, 6), [FetchSnapshot()]),
        (upd(7, 8), []),
        (upd(7, 8), []),
        (upd(9, 9), []),
        (snap(6), [LoadSnapshot(snap(6)), ApplyUpdate(upd(7, 8)), ApplyUpdate(upd(9, 9))]),
    )
    assert machine.update_id == 9


def test_gap_when_synced_resyncs_and_restarts_buffering_from_the_gap_event() -> None:
    machine = synced_at(10)
    drive(machine, (upd(13, 14), [ResyncRequired("gap"), FetchSnapshot()]))
    assert machine.state is SyncState.BUFFERING
    assert machine.update_id is None
    assert machine.buffered == 1
    drive(
        machine,
        (upd(15, 16), []),
        (snap(12), [LoadSnapshot(snap(12)), ApplyUpdate(upd(13, 14)), ApplyUpdate(upd(15, 16))]),
    )
    assert machine.update_id == 16


def test_gap_inside_the_buffer_keeps_the_book_untouched_and_fetches_again() -> None:
    machine = SpotSyncMachine()
    drive(
        machine,
        (upd(1, 5), [FetchSnapshot()]),
        (upd(6, 7), []),
        (upd(10, 12), []),  # 8 and 9 were lost while buffering
        (upd(13, 13), []),
        (snap(4), [FetchSnapshot("gap_while_buffering")]),
    )
    assert machine.state is SyncState.BUFFERING
    assert machine.buffered == 2
    drive(machine, (snap(11), [LoadSnapshot(snap(11)), ApplyUpdate(upd(10, 12)), ApplyUpdate(upd(13, 13))]))


def test_buffer_overflow_resyncs_and_the_next_event_starts_over() -> None:
    machine = SpotSyncMachine(max_buffer=3)
    drive(
        machine,
        (upd(1, 1), [FetchSnapshot()]),
        (upd(2, 2), []),
        (upd(3, 3), []),
        (upd(4, 4), [ResyncRequired("buffer_overflow")]),
    )
    assert machine.state is SyncState.IDLE
    assert machine.buffered == 0
    drive(
        machine,
        (snap(3), []),  # the answer to the abandoned request
        (upd(5, 5), [FetchSnapshot()]),
        (snap(4), [LoadSnapshot(snap(4)), ApplyUpdate(upd(5, 5))]),
    )


def test_unrequested_snapshots_are_ignored() -> None:
    idle = SpotSyncMachine()
    drive(idle, (snap(5), []))
    assert idle.state is SyncState.IDLE
    synced = synced_at(10)
    drive(synced, (snap(50), []), (upd(11, 11), [ApplyUpdate(upd(11, 11))]))


@pytest.mark.parametrize("state", ["buffering", "held", "synced"])
def test_disconnect_throws_everything_away(state: str) -> None:
    machine = SpotSyncMachine()
    drive(machine, (upd(1, 5), [FetchSnapshot()]))
    if state == "held":
        drive(machine, (snap(9), []))
    if state == "synced":
        drive(machine, (snap(3), [LoadSnapshot(snap(3)), ApplyUpdate(upd(1, 5))]))
    drive(machine, (Disconnect(), [ResyncRequired("disconnect")]), (Disconnect(), []))
    assert machine.state is SyncState.IDLE
    assert machine.update_id is None
    assert machine.buffered == 0
    drive(machine, (snap(9), []), (upd(20, 21), [FetchSnapshot()]))


def test_invalidate_from_synced_resyncs_with_the_callers_reason() -> None:
    machine = synced_at(10)
    drive(machine, (Invalidate("crossed"), [ResyncRequired("crossed")]), (Invalidate("crossed"), []))
    assert machine.state is SyncState.IDLE
    drive(machine, (upd(11, 11), [FetchSnapshot()]))


def test_max_buffer_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_buffer"):
        SpotSyncMachine(max_buffer=0)
