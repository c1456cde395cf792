"""Binance futures sync rules: the ``pu`` chain, the first-event rule and id holes."""

from __future__ import annotations

from ingest_nodes.core.sync import (
    ApplyUpdate,
    FetchSnapshot,
    FuturesSyncMachine,
    LoadSnapshot,
    ResyncRequired,
    SpotSyncMachine,
    SyncState,
)
from tests.ingest_nodes.core.driver import Disconnect, Invalidate, drive, snap, upd

# Recorded SUSHIUSDT ids: U is never the previous u + 1, but pu always is the previous u.
E1 = upd(600859599090, 600859600917, pu=600859598061)
E2 = upd(600859601193, 600859602861, pu=600859600917)
E3 = upd(600859603012, 600859605925, pu=600859602861)
E4 = upd(600859605926, 600859607423, pu=600859605925)
E5 = upd(600859607611, 600859607700, pu=600859607423)


def test_recorded_session_with_id_holes_syncs_on_the_event_containing_the_snapshot_id() -> None:
    machine = FuturesSyncMachine()
    snapshot = snap(600859605926)  # equal to E4's U, as recorded
    drive(
        machine,
        (E1, [FetchSnapshot()]),
        (E2, []),
        (E3, []),
        (E4, []),
        (snapshot, [LoadSnapshot(snapshot), ApplyUpdate(E4)]),
        (E5, [ApplyUpdate(E5)]),
    )
    assert machine.update_id == E5.final_update_id


def test_id_holes_never_count_as_gaps_while_pu_chains() -> None:
    machine = FuturesSyncMachine()
    snapshot = snap(600859599500)
    drive(
        machine,
        (E1, [FetchSnapshot()]),
        (snapshot, [LoadSnapshot(snapshot), ApplyUpdate(E1)]),
        (E2, [ApplyUpdate(E2)]),
        (E3, [ApplyUpdate(E3)]),
    )
    assert machine.synced


def test_the_spot_rule_would_wrongly_see_gaps_in_the_same_stream() -> None:
    spot = SpotSyncMachine()
    snapshot = snap(600859599500)
    drive(
        spot,
        (E1, [FetchSnapshot()]),
        (snapshot, [LoadSnapshot(snapshot), ApplyUpdate(E1)]),
        (E2, [ResyncRequired("gap"), FetchSnapshot()]),
    )


def test_events_strictly_older_than_the_snapshot_are_dropped_but_u_equal_is_kept() -> None:
    machine = FuturesSyncMachine()
    drive(
        machine,
        (upd(10, 20, pu=5), [FetchSnapshot()]),
        (upd(30, 40, pu=20), []),
        (upd(45, 50, pu=40), []),
        (
            snap(40),
            [LoadSnapshot(snap(40)), ApplyUpdate(upd(30, 40, pu=20)), ApplyUpdate(upd(45, 50, pu=40))],
        ),
    )
    assert machine.update_id == 50


def test_first_event_must_cover_the_snapshot_id_else_the_snapshot_is_too_old() -> None:
    machine = FuturesSyncMachine()
    drive(
        machine,
        (upd(30, 40, pu=20), [FetchSnapshot()]),
        (snap(25), [FetchSnapshot("snapshot_too_old")]),
        (snap(35), [LoadSnapshot(snap(35)), ApplyUpdate(upd(30, 40, pu=20))]),
    )


def test_first_event_whose_pu_is_the_snapshot_id_follows_it_exactly() -> None:
    machine = FuturesSyncMachine()
    drive(
        machine,
        (upd(30, 40, pu=20), [FetchSnapshot()]),
        (snap(20), [LoadSnapshot(snap(20)), ApplyUpdate(upd(30, 40, pu=20))]),
    )
    assert machine.update_id == 40


def test_snapshot_id_in_a_hole_between_events_is_refetched() -> None:
    machine = FuturesSyncMachine()
    drive(
        machine,
        (upd(10, 20, pu=5), [FetchSnapshot()]),
        (upd(30, 40, pu=20), []),
        (snap(25), [FetchSnapshot("snapshot_too_old")]),
    )
    assert machine.buffered == 1  # the stale event went, the one after the hole stays
    drive(machine, (snap(33), [LoadSnapshot(snap(33)), ApplyUpdate(upd(30, 40, pu=20))]))


def test_pu_mismatch_when_synced_resyncs_from_a_new_snapshot_keeping_the_stream() -> None:
    machine = FuturesSyncMachine()
    drive(
        machine,
        (upd(10, 20, pu=5), [FetchSnapshot()]),
        (snap(15), [LoadSnapshot(snap(15)), ApplyUpdate(upd(10, 20, pu=5))]),
        (upd(30, 40, pu=25), [ResyncRequired("gap"), FetchSnapshot()]),  # an event ending at 25 was lost
    )
    assert machine.state is SyncState.BUFFERING
    drive(machine, (snap(35), [LoadSnapshot(snap(35)), ApplyUpdate(upd(30, 40, pu=25))]))


def test_replays_after_sync_are_dropped_without_a_resync() -> None:
    machine = FuturesSyncMachine()
    drive(
        machine,
        (upd(10, 20, pu=5), [FetchSnapshot()]),
        (snap(15), [LoadSnapshot(snap(15)), ApplyUpdate(upd(10, 20, pu=5))]),
        (upd(10, 20, pu=5), []),
        (upd(1, 4, pu=0), []),
        (upd(30, 40, pu=20), [ApplyUpdate(upd(30, 40, pu=20))]),
    )


def test_chain_break_inside_the_buffer_fetches_again_without_loading() -> None:
    machine = FuturesSyncMachine()
    drive(
        machine,
        (upd(10, 20, pu=5), [FetchSnapshot()]),
        (upd(30, 40, pu=25), []),
        (upd(50, 60, pu=40), []),
        (snap(15), [FetchSnapshot("gap_while_buffering")]),
    )
    assert machine.buffered == 2
    drive(machine, (snap(55), [LoadSnapshot(snap(55)), ApplyUpdate(upd(50, 60, pu=40))]))


def test_snapshot_newer_than_everything_buffered_is_held_until_an_event_covers_it() -> None:
    machine = FuturesSyncMachine()
    drive(
        machine,
        (upd(10, 20, pu=5), [FetchSnapshot()]),
        (snap(30), []),
        (upd(21, 29, pu=20), []),  # u < lastUpdateId: stale
    )
    assert machine.state is SyncState.SNAPSHOT_HELD
    drive(machine, (upd(30, 35, pu=29), [LoadSnapshot(snap(30)), ApplyUpdate(upd(30, 35, pu=29))]))


def test_coalesced_events_with_huge_ranges_are_fine() -> None:
    machine = FuturesSyncMachine()
    big = upd(1_000, 9_000_000, pu=999)
    drive(
        machine,
        (big, [FetchSnapshot()]),
        (snap(4_000_000), [LoadSnapshot(snap(4_000_000)), ApplyUpdate(big)]),
        (upd(9_500_000, 20_000_000, pu=9_000_000), [ApplyUpdate(upd(9_500_000, 20_000_000, pu=9_000_000))]),
    )


def test_disconnect_and_invalidate() -> None:
    machine = FuturesSyncMachine()
    drive(
        machine,
        (Disconnect(), []),
        (upd(10, 20, pu=5), [FetchSnapshot()]),
        (Disconnect(), [ResyncRequired("disconnect")]),
        (upd(30, 40, pu=20), [FetchSnapshot()]),
        (snap(35), [LoadSnapshot(snap(35)), ApplyUpdate(upd(30, 40, pu=20))]),
        (Invalidate("stale_stream"), [ResyncRequired("stale_stream")]),
    )
    assert machine.state is SyncState.IDLE
