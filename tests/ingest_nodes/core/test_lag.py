"""The lag watch: a baseline that takes the clocks' offset out, lagging books, and shedding."""

from __future__ import annotations

from ingest_nodes.core.lag import LagWatch


def test_the_baseline_is_the_best_second_so_a_clock_offset_is_no_lag() -> None:
    watch = LagWatch(stale_ms=5000, shed_ms=1000)
    watch.second([800, 820, 900])  # our clock runs 800 ms ahead of the venue's
    assert (watch.baseline_ms, watch.backlog_ms, watch.shedding) == (800, 100, False)
    assert not watch.lagging(5700, was=False)  # 4.9 s past the best: not yet
    assert watch.lagging(5900, was=False)
    watch.second([-300, -250])  # the clocks moved: the baseline follows them down at once
    assert watch.baseline_ms == -300


def test_a_node_sheds_while_its_worst_book_runs_behind_and_stops_halfway_back() -> None:
    watch = LagWatch(stale_ms=5000, shed_ms=1000)
    watch.second([10, 20])
    watch.second([10, 1200])  # one book's events come 1.2 s late: a backlog
    assert (watch.backlog_ms, watch.shedding) == (1190, True)
    watch.second([10, 700])  # better, but not yet halfway back
    assert watch.shedding
    watch.second([10, 400])
    assert not watch.shedding
    watch.second([])  # nothing moved in a second: nothing runs behind
    assert (watch.backlog_ms, watch.shedding, watch.baseline_ms) == (0, False, 10)


def test_a_lagging_book_stays_lagging_until_it_comes_within_half_the_limit() -> None:
    watch = LagWatch(stale_ms=4000, shed_ms=1000)
    watch.second([0])
    assert watch.lagging(4500, was=False)
    assert watch.lagging(2500, was=True)  # caught up some, not enough
    assert not watch.lagging(1500, was=True)
    assert not watch.lagging(2500, was=False)  # a book that was not lagging is not by 2.5 s


def test_the_baseline_forgets_seconds_older_than_its_window() -> None:
    watch = LagWatch(stale_ms=5000, shed_ms=1000, window_s=3)
    for gap in (100, 500, 500, 500):
        watch.second([gap])
    assert watch.baseline_ms == 500  # the 100 ms second is out of the window
