"""The trusted-window rule: cheap syncs, refreshes before a side falls short, climbing for runners."""

from __future__ import annotations

from ingest_nodes.core.book import SideWindow
from ingest_nodes.core.trusted_window import ESCALATE_WITHIN_S, MIN_REFRESH_GAP_S, RELAX_AFTER_S, WindowKeeper
from ingest_nodes.venues.binance.limits import FUTURES_DEPTH_WEIGHTS, SPOT_DEPTH_WEIGHTS

WHOLE = SideWindow(10_000, False)


def bounded(trusted: int) -> SideWindow:
    return SideWindow(trusted, True)


def test_a_sync_from_scratch_takes_the_cheapest_tier_that_covers_the_depth() -> None:
    assert WindowKeeper(SPOT_DEPTH_WEIGHTS, 100).sync_limit == 100
    assert WindowKeeper(SPOT_DEPTH_WEIGHTS, 1000).sync_limit == 1000
    assert WindowKeeper(FUTURES_DEPTH_WEIGHTS, 30).sync_limit == 50
    assert WindowKeeper(FUTURES_DEPTH_WEIGHTS, 500).sync_limit == 500


def test_without_margin_a_refresh_is_due_as_soon_as_a_side_falls_short() -> None:
    keeper = WindowKeeper(SPOT_DEPTH_WEIGHTS, 100)  # served from a 100-level snapshot
    assert not keeper.refresh_due(bounded(100), bounded(100), 0.0)
    assert keeper.refresh_due(bounded(100), bounded(99), 0.0)


def test_with_margin_a_refresh_is_due_at_half_the_margin() -> None:
    keeper = WindowKeeper(SPOT_DEPTH_WEIGHTS, 100)
    keeper.served_limit = 500  # low water: 100 + 400 / 2
    assert not keeper.refresh_due(bounded(300), bounded(450), 0.0)
    assert keeper.refresh_due(bounded(299), bounded(450), 0.0)


def test_a_complete_side_is_never_short_even_when_shallower_than_the_depth() -> None:
    keeper = WindowKeeper(SPOT_DEPTH_WEIGHTS, 100)
    assert not keeper.refresh_due(SideWindow(12, False), WHOLE, 0.0)


def test_a_refresh_covers_twice_the_depth_and_climbs_when_the_book_keeps_running() -> None:
    keeper = WindowKeeper(SPOT_DEPTH_WEIGHTS, 100)
    assert keeper.refresh_limit(0.0) == 500
    assert keeper.refresh_limit(ESCALATE_WITHIN_S - 1) == 1000
    assert keeper.refresh_limit(2 * ESCALATE_WITHIN_S - 2) == 5000
    assert keeper.refresh_limit(3 * ESCALATE_WITHIN_S - 3) == 5000  # the venue's largest
    later = 3 * ESCALATE_WITHIN_S + 1000
    assert keeper.refresh_limit(later) == 5000  # a while later: stays where it climbed
    assert keeper.refresh_limit(later + RELAX_AFTER_S + 1) == 500  # an hour of calm: from the bottom


def test_refreshes_of_one_replica_keep_a_minimum_gap() -> None:
    keeper = WindowKeeper(FUTURES_DEPTH_WEIGHTS, 1000)  # no tier is deeper: the book cannot keep a margin
    assert keeper.refresh_limit(100.0) == 1000
    assert not keeper.refresh_due(bounded(10), bounded(10), 100.0 + MIN_REFRESH_GAP_S - 1)
    assert keeper.refresh_due(bounded(10), bounded(10), 100.0 + MIN_REFRESH_GAP_S)
