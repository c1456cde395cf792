"""OKX sync rules: the ``prevSeqId`` chain, heartbeats, id restarts, duplicates and gaps."""

from __future__ import annotations

from ingest_nodes.core.sync import ApplyUpdate, FetchSnapshot, OkxSyncMachine, ResyncRequired, SyncState
from tests.ingest_nodes.core.driver import Disconnect, Invalidate, drive, okx, snap

# The docs' own example: a snapshot, an update, a heartbeat, an id restart, and the update after it.
SNAPSHOT = okx(-1, 10, bids=[("8476.97", "256")], asks=[("8476.98", "415")])
UPDATE = okx(10, 15, asks=[("8476.98", "400")])
HEARTBEAT = okx(15, 15)
RESTART = okx(15, 3, bids=[("8476.97", "0")])
AFTER_RESTART = okx(3, 5, bids=[("8475.55", "101")])


def test_the_documented_sequence_applies_every_message() -> None:
    machine = OkxSyncMachine()
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (UPDATE, [ApplyUpdate(UPDATE)]),
        (HEARTBEAT, [ApplyUpdate(HEARTBEAT)]),
        (RESTART, [ApplyUpdate(RESTART)]),
        (AFTER_RESTART, [ApplyUpdate(AFTER_RESTART)]),
    )
    assert machine.update_id == 5


def test_updates_before_the_first_snapshot_are_dropped_and_nothing_is_fetched() -> None:
    machine = OkxSyncMachine()
    drive(machine, (UPDATE, []), (HEARTBEAT, []))
    assert machine.state is SyncState.IDLE
    assert machine.update_id is None
    assert machine.buffered == 0


def test_a_broken_chain_is_a_gap_and_waits_for_a_new_snapshot() -> None:
    machine = OkxSyncMachine()
    lost_one = okx(17, 20)  # the update 15 -> 17 never came
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (UPDATE, [ApplyUpdate(UPDATE)]),
        (lost_one, [ResyncRequired("gap")]),
        (okx(20, 25), []),  # still on its way: no book to apply it to
    )
    assert machine.state is SyncState.IDLE
    fresh = okx(-1, 25, bids=[("8470", "1")])
    drive(machine, (fresh, [ApplyUpdate(fresh)]), (okx(25, 30), [ApplyUpdate(okx(25, 30))]))


def test_the_last_message_sent_again_is_dropped_without_a_resync() -> None:
    machine = OkxSyncMachine()
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (UPDATE, [ApplyUpdate(UPDATE)]),
        (UPDATE, []),
        (okx(15, 16), [ApplyUpdate(okx(15, 16))]),
    )


def test_an_older_message_sent_again_is_a_gap_since_ids_may_have_restarted() -> None:
    machine = OkxSyncMachine()
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (UPDATE, [ApplyUpdate(UPDATE)]),
        (okx(15, 16), [ApplyUpdate(okx(15, 16))]),
        (UPDATE, [ResyncRequired("gap")]),
    )


def test_a_restart_whose_first_update_was_lost_is_a_gap_not_a_replay() -> None:
    machine = OkxSyncMachine()
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (UPDATE, [ApplyUpdate(UPDATE)]),
        (AFTER_RESTART, [ResyncRequired("gap")]),  # 15 -> 3 was lost: 3 -> 5 is not older news
    )


def test_a_snapshot_mid_stream_replaces_the_book_whatever_its_ids() -> None:
    machine = OkxSyncMachine()
    again = okx(-1, 7, bids=[("1", "1")])
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (UPDATE, [ApplyUpdate(UPDATE)]),
        (again, [ApplyUpdate(again)]),
        (okx(7, 9), [ApplyUpdate(okx(7, 9))]),
    )


def test_rest_snapshots_are_never_asked_for_and_ignored_when_given() -> None:
    machine = OkxSyncMachine()
    drive(machine, (snap(10), []), (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]), (snap(99), []))
    assert machine.update_id == 10
    assert not any(isinstance(a, FetchSnapshot) for a in machine.receive_update(UPDATE))


def test_disconnect_and_invalidate_wait_for_the_next_snapshot() -> None:
    machine = OkxSyncMachine()
    drive(
        machine,
        (Disconnect(), []),
        (Invalidate("crossed"), []),
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (Disconnect(), [ResyncRequired("disconnect")]),
        (UPDATE, []),
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (Invalidate("crossed"), [ResyncRequired("crossed")]),
    )
    assert machine.state is SyncState.IDLE


def test_follows_tells_a_handover_where_the_successor_may_take_over() -> None:
    machine = OkxSyncMachine()
    assert not machine.follows(UPDATE)
    assert machine.follows(SNAPSHOT)
    drive(machine, (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]), (UPDATE, [ApplyUpdate(UPDATE)]))
    assert machine.follows(HEARTBEAT)
    assert machine.follows(UPDATE)  # a repeat: dropped, the next one decides
    assert not machine.follows(okx(16, 20))
    assert machine.last == UPDATE
