"""BookEngine: machine actions executed on a real OrderBook, integrity checks, recorded replays."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ingest_nodes.core.engine import BookEngine, EngineResult
from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.core.sync import AlpacaSyncMachine, FuturesSyncMachine, SpotSyncMachine
from ingest_nodes.venues.alpaca.parse import parse_alpaca_frame
from ingest_nodes.venues.binance.parse import (
    parse_futures_frame,
    parse_futures_snapshot,
    parse_spot_frame,
    parse_spot_snapshot,
)
from tests.ingest_nodes.core.driver import alpaca, snap, upd

FIXTURES = Path(__file__).parents[1] / "fixtures"
NOTHING = EngineResult(changed=False, need_snapshot=False, resync_reason=None)
CHANGED = EngineResult(changed=True, need_snapshot=False, resync_reason=None)
NEED_SNAPSHOT = EngineResult(changed=False, need_snapshot=True, resync_reason=None)


def spot_engine_synced_at_10() -> BookEngine:
    engine = BookEngine(SpotSyncMachine())
    assert engine.on_update(upd(10, 10, bids=[("99", "1")], event_time=5, ingest_time=6)) == NEED_SNAPSHOT
    snapshot = snap(9, bids=[("100", "2")], asks=[("101", "3")], ingest_time=4)
    assert engine.on_snapshot(snapshot) == CHANGED
    return engine


def test_sync_loads_the_snapshot_then_applies_the_buffer_and_tracks_times() -> None:
    engine = spot_engine_synced_at_10()
    assert engine.synced and engine.update_id == 10
    assert engine.book.bids() == [("100", "2"), ("99", "1")]
    assert engine.book.asks() == [("101", "3")]
    assert (engine.event_time, engine.ingest_time) == (5, 6)  # the last applied event, not the snapshot
    assert engine.on_update(upd(11, 12, asks=[("101", "0")], event_time=7, ingest_time=8)) == CHANGED
    assert engine.book.asks() == []
    assert (engine.update_id, engine.event_time, engine.ingest_time) == (12, 7, 8)
    assert engine.on_update(upd(11, 12)) == NOTHING  # duplicate


def test_empty_and_one_sided_snapshots_are_valid_books() -> None:
    engine = BookEngine(SpotSyncMachine())
    engine.on_update(upd(10, 10))
    assert engine.on_snapshot(snap(9, limit=100)) == CHANGED  # a new listing: nothing on either side
    assert engine.synced and engine.book.best_bid() is None and engine.book.best_ask() is None
    assert engine.on_update(upd(11, 11, asks=[("5", "1")])) == CHANGED  # one-sided
    assert engine.book.top_asks(10) == [b'["5","1"]'] and engine.book.top_bids(10) == []


def test_a_held_snapshot_does_not_touch_the_book_until_an_event_reaches_it() -> None:
    engine = BookEngine(SpotSyncMachine())
    engine.on_update(upd(1, 2, bids=[("1", "1")]))
    assert engine.on_snapshot(snap(5, bids=[("5", "5")], event_time=None, ingest_time=3)) == NOTHING
    assert engine.book.bids() == [] and not engine.synced
    assert engine.event_time is None and engine.ingest_time is None
    assert engine.on_update(upd(6, 6, asks=[("9", "1")], event_time=11, ingest_time=12)) == CHANGED
    assert engine.book.bids() == [("5", "5")] and engine.book.asks() == [("9", "1")]


def test_times_come_from_the_last_event_applied_on_top_of_the_snapshot() -> None:
    engine = BookEngine(FuturesSyncMachine())
    engine.on_update(upd(10, 20, pu=5, event_time=1250, ingest_time=1251))
    engine.on_snapshot(snap(20, event_time=1234, ingest_time=1300))
    assert engine.synced
    assert (engine.event_time, engine.ingest_time) == (1250, 1251)


def test_gap_clears_the_book_and_asks_for_a_snapshot() -> None:
    engine = spot_engine_synced_at_10()
    result = engine.on_update(upd(15, 16))
    assert result == EngineResult(changed=False, need_snapshot=True, resync_reason="gap")
    assert engine.book.bids() == [] and not engine.synced and engine.update_id is None
    assert engine.event_time is None and engine.ingest_time is None


def test_crossed_book_after_an_update_is_invalidated_and_resynced() -> None:
    engine = spot_engine_synced_at_10()
    result = engine.on_update(upd(11, 11, bids=[("101.5", "1")]))
    assert result == EngineResult(changed=False, need_snapshot=False, resync_reason="crossed")
    assert not engine.synced and engine.book.bids() == [] and engine.book.asks() == []
    assert engine.on_update(upd(12, 12)) == NEED_SNAPSHOT  # the next event starts a new sync


def test_locked_snapshot_is_caught_as_crossed() -> None:
    engine = BookEngine(SpotSyncMachine())
    engine.on_update(upd(10, 10))
    result = engine.on_snapshot(snap(9, bids=[("100", "1")], asks=[("100", "1")]))
    assert result.resync_reason == "crossed" and not result.changed
    assert not engine.synced


def test_unreadable_level_resyncs_instead_of_raising() -> None:
    engine = spot_engine_synced_at_10()
    result = engine.on_update(upd(11, 11, bids=[("98", "1"), ("abc", "1")]))
    assert result == EngineResult(changed=False, need_snapshot=False, resync_reason="bad_level")
    assert not engine.synced and engine.book.bids() == []


def test_disconnect_and_invalidate_report_their_reason() -> None:
    engine = spot_engine_synced_at_10()
    assert engine.on_disconnect() == EngineResult(
        changed=False, need_snapshot=False, resync_reason="disconnect"
    )
    assert engine.on_disconnect() == NOTHING
    engine = spot_engine_synced_at_10()
    assert engine.invalidate("stale").resync_reason == "stale"
    assert engine.book.asks() == []


def test_buffer_overflow_is_reported() -> None:
    engine = BookEngine(SpotSyncMachine(max_buffer=1))
    engine.on_update(upd(1, 1))
    assert engine.on_update(upd(2, 2)).resync_reason == "buffer_overflow"


def test_snapshot_side_cut_at_its_limit_limits_what_is_served() -> None:
    engine = BookEngine(SpotSyncMachine())
    engine.on_update(upd(10, 10, bids=[("97", "1")]))
    engine.on_snapshot(snap(9, bids=[("100", "1"), ("99", "1")], asks=[("101", "1")], limit=2))
    assert engine.book.bids() == [("100", "1"), ("99", "1"), ("97", "1")]
    assert engine.book.top_bids(10) == [b'["100","1"]', b'["99","1"]']
    assert engine.book.top_asks(10) == [b'["101","1"]']  # 1 < limit: the whole side


def test_alpaca_reset_replaces_the_whole_book_and_trusts_every_level() -> None:
    engine = BookEngine(AlpacaSyncMachine())
    assert engine.on_update(alpaca(bids=[("1", "1")], event_time=1)) == NOTHING  # untrusted before a reset
    assert (
        engine.on_update(alpaca(bids=[("10", "1")], asks=[("11", "1")], reset=True, event_time=2)) == CHANGED
    )
    assert engine.synced and engine.update_id == 1 and engine.event_time == 2  # messages applied
    assert engine.on_update(alpaca(bids=[("9", "2")], event_time=3)) == CHANGED
    assert engine.book.top_bids(5) == [b'["10","1"]', b'["9","2"]']
    assert engine.on_update(alpaca(asks=[("12", "1")], reset=True, event_time=4)) == CHANGED
    assert engine.book.bids() == [] and engine.book.asks() == [("12", "1")]


def test_replay_of_a_recorded_spot_session() -> None:
    engine = BookEngine(SpotSyncMachine())
    frames = (FIXTURES / "binance_spot_nknusdt.jsonl").read_bytes().splitlines()
    snapshot = parse_spot_snapshot(
        (FIXTURES / "binance_spot_nknusdt_snapshot.json").read_bytes(), "NKNUSDT", limit=4, ingest_time=0
    )
    results = []
    for index, raw in enumerate(frames):
        frame = parse_spot_frame(raw, ingest_time=index)
        if isinstance(frame, DepthUpdate):
            results.append(engine.on_update(frame))
        if index == 2:  # the snapshot answer arrives once two events are buffered
            results.append(engine.on_snapshot(snapshot))
    assert results[0] == NEED_SNAPSHOT
    assert all(result.resync_reason is None for result in results)
    assert engine.update_id == 499869759
    assert engine.book.bids() == [
        ("0.53110000", "1204.00000000"),
        ("0.53100000", "77.00000000"),
        ("0.53080000", "2000.00000000"),
        ("0.53000000", "500.00000000"),
    ]
    assert engine.book.top_asks(10) == [  # 0.533 lies past the full ask side of the snapshot
        b'["0.53250000","16.00000000"]',
        b'["0.53260000","45.00000000"]',
        b'["0.53270000","900.00000000"]',
        b'["0.53280000","3.00000000"]',
    ]
    assert engine.book.asks()[-1] == ("0.53300000", "12.50000000")
    assert engine.event_time == 1620000000400


def test_replay_of_a_recorded_futures_session() -> None:
    engine = BookEngine(FuturesSyncMachine())
    frames = [
        parse_futures_frame(raw, 0)
        for raw in (FIXTURES / "binance_futures_sushiusdt.jsonl").read_bytes().splitlines()
    ]
    updates = [frame for frame in frames if isinstance(frame, DepthUpdate)]
    for update in updates[:4]:
        engine.on_update(update)
    body = (FIXTURES / "binance_futures_sushiusdt_snapshot.json").read_bytes()
    assert engine.on_snapshot(parse_futures_snapshot(body, "SUSHIUSDT", limit=1000, ingest_time=0)) == CHANGED
    assert engine.update_id == 600859607423
    assert engine.on_update(updates[4]) == CHANGED
    assert engine.book.bids() == [("14.4260", "44"), ("14.4240", "300"), ("14.4200", "1000")]
    assert engine.book.asks() == [("14.4310", "9"), ("14.4320", "100"), ("14.4400", "52")]
    assert (engine.update_id, engine.event_time) == (600859607700, 1620000100500)


def test_replay_of_a_recorded_alpaca_session() -> None:
    engine = BookEngine(AlpacaSyncMachine())
    for raw in (FIXTURES / "alpaca_btcusd.jsonl").read_bytes().splitlines():
        for message in parse_alpaca_frame(raw, 0):
            if isinstance(message, DepthUpdate) and message.symbol == "BTC/USD":
                engine.on_update(message)
    assert engine.synced
    assert engine.book.bids() == [("71857", "0.1"), ("71855", "1.2")]  # canonical decimal strings
    assert engine.book.asks() == [("71939.7", "0.0015")]
    assert engine.event_time == int(datetime(2024, 3, 12, 10, 38, 51, 250000, tzinfo=UTC).timestamp() * 1000)
