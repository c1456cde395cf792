"""Kraken sync rules, one by one: the snapshot starts a book, every message is trimmed to the
subscribed depth and checked against the venue's checksum, and a mismatch throws the book away."""

from __future__ import annotations

import pytest

from ingest_nodes.core.engine import BookEngine, EngineResult
from ingest_nodes.core.sync import (
    ApplyUpdate,
    KrakenSyncMachine,
    ResyncRequired,
    SyncState,
    Truncate,
    VerifyChecksum,
)
from ingest_nodes.core.sync.kraken import kraken_checksum, subscription_depth
from tests.ingest_nodes.core.driver import Disconnect, Invalidate, drive, kraken, snap

# The example of the venue's "Book checksum (WebSocket v2)" guide: a BTC/USD snapshot of depth 10.
DOC_BIDS = [("45283.5", "0.10000000"), ("45283.4", "1.54582015"), ("45282.1", "0.10000000"),
            ("45281.0", "0.10000000"), ("45280.3", "1.54592586"), ("45279.0", "0.07990000"),
            ("45277.6", "0.03310103"), ("45277.5", "0.30000000"), ("45277.3", "1.54602737"),
            ("45276.6", "0.15445238")]  # fmt: skip
DOC_ASKS = [("45285.2", "0.00100000"), ("45286.4", "1.54571953"), ("45286.6", "1.54571109"),
            ("45289.6", "1.54560911"), ("45290.2", "0.15890660"), ("45291.8", "1.54553491"),
            ("45294.7", "0.04454749"), ("45296.1", "0.35380000"), ("45297.5", "0.09945542"),
            ("45299.5", "0.18772827")]  # fmt: skip
DOC_CHECKSUM = 3310070434

SNAPSHOT = kraken(bids=DOC_BIDS, asks=DOC_ASKS, snapshot=True, checksum=DOC_CHECKSUM, limit=10, event_time=1)
CHANGED = EngineResult(changed=True, need_snapshot=False, resync_reason=None)


def checks(update_checksum: int, depth: int = 10) -> list[Truncate | VerifyChecksum]:
    return [Truncate(depth), VerifyChecksum(update_checksum, 10, kraken_checksum)]


def test_the_checksum_is_the_guides_example() -> None:
    assert kraken_checksum(DOC_BIDS, DOC_ASKS) == DOC_CHECKSUM


def test_the_checksum_strips_points_and_leading_zeros_of_the_venues_strings() -> None:
    # Rule 4 on the guide's first ask alone: "45285.2" + "0.00100000" -> "452852" + "100000".
    import zlib

    assert kraken_checksum([], [("45285.2", "0.00100000")]) == zlib.crc32(b"452852100000")
    # Asks come first, low to high, then bids high to low; only ten of each count.
    asks = [(f"{100 + i}.5", "1.0") for i in range(12)]
    bids = [(f"{99 - i}.5", "2.0") for i in range(12)]
    text = "".join(f"{100 + i}510" for i in range(10)) + "".join(f"{99 - i}520" for i in range(10))
    assert kraken_checksum(bids, asks) == zlib.crc32(text.encode())


def test_updates_before_the_first_snapshot_are_dropped() -> None:
    machine = KrakenSyncMachine()
    update = kraken(asks=[("45285.2", "0")], checksum=1)
    drive(machine, (update, []), (update, []))
    assert machine.state is SyncState.IDLE and machine.update_id is None and machine.depth is None


def test_a_snapshot_syncs_and_every_message_is_trimmed_and_checked() -> None:
    machine = KrakenSyncMachine()
    update = kraken(bids=[("45283.6", "1.0")], checksum=77, event_time=2)
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT), *checks(DOC_CHECKSUM)]),
        (update, [ApplyUpdate(update), *checks(77)]),
    )
    assert machine.synced and machine.update_id == 2 and machine.depth == 10


def test_the_depth_is_the_one_of_the_latest_snapshot() -> None:
    machine = KrakenSyncMachine()
    deeper = kraken(bids=DOC_BIDS, snapshot=True, checksum=5, limit=25)
    update = kraken(checksum=6)
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT), *checks(DOC_CHECKSUM)]),
        (deeper, [ApplyUpdate(deeper), *checks(5, depth=25)]),
        (update, [ApplyUpdate(update), *checks(6, depth=25)]),
    )


def test_a_message_without_a_checksum_is_trimmed_but_not_checked() -> None:
    machine = KrakenSyncMachine()
    bare = kraken(asks=[("45285.2", "0")])
    drive(
        machine,
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT), *checks(DOC_CHECKSUM)]),
        (bare, [ApplyUpdate(bare), Truncate(10)]),
    )


def test_a_snapshot_must_say_its_depth() -> None:
    with pytest.raises(ValueError, match="depth"):
        KrakenSyncMachine().receive_update(kraken(bids=DOC_BIDS, snapshot=True, checksum=1))


def test_disconnect_and_invalidate_wait_for_the_next_snapshot() -> None:
    machine = KrakenSyncMachine()
    drive(
        machine,
        (Disconnect(), []),
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT), *checks(DOC_CHECKSUM)]),
        (Disconnect(), [ResyncRequired("disconnect")]),
        (kraken(checksum=1), []),
        (SNAPSHOT, [ApplyUpdate(SNAPSHOT), *checks(DOC_CHECKSUM)]),
        (Invalidate("checksum"), [ResyncRequired("checksum")]),
        (Invalidate("checksum"), []),
    )


def test_rest_snapshots_are_never_used() -> None:
    machine = KrakenSyncMachine()
    drive(machine, (snap(5), []), (SNAPSHOT, [ApplyUpdate(SNAPSHOT), *checks(DOC_CHECKSUM)]), (snap(6), []))


def test_a_handover_joins_the_book_only_at_the_successors_snapshot() -> None:
    # Nothing is numbered: another connection's update continues nothing this one delivered.
    machine = KrakenSyncMachine()
    drive(machine, (SNAPSHOT, [ApplyUpdate(SNAPSHOT), *checks(DOC_CHECKSUM)]))
    assert not machine.follows(kraken(bids=[("45283.6", "1.0")], checksum=77))
    assert machine.follows(SNAPSHOT)


def test_subscription_depth_is_the_smallest_offered_that_covers() -> None:
    assert [subscription_depth(d) for d in (1, 10, 11, 25, 26, 100, 101, 500, 501, 1000, 5000)] == [
        10, 10, 25, 25, 100, 100, 500, 500, 1000, 1000, 1000,
    ]  # fmt: skip


# -- executed by the engine on a real book ---------------------------------------------------------


def test_the_engine_loads_the_guides_snapshot_and_records_the_checksum() -> None:
    engine = BookEngine(KrakenSyncMachine())
    assert engine.on_update(SNAPSHOT) == CHANGED
    assert engine.book.bids() == DOC_BIDS and engine.book.asks() == DOC_ASKS
    assert (engine.checksum, engine.checksum_matched) == (DOC_CHECKSUM, True)
    # Both sides hold the subscribed depth: the venue may hold more past them.
    assert [(w.trusted, w.bounded) for w in engine.book.window()] == [(10, True), (10, True)]


def test_a_mismatch_throws_the_book_away_at_once() -> None:
    engine = BookEngine(KrakenSyncMachine())
    engine.on_update(SNAPSHOT)
    wrong = kraken(asks=[("45285.2", "0.002")], checksum=DOC_CHECKSUM, event_time=3)  # the old sum
    assert engine.on_update(wrong) == EngineResult(False, need_snapshot=False, resync_reason="checksum")
    assert not engine.synced and engine.book.bids() == [] and engine.book.asks() == []
    assert (engine.checksum, engine.checksum_matched) == (DOC_CHECKSUM, False)
    assert engine.on_update(kraken(checksum=1)) == EngineResult(False, False, None)  # waits for a snapshot


def test_a_snapshot_that_disagrees_with_its_own_checksum_is_never_served() -> None:
    engine = BookEngine(KrakenSyncMachine())
    bad = kraken(bids=DOC_BIDS, asks=DOC_ASKS, snapshot=True, checksum=DOC_CHECKSUM + 1, limit=10)
    assert engine.on_update(bad).resync_reason == "checksum"
    assert not engine.synced and engine.book.bids() == []


def test_levels_pushed_past_the_depth_are_dropped_and_refilled_by_the_venue() -> None:
    engine = BookEngine(KrakenSyncMachine())
    engine.on_update(SNAPSHOT)
    bids = [*DOC_BIDS]
    # A new best bid pushes the tenth out of scope: the venue sends only the insert.
    bids.insert(0, ("45284.0", "0.5"))
    bids.pop()
    insert = kraken(bids=[("45284.0", "0.5")], checksum=kraken_checksum(bids, DOC_ASKS))
    assert engine.on_update(insert) == CHANGED and engine.checksum_matched
    assert engine.book.bids() == bids
    # The best bid goes: the venue removes it and sends the next one in line, back in scope.
    bids.pop(0)
    bids.append(DOC_BIDS[-1])
    refill = kraken(bids=[("45284.0", "0"), DOC_BIDS[-1]], checksum=kraken_checksum(bids, DOC_ASKS))
    assert engine.on_update(refill) == CHANGED and engine.checksum_matched
    assert engine.book.bids() == DOC_BIDS


def test_a_side_shorter_than_the_depth_is_the_venues_whole_side() -> None:
    engine = BookEngine(KrakenSyncMachine())
    thin = kraken(bids=DOC_BIDS[:3], asks=DOC_ASKS, snapshot=True, limit=10,
                  checksum=kraken_checksum(DOC_BIDS[:3], DOC_ASKS))  # fmt: skip
    assert engine.on_update(thin) == CHANGED
    bids, asks = engine.book.window()
    assert (bids.trusted, bids.bounded) == (3, False) and (asks.trusted, asks.bounded) == (10, True)
