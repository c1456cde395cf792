"""The book, its generator and its history, driven directly (they do no I/O)."""

from __future__ import annotations

import itertools
import random

import pytest

from fake_venue.config import VenueConfig
from fake_venue.market.book import Book, Side
from fake_venue.market.decimal_text import LevelStyle
from fake_venue.market.history import StateUnavailable
from fake_venue.market.markets import ContiguousIds, Market, Motion, SharedIds
from fake_venue.market.symbols import spot_catalogue

STYLE = LevelStyle(1, 2, 1, 3, trim=False, zero_qty="0")


def make_market(seed: int = 7, levels: int = 300, **config: object) -> Market:
    spec = spot_catalogue(1)[0]
    settings = VenueConfig(seed=seed, levels=levels, **config)  # type: ignore[arg-type]
    return Market(
        spec, spec.status, STYLE, ContiguousIds(), settings, random.Random(seed), Motion(settings), levels
    )


def test_side_keeps_best_and_worst_through_sets_and_deletes() -> None:
    bids = Side(is_bid=True)
    for tick, qty in ((100, 5), (103, 1), (90, 2), (5000, 7)):
        bids.set(tick, qty)
    assert (bids.best, bids.worst, bids.count) == (5000, 90, 4)
    assert bids.set(5000, 0) == 7
    assert bids.best == 103
    bids.set(90, 0)
    assert bids.worst == 100
    assert bids.levels() == [(103, 1), (100, 5)]
    assert bids.set(12345, 0) == 0  # deleting an absent level far outside the window is harmless


def test_asks_are_listed_best_first_and_limited() -> None:
    asks = Side(is_bid=False)
    for tick in (30, 10, 20, 40):
        asks.set(tick, tick)
    assert asks.levels(3) == [(10, 10), (20, 20), (30, 30)]
    assert asks.nth(1) == 20
    assert asks.nth(99) == 40


def test_copy_is_independent() -> None:
    book = Book()
    book.bids.set(10, 1)
    other = book.copy()
    other.bids.set(10, 0)
    assert book.bids.levels() == [(10, 1)]
    assert other.bids.levels() == []


def test_generated_book_never_crosses_and_keeps_its_depth() -> None:
    market = make_market(levels=300)
    for _ in range(3000):
        market.step()
        bids, asks = market.book.bids, market.book.asks
        assert bids.best is not None and asks.best is not None
        assert bids.best < asks.best
    assert 250 <= market.book.bids.count <= 300
    assert 250 <= market.book.asks.count <= 300


def test_same_seed_same_updates() -> None:
    first, second = make_market(seed=3), make_market(seed=3)
    for _ in range(200):
        a, b = first.step(), second.step()
        assert (a.first_id, a.last_id, a.bids, a.asks) == (b.first_id, b.last_id, b.bids, b.asks)


def test_updates_show_the_edge_cases_clients_must_handle() -> None:
    market = make_market()
    absent_deletes = same_price_both_sides = 0
    for _ in range(2000):
        before = market.book.copy()
        update = market.step()
        bid_prices = {tick for tick, _ in update.bids}
        same_price_both_sides += bool(bid_prices & {tick for tick, _ in update.asks})
        absent_deletes += sum(1 for tick, qty in update.bids if qty == 0 and before.bids.get(tick) == 0)
    assert absent_deletes > 0
    assert same_price_both_sides > 0


def test_spot_ids_are_contiguous_and_shared_ids_have_holes() -> None:
    market = make_market()
    previous = market.step()
    for _ in range(100):
        update = market.step()
        assert update.first_id == previous.last_id + 1
        assert update.prev_id == previous.last_id
        previous = update
    shared = SharedIds(random.Random(1))
    rng = random.Random(2)
    last = shared.initial(rng)
    ranges = [shared.next_range(last, rng) for _ in range(50)]
    assert all(later[0] > earlier[1] + 1 for earlier, later in itertools.pairwise(ranges))


def test_history_rebuilds_past_states_and_refuses_unknown_ones() -> None:
    market = make_market(history_max_events=50, history_min_events=10)
    states = {market.last_id: market.book.copy()}
    first_id = market.last_id
    for _ in range(40):
        market.step()
        states[market.last_id] = market.book.copy()
    for update_id, expected in states.items():
        rebuilt = market.history.state_at(market.book, market.last_id, update_id)
        assert rebuilt.bids.levels() == expected.bids.levels()
        assert rebuilt.asks.levels() == expected.asks.levels()
    with pytest.raises(StateUnavailable) as future:
        market.history.state_at(market.book, market.last_id, market.last_id + 1)
    assert future.value.status == 404
    with pytest.raises(StateUnavailable) as before:
        market.history.state_at(market.book, market.last_id, first_id - 1)
    assert before.value.status == 404
    for _ in range(60):
        market.step()
    with pytest.raises(StateUnavailable) as expired:
        market.history.state_at(market.book, market.last_id, first_id)
    assert expired.value.status == 410


def test_cross_fault_crosses_once_then_clears() -> None:
    market = make_market()
    market.cross_pending, market.cross_updates = False, 3
    market.step()
    bids, asks = market.book.bids, market.book.asks
    assert bids.best is not None and asks.best is not None and bids.best > asks.best
    for _ in range(3):
        market.step()
    assert bids.best is not None and asks.best is not None and bids.best < asks.best
