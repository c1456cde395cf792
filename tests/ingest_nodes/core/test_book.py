"""The order book: exact ordering, numeric zero, pre-encoded levels and the trusted-depth watermark."""

from __future__ import annotations

import random
from decimal import Decimal

import orjson
import pytest

from book_store.codec import BookStatus, Snapshot, SnapshotMeta, encode_snapshot
from book_store.delta import apply_delta, encode_delta, read_delta
from ingest_nodes.core import native
from ingest_nodes.core.book import INSERT, JOURNAL_LIMIT, OrderBook, SideWindow
from ingest_nodes.core.errors import VenuePayloadError


@pytest.fixture(autouse=True, params=["compiled", "pure Python"])
def level_loop(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test here runs on the compiled book store and on the pure-Python one."""
    if request.param == "pure Python":
        monkeypatch.setattr(native, "SortedLevels", None)


def loaded(bids: list[tuple[str, str]], asks: list[tuple[str, str]], *, complete: bool = True) -> OrderBook:
    book = OrderBook()
    book.load(bids, asks, bids_complete=complete, asks_complete=complete)
    return book


def test_sides_are_best_first_by_numeric_price_not_by_string() -> None:
    book = loaded([("9.5", "1"), ("10.0", "2"), ("100", "3")], [("1000", "1"), ("200.5", "2"), ("99.9", "3")])
    assert book.bids() == [("100", "3"), ("10.0", "2"), ("9.5", "1")]
    assert book.asks() == [("99.9", "3"), ("200.5", "2"), ("1000", "1")]
    assert book.best_bid() == Decimal("100")
    assert book.best_ask() == Decimal("99.9")


def test_top_levels_are_pre_encoded_json_with_the_venues_exact_strings() -> None:
    book = loaded([("4.00000000", "431.00000000"), ("3.99", "1")], [("4.00000200", "12.00000000")])
    assert book.top_bids(5) == [b'["4.00000000","431.00000000"]', b'["3.99","1"]']
    assert book.top_asks(1) == [b'["4.00000200","12.00000000"]']
    assert orjson.loads(b"[" + b",".join(book.top_bids(2)) + b"]") == [
        ["4.00000000", "431.00000000"],
        ["3.99", "1"],
    ]
    assert book.top_bids(1) == [b'["4.00000000","431.00000000"]']
    assert book.top_bids(0) == []
    assert book.top_bids(-3) == []


@pytest.mark.parametrize("zero", ["0.00000000", "0", "0.0", "-0", "0E-8"])
def test_any_numeric_zero_deletes_the_level(zero: str) -> None:
    book = loaded([("10", "1"), ("9", "1")], [("11", "1")])
    book.apply([("10.00000000", zero)], [("11", zero)])
    assert book.bids() == [("9", "1")]
    assert book.asks() == []


def test_deleting_an_absent_level_is_a_no_op() -> None:
    book = loaded([("10", "1")], [("11", "1")])
    book.apply([("8", "0")], [("12", "0.00000000")])
    assert book.bids() == [("10", "1")]
    assert book.asks() == [("11", "1")]


def test_a_price_written_differently_is_the_same_level_and_keeps_the_latest_strings() -> None:
    book = loaded([("4.0002", "1")], [])
    book.apply([("4.00020000", "2.50000000")], [])
    assert book.bids() == [("4.00020000", "2.50000000")]


def test_same_price_can_leave_the_bids_and_join_the_asks_in_one_update() -> None:
    book = loaded([("427.91", "5"), ("427.90", "1")], [("427.95", "2")])
    book.apply([("427.91", "0")], [("427.91", "24")])
    assert book.bids() == [("427.90", "1")]
    assert book.asks() == [("427.91", "24"), ("427.95", "2")]
    assert not book.is_crossed()


def test_empty_and_one_sided_books_are_valid() -> None:
    empty = loaded([], [])
    assert (empty.best_bid(), empty.best_ask(), empty.is_crossed()) == (None, None, False)
    assert empty.top_bids(10) == [] and empty.top_asks(10) == []
    bids_only = loaded([("1", "1")], [])
    assert (bids_only.best_bid(), bids_only.best_ask(), bids_only.is_crossed()) == (Decimal(1), None, False)
    asks_only = loaded([], [("2", "1")])
    assert (asks_only.best_bid(), asks_only.best_ask(), asks_only.is_crossed()) == (None, Decimal(2), False)


def test_crossed_and_locked_books_are_detected() -> None:
    book = loaded([("10", "1")], [("11", "1")])
    assert not book.is_crossed()
    book.apply([("11", "1")], [])
    assert book.is_crossed()  # locked: best bid == best ask
    book.apply([("11", "0"), ("12", "1")], [])
    assert book.is_crossed()


def test_load_replaces_everything_and_skips_zero_levels() -> None:
    book = loaded([("10", "1"), ("9", "1")], [("11", "1")], complete=False)
    book.load([("5", "1"), ("4", "0")], [("6", "0.000")], bids_complete=True, asks_complete=True)
    assert book.bids() == [("5", "1")]
    assert book.asks() == []
    book.apply([("1", "1")], [])
    assert book.top_bids(10) == [b'["5","1"]', b'["1","1"]']  # complete now: no watermark left


def test_levels_past_a_full_snapshot_side_are_untrusted() -> None:
    book = OrderBook()
    book.load(
        [("100", "1"), ("99", "1"), ("98", "1")],
        [("101", "1"), ("102", "1")],
        bids_complete=False,  # the snapshot side was cut at its limit
        asks_complete=True,  # shorter than its limit: the whole side
    )
    book.apply([("97", "5"), ("98.5", "2")], [("150", "3")])
    assert book.bids() == [("100", "1"), ("99", "1"), ("98.5", "2"), ("98", "1"), ("97", "5")]
    assert book.top_bids(10) == [b'["100","1"]', b'["99","1"]', b'["98.5","2"]', b'["98","1"]']
    assert book.top_asks(10) == [b'["101","1"]', b'["102","1"]', b'["150","3"]']
    assert book.trusted_depth() == (4, 3)
    book.apply([("98", "0")], [])  # the watermark level itself may go; the watermark price stays
    assert book.top_bids(10) == [b'["100","1"]', b'["99","1"]', b'["98.5","2"]']


def test_a_full_ask_side_has_its_own_watermark() -> None:
    book = OrderBook()
    book.load([("1", "1")], [("2", "1"), ("3", "1")], bids_complete=True, asks_complete=False)
    book.apply([], [("3.5", "1"), ("2.5", "1")])
    assert book.top_asks(10) == [b'["2","1"]', b'["2.5","1"]', b'["3","1"]']
    assert book.trusted_depth() == (1, 3)


def test_the_window_shrinks_as_the_touch_is_consumed_and_says_which_side_may_hold_more() -> None:
    book = OrderBook()
    book.load(
        [("100", "1"), ("99", "1"), ("98", "1")],
        [("101", "1"), ("102", "1"), ("103", "1")],
        bids_complete=True,
        asks_complete=False,
    )
    assert book.window() == (SideWindow(3, False), SideWindow(3, True))
    book.apply([("101", "2")], [("101", "0"), ("102", "0")])  # the price runs up through the asks
    assert book.window() == (SideWindow(4, False), SideWindow(1, True))
    assert book.first_asks(1) == [b'["103","1"]'] and book.first_bids(2) == [b'["101","2"]', b'["100","1"]']
    book.apply([], [("104", "1")])  # past the watermark: known to exist, but not what lies between
    assert book.window()[1] == SideWindow(1, True)


def test_the_window_is_read_again_after_every_change_even_one_a_bad_number_stopped() -> None:
    book = OrderBook()
    assert book.window() == (SideWindow(0, False), SideWindow(0, False))
    book.load([("100", "1"), ("99", "1"), ("98", "1")], [("101", "1"), ("102", "1")],
              bids_complete=False, asks_complete=True)  # fmt: skip
    assert book.window() == (SideWindow(3, True), SideWindow(2, False))
    with pytest.raises(VenuePayloadError):
        book.apply([("99.5", "1")], [("abc", "1")])  # the bid is applied before the ask fails
    assert book.window() == (SideWindow(4, True), SideWindow(2, False))
    book.truncate(2)
    assert book.window() == (SideWindow(2, True), SideWindow(2, True))
    book.clear()
    assert book.window() == (SideWindow(0, False), SideWindow(0, False))


def test_a_full_but_empty_side_trusts_nothing() -> None:
    book = OrderBook()
    book.load([], [], bids_complete=False, asks_complete=False)
    book.apply([("1", "1")], [("2", "1")])
    assert book.top_bids(5) == [] and book.top_asks(5) == []
    assert book.trusted_depth() == (0, 0)


def test_clear_drops_levels_and_watermarks() -> None:
    book = loaded([("10", "1")], [("11", "1")], complete=False)
    book.clear()
    assert book.bids() == [] and book.asks() == []
    book.apply([("10", "1"), ("9", "1")], [])
    assert len(book.top_bids(5)) == 2


def test_quantities_beyond_double_precision_stay_exact() -> None:
    book = loaded([("0.00000001", "92233720368.54775807")], [])
    assert book.top_bids(1) == [b'["0.00000001","92233720368.54775807"]']


@pytest.mark.parametrize(
    ("price", "quantity"), [("abc", "1"), ("NaN", "1"), ("Infinity", "1"), ("-Infinity", "1"), ("1", "x")]
)
def test_unreadable_numbers_raise_a_payload_error(price: str, quantity: str) -> None:
    book = OrderBook()
    with pytest.raises(VenuePayloadError):
        book.apply([(price, quantity)], [])
    with pytest.raises(VenuePayloadError):
        book.load([], [(price, quantity)], bids_complete=True, asks_complete=True)


def test_truncate_keeps_the_best_levels_all_trusted_until_the_next_load() -> None:
    book = loaded([("10", "1"), ("9", "1"), ("8", "1")], [("11", "1")], complete=False)
    book.truncate(2)
    assert book.bids() == [("10", "1"), ("9", "1")] and book.asks() == [("11", "1")]
    # No watermark: a level that joins past the former worst price is trusted, then cut again.
    book.apply([("9.5", "2")], [])
    assert book.window() == (SideWindow(3, True), SideWindow(1, False))
    book.truncate(2)
    assert book.bids() == [("10", "1"), ("9.5", "2")]
    assert book.window() == (SideWindow(2, True), SideWindow(1, False))
    assert book.best_levels(1) == ([("10", "1")], [("11", "1")])
    book.load([("5", "1")], [], bids_complete=True, asks_complete=True)
    assert book.window() == (SideWindow(1, False), SideWindow(0, False))


def test_the_journal_made_into_deltas_keeps_a_readers_head_equal_to_the_book() -> None:
    """Random books, windows, changes and truncations: what a reader holds, edited by each taken journal as a
    delta carries it (encoded, read and applied), is always the book's first levels."""
    rng = random.Random(36)
    for _ in range(200):
        book = OrderBook()
        bids = [(str(1000 - i), str(rng.randint(1, 9))) for i in range(rng.randint(0, 60))]
        asks = [(str(1001 + i), str(rng.randint(1, 9))) for i in range(rng.randint(0, 60))]
        book.load(bids, asks, bids_complete=rng.random() < 0.5, asks_complete=rng.random() < 0.5)
        cap = rng.randint(1, 40)
        book.open_journal(cap)
        shown = [min(cap, window.trusted) for window in book.window()]
        head = Snapshot(encode_snapshot(_meta(0), book.first_bids(shown[0]), book.first_asks(shown[1])))
        for turn in range(1, 21):
            for _event in range(rng.randint(0, 5)):  # the events of one loop turn
                book.apply(_random_levels(rng, 900, 1000), _random_levels(rng, 1001, 1100))
                if rng.random() < 0.1:
                    book.truncate(rng.randint(0, 50))  # a venue that keeps the top levels current
            journal = book.take_journal()
            assert journal is not None
            counts = (min(cap, book.window()[0].trusted), min(cap, book.window()[1].trusted))
            changes = (book.bid_changes(journal[0], shown[0], counts[0]),
                       book.ask_changes(journal[1], shown[1], counts[1]))  # fmt: skip
            delta = read_delta(encode_delta(_meta(turn), turn - 1, 0, cap, counts, *changes))
            after = apply_delta(head, delta)
            assert after is not None
            assert after.parts() == (book.first_bids(counts[0]), book.first_asks(counts[1]))
            head, shown = after, list(counts)


def _meta(update_id: int) -> SnapshotMeta:
    return SnapshotMeta(update_id, None, None, 1000 + update_id, 1, BookStatus.SYNCED, node=7)


def test_a_load_a_clear_or_an_overflow_closes_the_journal() -> None:
    book = loaded([("10", "1")], [("11", "1")])
    assert book.take_journal() is None  # never opened
    book.open_journal(5)
    book.apply([("9", "1")], [])
    assert book.take_journal() == ([(INSERT, 1, b'["9","1"]')], [])
    assert book.take_journal() == ([], [])  # taken: it starts again, open
    book.load([("10", "1")], [], bids_complete=True, asks_complete=True)
    assert book.take_journal() is None
    book.open_journal(5)
    book.clear()
    assert book.take_journal() is None
    book.open_journal(5)
    for i in range(JOURNAL_LIMIT + 1):
        book.apply([("10", str(i + 1))], [])
    assert book.take_journal() is None


def _random_levels(rng: random.Random, low: int, high: int) -> list[tuple[str, str]]:
    return [(str(rng.randint(low, high)), str(rng.choice([0, 0, 1, 2, 3]))) for _ in range(rng.randint(0, 6))]


def test_a_price_of_10_to_the_14_or_more_is_refused_and_one_below_it_is_kept_exactly() -> None:
    """Every key then fits in 128 bits (the compiled store's); no venue prices anything near it."""
    book = loaded([("10", "1")], [])
    for price in ("100000000000000", "1E14", "123456789012345.5"):
        with pytest.raises(VenuePayloadError, match="bad level"):
            book.apply([(price, "1")], [])
    largest = "99999999999999.999999999999999999999999"
    book.apply([(largest, "1"), ("0000000000000000000002.50", "3")], [])
    assert book.bids() == [(largest, "1"), ("10", "1"), ("0000000000000000000002.50", "3")]
    assert book.best_bid() == Decimal(largest)
