"""The compiled hot path (ingest_nodes/core/_levels.c) against the pure-Python twins it stands in for.

Every input goes through both: the same keys, levels, watermarks, journal entries, answers and
errors after each operation, for levels venues send and levels no venue should (exponents, signs,
Unicode digits, long digit strings, wrong shapes and types). The compiled store reads only what it
is sure of and hands the rest to the reference's ``slow_level``, so any difference here is a
defect in the C.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest_nodes.core import native
from ingest_nodes.core.book import JOURNAL_LIMIT, OrderBook
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.venues.wire import levels as wire_levels

COMPILED_STORE = native.SortedLevels
COMPILED_READ = native.read_levels


def test_the_install_built_the_compiled_loops() -> None:
    """`make install` compiles _levels.c: a silent fallback to the slow loops would pass every
    other test here."""
    assert native.describe() == "compiled"
    assert COMPILED_STORE is not None and COMPILED_READ is not None


def test_ladder_pure_python_runs_the_reference_loops() -> None:
    code = "from ingest_nodes.core import native; print(native.describe())"
    env = {**os.environ, "LADDER_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "pure Python"


@pytest.fixture
def pure(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[bool], None]]:
    """``use(compiled)``: switch the loops this process runs."""

    def use(compiled: bool) -> None:
        monkeypatch.setattr(native, "SortedLevels", COMPILED_STORE if compiled else None)
        monkeypatch.setattr(native, "read_levels", COMPILED_READ if compiled else None)

    yield use


def _digits(min_size: int, max_size: int) -> st.SearchStrategy[str]:
    return st.text("0123456789", min_size=min_size, max_size=max_size)


_plain = st.one_of(
    st.builds(lambda w, p: w + "." + p, _digits(1, 6), _digits(0, 9)),
    _digits(1, 8),
    st.builds(lambda w, p: w + "." + p, _digits(0, 3), _digits(20, 27)),  # places about SCALE
    _digits(17, 24),  # digit counts about what fits in 64 bits
)
_odd = st.sampled_from(
    [
        "",
        ".",
        "..",
        "1.2.3",
        "1e-3",
        "1E+2",
        "-1",
        "+1",
        " 1",
        "1 ",
        "-0",
        "0E-8",
        "NaN",
        "Infinity",
        "١٢",
        "²",
        "1_0",
    ]
)
_zero = st.sampled_from(["0", "0.0", "0.00000000", "00", ".0", "0."])
_number = st.one_of(_plain, _plain, _plain, _odd, _zero)
_few_prices = st.sampled_from(
    ["10", "10.0", "10.00000", "9.5", "9.50", "11", "0011", "1.00000000000000000000001"]
)
_price = st.one_of(_number, _few_prices, _few_prices)
_quantity = st.one_of(_number, _zero)
_odd_level: st.SearchStrategy[Any] = st.one_of(
    st.tuples(_price, _quantity, _quantity),
    st.tuples(_price),
    st.tuples(st.integers(), _quantity),
    st.tuples(_price, st.none()),
    st.just("12"),
    st.builds(lambda p, q: [p.encode(), q], _price, _quantity),
)
_level: st.SearchStrategy[Any] = st.one_of(
    st.tuples(_price, _quantity),
    st.tuples(_price, _quantity),
    st.tuples(_price, _quantity),
    st.builds(lambda p, q: [p, q], _price, _quantity),
    _odd_level,
)
_frame = st.lists(_level, max_size=12).flatmap(lambda ls: st.sampled_from([tuple(ls), ls]))


def _nonzero(quantity: str) -> bool:
    return quantity.strip("0") != ""


def _state(book: OrderBook) -> tuple[Any, ...]:
    sides = (book._bids, book._asks)  # the state under comparison is the side's own
    return tuple(
        (
            s.store.sort_keys(),
            s.store.first(len(s.store)),
            s.watermark,
            None if s.journal is None else list(s.journal),
        )
        for s in sides
    )


_operation: st.SearchStrategy[Any] = st.one_of(
    st.tuples(st.just("apply"), _frame, _frame),
    st.tuples(st.just("apply"), _frame, _frame),
    st.tuples(st.just("apply"), _frame, _frame),
    st.tuples(st.just("load"), _frame, _frame, st.booleans(), st.booleans()),
    st.tuples(st.just("truncate"), st.integers(0, 6)),
    st.tuples(st.just("journal"), st.integers(1, 6)),
)


def _run(book: OrderBook, operation: tuple[Any, ...]) -> str | None:
    """One operation on ``book``; the venue error it raised, if any."""
    try:
        match operation:
            case ("apply", bids, asks):
                book.apply(bids, asks)
            case ("load", bids, asks, bids_complete, asks_complete):
                book.load(bids, asks, bids_complete=bids_complete, asks_complete=asks_complete)
            case ("truncate", depth):
                book.truncate(depth)
            case ("journal", cap):
                book.open_journal(cap)
    except VenuePayloadError as exc:
        return str(exc)
    return None


def _looks(book: OrderBook) -> tuple[Any, ...]:
    """Everything a reader of the book can ask, and the journal taken."""
    return (
        book.window(),
        book.trusted_depth(),
        book.best_bid(),
        book.best_ask(),
        book.is_crossed(),
        book.top_bids(3),
        book.top_asks(100),
        book.bids_between(1, 4),
        book.best_levels(2),
        book.take_journal(),
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    snapshot=st.lists(st.tuples(_digits(1, 3), _digits(1, 2).filter(_nonzero)), max_size=8),
    operations=st.lists(_operation, max_size=10),
    cap=st.one_of(st.none(), st.integers(1, 6)),
)
def test_the_compiled_store_leaves_every_side_as_the_reference_does(
    pure: Callable[[bool], None],
    snapshot: list[tuple[str, str]],
    operations: list[tuple[Any, ...]],
    cap: int | None,
) -> None:
    books = {}
    for compiled in (True, False):
        pure(compiled)  # a side takes its store when it is made
        books[compiled] = book = OrderBook()
        book.load(snapshot, snapshot, bids_complete=True, asks_complete=False)
        if cap is not None:
            book.open_journal(cap)
    assert type(books[True]._bids.store) is not type(books[False]._bids.store)
    for operation in operations:
        outcomes = {
            compiled: (_run(book, operation), _state(book), _looks(book)) for compiled, book in books.items()
        }
        assert outcomes[True] == outcomes[False]


@pytest.mark.parametrize("compiled", [True, False])
def test_a_journal_that_grows_past_its_limit_closes_under_either_loop(
    pure: Callable[[bool], None], compiled: bool
) -> None:
    pure(compiled)
    book = OrderBook()
    book.load([], [], bids_complete=True, asks_complete=True)
    book.open_journal(JOURNAL_LIMIT * 2)
    book.apply(tuple((str(price), "1") for price in range(1, JOURNAL_LIMIT + 2)), ())
    assert book.take_journal() is None
    assert len(book.bids()) == JOURNAL_LIMIT + 1


def test_levels_bad_after_good_ones_apply_the_good_ones_then_refuse(pure: Callable[[bool], None]) -> None:
    """The compiled loop stops at the level it cannot read; the reference refuses it, after the
    levels before it are in, as it always has."""
    pure(True)
    book = OrderBook()
    book.load([], [], bids_complete=True, asks_complete=True)
    with pytest.raises(VenuePayloadError, match=r"bad level \('x', '1'\)"):
        book.apply((("10", "1"), ("1e1", "2"), ("x", "1"), ("12", "1")), ())
    assert book.bids() == [("1e1", "2")]  # the 10 level, read by the reference loop, with its new strings


_row: st.SearchStrategy[Any] = st.one_of(
    st.lists(_price, min_size=2, max_size=4),
    st.lists(_price, max_size=1),
    st.tuples(_price, _quantity),
    st.lists(st.one_of(_price, st.integers(), st.none()), min_size=2, max_size=3),
    st.dictionaries(st.just("p"), _price),
)
_rows: st.SearchStrategy[Any] = st.one_of(
    st.lists(st.lists(_price, min_size=2, max_size=3), max_size=6),
    st.lists(_row, max_size=6),
    st.none(),
    st.just("[]"),
    st.tuples(st.lists(_price, min_size=2, max_size=2)),
)


def _read(rows: Any) -> Any:
    try:
        return wire_levels(rows, "b")
    except VenuePayloadError as exc:
        return str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_rows)
def test_compiled_level_reading_answers_as_the_reference_does(
    pure: Callable[[bool], None], rows: Any
) -> None:
    pure(True)
    compiled = _read(rows)
    pure(False)
    assert compiled == _read(rows)
    if not isinstance(compiled, str):
        assert type(compiled) is tuple and all(type(level) is tuple for level in compiled)
