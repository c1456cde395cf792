"""The compiled level loops (ingest_nodes/core/_levels.c) against the pure-Python ones they stand in for.

Every input goes through both: the same book state, keys, journal and error after each frame, for
levels venues send and levels no venue should (exponents, signs, Unicode digits, long digit
strings, wrong shapes and types). The compiled loop takes only what it is sure of and hands the
rest to the Python loop, so any difference here is a defect in the C.
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

COMPILED_APPLY = native.apply_plain
COMPILED_READ = native.read_levels


def test_the_install_built_the_compiled_loops() -> None:
    """`make install` compiles _levels.c: a silent fallback to the slow loops would pass every
    other test here."""
    assert native.describe() == "compiled"
    assert COMPILED_APPLY is not None and COMPILED_READ is not None


def test_ladder_pure_python_runs_the_reference_loops() -> None:
    code = "from ingest_nodes.core import native; print(native.describe())"
    env = {**os.environ, "LADDER_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "pure Python"


@pytest.fixture
def pure(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[bool], None]]:
    """``use(compiled)``: switch the loops this process runs."""

    def use(compiled: bool) -> None:
        monkeypatch.setattr(native, "apply_plain", COMPILED_APPLY if compiled else None)
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
        (dict(s.levels), list(s.keys), None if s.journal is None else list(s.journal)) for s in sides
    )


def _apply(book: OrderBook, bids: Any, asks: Any) -> str | None:
    try:
        book.apply(bids, asks)
    except VenuePayloadError as exc:
        return str(exc)
    return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    snapshot=st.lists(st.tuples(_digits(1, 3), _digits(1, 2).filter(_nonzero)), max_size=8),
    frames=st.lists(st.tuples(_frame, _frame), max_size=8),
    cap=st.one_of(st.none(), st.integers(1, 6)),
)
def test_compiled_apply_leaves_every_side_as_the_reference_does(
    pure: Callable[[bool], None],
    snapshot: list[tuple[str, str]],
    frames: list[tuple[Any, Any]],
    cap: int | None,
) -> None:
    books = {True: OrderBook(), False: OrderBook()}
    for compiled, book in books.items():
        pure(compiled)
        book.load(snapshot, snapshot, bids_complete=True, asks_complete=False)
        if cap is not None:
            book.open_journal(cap)
    for bids, asks in frames:
        outcomes = {}
        for compiled, book in books.items():
            pure(compiled)
            outcomes[compiled] = (_apply(book, bids, asks), _state(book), book.take_journal() is None)
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
