"""Bybit sync rules: contiguous ``u``, snapshots at any time, restarts at ``u`` = 1, gaps."""

from __future__ import annotations

import pytest

from ingest_nodes.core.sync import ApplyUpdate, BybitSyncMachine, ResyncRequired, SyncState
from tests.ingest_nodes.core.driver import Disconnect, Invalidate, bybit, drive, snap

# The docs' example snapshot of orderbook.50.BTCUSDT, and deltas after it.
SNAPSHOT = bybit(13079592, snapshot=True, bids=[("17440.00", "40.833")], asks=[("17440.50", "78.815")])
DELTA = bybit(13079593, asks=[("17440.50", "78.857"), ("17442.00", "1.510")])
NEXT = bybit(13079594, bids=[("17440.00", "0")])


def test_a_snapshot_then_contiguous_deltas() -> None:
    machine = BybitSyncMachine()
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (DELTA, [ApplyUpdate(DELTA)]),
        (NEXT, [ApplyUpdate(NEXT)]),
    )
    assert machine.update_id == 13079594


def test_deltas_before_the_first_snapshot_are_dropped() -> None:
    machine = BybitSyncMachine()
    drive(machine, (DELTA, []), (NEXT, []))
    assert machine.state is SyncState.IDLE


def test_a_skipped_u_is_a_gap_that_waits_for_a_new_snapshot() -> None:
    machine = BybitSyncMachine()
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (NEXT, [ResyncRequired("gap")]),  # 13079593 was lost
        (bybit(13079595), []),
    )
    again = bybit(13079595, snapshot=True, bids=[("17439", "1")])
    drive(machine, (again, [ApplyUpdate(again)]), (bybit(13079596), [ApplyUpdate(bybit(13079596))]))


def test_the_last_delta_sent_again_is_dropped_and_an_older_one_is_a_gap() -> None:
    machine = BybitSyncMachine()
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (DELTA, [ApplyUpdate(DELTA)]),
        (DELTA, []),
        (NEXT, [ApplyUpdate(NEXT)]),
        (DELTA, [ResyncRequired("gap")]),
    )


def test_a_restart_snapshot_with_u_1_replaces_the_book_and_the_chain_starts_over() -> None:
    machine = BybitSyncMachine()
    restart = bybit(1, snapshot=True, bids=[("17400", "2")])
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (DELTA, [ApplyUpdate(DELTA)]),
        (restart, [ApplyUpdate(restart)]),
        (bybit(2), [ApplyUpdate(bybit(2))]),
    )
    assert machine.update_id == 2


def test_a_delta_running_backwards_without_a_snapshot_is_a_gap() -> None:
    machine = BybitSyncMachine()
    drive(machine, (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]), (bybit(2), [ResyncRequired("gap")]))


def test_level_1_repeats_its_snapshot_with_the_same_u() -> None:
    machine = BybitSyncMachine()
    top = bybit(500, snapshot=True, bids=[("1", "1")], asks=[("2", "1")], limit=1)
    drive(machine, (top, [ApplyUpdate(top)]), (top, [ApplyUpdate(top)]))
    assert machine.update_id == 500


def test_rest_snapshots_are_ignored_and_disconnects_wait_for_a_snapshot() -> None:
    machine = BybitSyncMachine()
    drive(
        machine,
        (snap(13079592), []),
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (Disconnect(), [ResyncRequired("disconnect")]),
        (DELTA, []),
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (Invalidate("stall"), [ResyncRequired("stall")]),
    )


def test_max_buffer_is_checked_like_every_machine_s() -> None:
    with pytest.raises(ValueError, match="max_buffer"):
        BybitSyncMachine(max_buffer=0)
    assert BybitSyncMachine().buffered == 0
