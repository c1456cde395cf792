"""Level texts: the one-pass writer of deep snapshots writes exactly what ``fixed`` and ``trimmed`` do."""

from __future__ import annotations

import pytest

from fake_venue.market.decimal_text import LevelStyle, fixed, trimmed

LEVELS = [(1, 0), (7, 1), (123456, 10**9 + 7), (10**12, 5)]


@pytest.mark.parametrize(("price_decimals", "qty_decimals"), [(8, 8), (2, 0), (0, 3), (4, 1)])
def test_levels_pad_to_the_style_decimals(price_decimals: int, qty_decimals: int) -> None:
    style = LevelStyle(5, price_decimals, 10, qty_decimals, trim=False, zero_qty="0")
    assert style.levels(LEVELS) == [
        [fixed(tick * 5, price_decimals), fixed(units * 10, qty_decimals) if units else "0"]
        for tick, units in LEVELS
    ]


def test_trimmed_levels() -> None:
    style = LevelStyle(10, 3, 1, 9, trim=True, zero_qty="0")
    assert style.levels([(15, 0), (15, 2500)]) == [["0.15", "0"], ["0.15", trimmed(2500, 9)]]
    assert style.levels([(15, 2500)]) == [["0.15", "0.0000025"]]


def test_fixed_pads_and_keeps_every_digit() -> None:
    assert [fixed(0, 8), fixed(5, 2), fixed(123, 0), fixed(92233720368_54775807, 8)] == [
        "0.00000000", "0.05", "123", "92233720368.54775807",
    ]  # fmt: skip
    assert [trimmed(2500, 9), trimmed(1500, 3), trimmed(0, 2)] == ["0.0000025", "1.5", "0"]
