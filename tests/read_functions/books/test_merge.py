"""The consolidated merge: exactly the books' levels summed by exact price, best first, cut where a
truncated book's knowledge ends; checked against a reference that sorts everything."""

from __future__ import annotations

import random
from collections import defaultdict
from decimal import Decimal

import pytest

from ladder_process.errors import StoreError
from read_functions.books.merge import (
    Level,
    Merged,
    crossed,
    known_to,
    merge,
    side_levels,
    text,
)


def stored(levels: list[tuple[str, str]]) -> bytes:
    return b",".join(b'["%b","%b"]' % (p.encode(), q.encode()) for p, q in levels)


def written(price: Decimal, rng: random.Random) -> str:
    """``price`` as one venue or another writes it: trailing zeros or none."""
    plain = format(price.normalize(), "f")
    if rng.random() < 0.5:
        return plain
    decimals = len(plain.partition(".")[2])
    return format(price, f".{decimals + rng.randrange(4)}f")


def random_side(rng: random.Random, bids: bool, count: int) -> list[tuple[str, str]]:
    ticks = sorted(rng.sample(range(1, 300), count), reverse=bids)
    return [
        (written(Decimal(t) / 100 + 1000, rng), f"{rng.randrange(1, 10**6)}e-{rng.randrange(9)}")
        for t in ticks
    ]


def reference(
    books: list[list[tuple[str, str]]], depth: int, bids: bool
) -> list[tuple[str, str, dict[int, str]]]:
    """Every level of every book summed by exact price, sorted whole, the best ``depth`` kept."""
    totals: dict[Decimal, Decimal] = defaultdict(Decimal)
    parts: dict[Decimal, dict[int, str]] = defaultdict(dict)
    for i, book in enumerate(books):
        for price, qty in book:
            totals[Decimal(price)] += Decimal(qty)
            parts[Decimal(price)][i] = qty
    best = sorted(totals, reverse=bids)[:depth]
    return [(text(p), text(totals[p]), parts[p]) for p in best]


def seen(merged: list[Merged]) -> list[tuple[str, str, dict[int, str]]]:
    return [(text(m.price), text(m.total), dict(m.parts)) for m in merged]


@pytest.mark.parametrize("seed", range(40))
def test_a_merge_is_every_book_summed_at_each_exact_price(seed: int) -> None:
    rng = random.Random(seed)
    bids = rng.random() < 0.5
    books = [random_side(rng, bids, rng.randrange(0, 40)) for _ in range(rng.randrange(1, 7))]
    depth = rng.randrange(1, 60)
    sides = [side_levels(stored(book), bids=bids) for book in books]
    merged = merge(sides, depth, None, bids=bids)
    assert seen(merged) == reference(books, depth, bids)
    for m in merged:  # each part is its venue's own string, in book order
        assert [i for i, _ in m.parts] == sorted(i for i, _ in m.parts)


def test_equal_prices_written_differently_are_one_level_and_sums_never_round() -> None:
    binance = side_levels(stored([("97000.01000000", "1.50000000"), ("96999.99", "2")]), bids=True)
    okx = side_levels(stored([("97000.01", "0.5"), ("97000", "3")]), bids=True)
    huge = "12345678901234567890.123456789012345678901"  # 41 digits: a default context would round
    alpaca = side_levels(stored([("97000.0100", huge)]), bids=True)
    merged = merge([binance, okx, alpaca], 10, None, bids=True)
    assert seen(merged) == [
        ("97000.01", "12345678901234567892.123456789012345678901", {0: "1.50000000", 1: "0.5", 2: huge}),
        ("97000", "3", {1: "3"}),
        ("96999.99", "2", {0: "2"}),
    ]


def test_a_merge_stops_at_the_depth_and_reads_no_book_deeper() -> None:
    asks = [
        side_levels(stored([(str(100 + i * 3 + k), "1") for i in range(50)]), bids=False) for k in range(3)
    ]
    merged = merge(asks, 5, None, bids=False)
    assert [text(m.price) for m in merged] == ["100", "101", "102", "103", "104"]


def test_a_truncated_book_bounds_the_merge_at_its_last_known_price() -> None:
    deep = side_levels(stored([(f"{100 - i}", "1") for i in range(10)]), bids=True)
    short = side_levels(stored([("99.5", "2"), ("97", "1")]), bids=True)  # the venue holds more below 97
    bound = known_to([deep, short], [False, True])
    merged = merge([deep, short], 10, bound, bids=True)
    assert [text(m.price) for m in merged] == ["100", "99.5", "99", "98", "97"]
    assert known_to([deep, short], [False, False]) is None
    # A truncated side with no level at all knows nothing: the merged side is empty.
    assert merge([deep, []], 10, known_to([deep, []], [False, True]), bids=True) == []


def test_crossed_is_a_bid_above_an_ask() -> None:
    bid = Merged(Decimal("101"), Decimal(1), ((0, "1"),))
    ask = Merged(Decimal("100.5"), Decimal(1), ((1, "1"),))
    assert crossed(bid, ask)
    assert not crossed(ask, bid)
    assert not crossed(bid, Merged(Decimal("101"), Decimal(1), ())), "a locked book is not crossed"
    assert not crossed(None, ask)


def test_text_is_canonical_plain_decimal() -> None:
    assert [text(Decimal(s)) for s in ("0.00000001", "97000.00", "1E+3", "0.10")] == [
        "0.00000001",
        "97000",
        "1000",
        "0.1",
    ]


@pytest.mark.parametrize("blob", [b'["1","x"]', b'["1"]', b"nonsense", b'["1","2",'])
def test_a_stored_side_that_is_not_decimal_levels_is_a_store_error(blob: bytes) -> None:
    with pytest.raises(StoreError):
        side_levels(blob, bids=False)


def test_levels_keep_the_venue_quantity_and_a_bid_key_is_its_negated_price() -> None:
    assert side_levels(stored([("5.10", "0.500")]), bids=True) == [
        Level(Decimal("-5.10"), "0.500", Decimal("0.5"))
    ]
