"""Coinbase sync rules, one by one: a book starts at its snapshot and applies every later event of
its product; the connection's message numbers must run on without a break."""

from __future__ import annotations

from ingest_nodes.core.engine import BookEngine, EngineResult
from ingest_nodes.core.sync import ApplyUpdate, CoinbaseSyncMachine, ResyncRequired, SyncState
from ingest_nodes.core.sync.coinbase import ConnectionSequence, Continuity
from tests.ingest_nodes.core.driver import Disconnect, Invalidate, coinbase, drive, snap

SNAPSHOT = coinbase(bids=[("21921.73", "0.0631")], asks=[("21921.74", "1.5")], snapshot=True, event_time=1)
UPDATE = coinbase(bids=[("21921.73", "0")], asks=[("21921.80", "2")], event_time=2)


def test_updates_before_the_snapshot_are_dropped() -> None:
    machine = CoinbaseSyncMachine()
    drive(machine, (UPDATE, []), (UPDATE, []))
    assert machine.state is SyncState.IDLE and machine.update_id is None


def test_the_snapshot_syncs_and_every_later_event_applies() -> None:
    machine = CoinbaseSyncMachine()
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (UPDATE, [ApplyUpdate(UPDATE)]),
        (UPDATE, [ApplyUpdate(UPDATE)]),
    )
    assert machine.update_id == 3  # messages applied: the snapshot and two updates


def test_a_later_snapshot_replaces_the_book() -> None:
    engine = BookEngine(CoinbaseSyncMachine())
    engine.on_update(SNAPSHOT)
    engine.on_update(UPDATE)
    again = coinbase(bids=[("1", "1")], snapshot=True, event_time=3)
    assert engine.on_update(again) == EngineResult(changed=True, need_snapshot=False, resync_reason=None)
    assert engine.book.bids() == [("1", "1")] and engine.book.asks() == []
    # A snapshot is the full book: no side of it is cut.
    assert [(w.trusted, w.bounded) for w in engine.book.window()] == [(1, False), (0, False)]
    assert engine.checksum is None and engine.checksum_matched is None  # the venue sends none


def test_disconnect_and_invalidate_wait_for_the_next_snapshot() -> None:
    machine = CoinbaseSyncMachine()
    drive(
        machine,
        (Invalidate("gap"), []),
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (Invalidate("gap"), [ResyncRequired("gap")]),
        (UPDATE, []),
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT)]),
        (Disconnect(), [ResyncRequired("disconnect")]),
        (snap(5), []),
    )


def test_the_first_number_of_a_socket_is_taken_as_it_comes() -> None:
    sequence = ConnectionSequence()
    assert sequence.receive(17) is Continuity.FIRST
    assert sequence.receive(18) is Continuity.NEXT
    assert sequence.last == 18 and sequence.breaks == 0


def test_a_skipped_number_breaks_the_connection_and_numbering_goes_on_from_it() -> None:
    sequence = ConnectionSequence()
    assert [sequence.receive(n) for n in (0, 1, 3, 4)] == [
        Continuity.FIRST, Continuity.NEXT, Continuity.BROKEN, Continuity.NEXT,
    ]  # fmt: skip
    assert sequence.breaks == 1


def test_a_repeated_or_lower_number_breaks_it_too() -> None:
    # A replay and a counter restarted on the same socket look alike: neither proves nothing was lost.
    sequence = ConnectionSequence()
    assert [sequence.receive(n) for n in (5, 6, 6, 0, 1)] == [
        Continuity.FIRST, Continuity.NEXT, Continuity.BROKEN, Continuity.BROKEN, Continuity.NEXT,
    ]  # fmt: skip
    assert sequence.breaks == 2


def test_a_new_socket_starts_a_new_numbering() -> None:
    sequence = ConnectionSequence()
    sequence.receive(40)
    sequence.restart()
    assert sequence.last is None
    assert sequence.receive(0) is Continuity.FIRST
