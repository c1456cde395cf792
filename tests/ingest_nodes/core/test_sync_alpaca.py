"""Alpaca sync rules: nothing is trusted before a reset; a reset may come at any time."""

from __future__ import annotations

import pytest

from ingest_nodes.core.sync import AlpacaSyncMachine, ApplyUpdate, ResyncRequired, SyncState
from tests.ingest_nodes.core.driver import Disconnect, Invalidate, alpaca, drive, snap

RESET = alpaca(bids=[("71859.53", "0.27994")], asks=[("71939.7", "0.83953")], reset=True, event_time=1)
UPDATE = alpaca(asks=[("71939.7", "0")], event_time=2)


def test_updates_before_the_first_reset_are_untrusted_and_dropped() -> None:
    machine = AlpacaSyncMachine()
    drive(machine, (UPDATE, []), (UPDATE, []))
    assert machine.state is SyncState.IDLE
    assert machine.update_id is None
    assert machine.buffered == 0


def test_reset_syncs_and_later_updates_apply() -> None:
    machine = AlpacaSyncMachine()
    drive(machine, (RESET, [ApplyUpdate(RESET)]), (UPDATE, [ApplyUpdate(UPDATE)]))
    assert machine.synced
    assert machine.update_id == 2  # messages applied: the reset and the update


def test_reset_mid_stream_is_applied_as_a_whole_book() -> None:
    machine = AlpacaSyncMachine()
    second = alpaca(bids=[("70000", "1")], reset=True, event_time=3)
    drive(
        machine,
        (RESET, [ApplyUpdate(RESET)]),
        (UPDATE, [ApplyUpdate(UPDATE)]),
        (second, [ApplyUpdate(second)]),
    )
    assert machine.synced


def test_disconnect_waits_for_the_next_reset() -> None:
    machine = AlpacaSyncMachine()
    drive(
        machine,
        (Disconnect(), []),
        (RESET, [ApplyUpdate(RESET)]),
        (Disconnect(), [ResyncRequired("disconnect")]),
        (UPDATE, []),
        (RESET, [ApplyUpdate(RESET)]),
    )


def test_invalidate_waits_for_the_next_reset() -> None:
    machine = AlpacaSyncMachine()
    drive(
        machine,
        (Invalidate("crossed"), []),
        (RESET, [ApplyUpdate(RESET)]),
        (Invalidate("crossed"), [ResyncRequired("crossed")]),
        (UPDATE, []),
    )


def test_snapshots_are_never_used() -> None:
    machine = AlpacaSyncMachine()
    drive(machine, (snap(5), []), (RESET, [ApplyUpdate(RESET)]), (snap(6), []))
    assert machine.synced


def test_max_buffer_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_buffer"):
        AlpacaSyncMachine(max_buffer=0)
