"""The cost to fill an order: exact decimal arithmetic over the levels an answer holds."""

from __future__ import annotations

from decimal import Decimal
from types import MappingProxyType

import pytest
from ladder_sdk import Book, ConsolidatedBook, ConsolidatedLevel, Level


def book(asks: list[tuple[str, str]], *, truncated: bool = False) -> Book:
    levels = tuple(Level(Decimal(p), Decimal(q)) for p, q in asks)
    return Book("binance.com", "BTCUSDT", 1, 1, 1, 1, 0, 0, "synced", truncated, levels[:1], levels)


def merged(bids: list[tuple[str, dict[str, str]]]) -> ConsolidatedBook:
    levels = tuple(
        ConsolidatedLevel(
            Decimal(price),
            sum((Decimal(q) for q in parts.values()), Decimal(0)),
            MappingProxyType({b: Decimal(q) for b, q in parts.items()}),
        )
        for price, parts in bids
    )
    return ConsolidatedBook("BTC", "USDT", ("USDT",), 10, (), (), False, False, levels, ())


def test_a_fill_is_exact_where_floats_would_round() -> None:
    asks = book([("0.1", "0.1"), ("0.2", "0.2"), ("0.30000000000000000000000000001", "5")])
    fill = asks.cost_to_fill("buy", "0.5")
    assert (fill.filled, fill.complete) == (Decimal("0.5"), True)
    assert fill.cost == Decimal("0.110000000000000000000000000002")
    assert [(level.price, level.quantity) for level in fill.levels] == [
        (Decimal("0.1"), Decimal("0.1")),
        (Decimal("0.2"), Decimal("0.2")),
        (Decimal("0.30000000000000000000000000001"), Decimal("0.2")),
    ]
    assert fill.average_price == Decimal("0.2200000000000000000000000000")  # 28 digits, said so
    assert fill.books == {"binance.com:BTCUSDT": (Decimal("0.5"), fill.cost)}


def test_a_sell_walks_the_bids_and_takes_each_level_from_its_books_in_order() -> None:
    consolidated = merged(
        [("101", {"okx:BTC-USDT": "1", "binance.com:BTCUSDT": "2"}), ("100", {"bybit:BTCUSDT": "4"})]
    )
    fill = consolidated.cost_to_fill("sell", 2)
    assert dict(fill.levels[0].books) == {"okx:BTC-USDT": Decimal("1"), "binance.com:BTCUSDT": Decimal("1")}
    assert fill.cost == Decimal("202") and len(fill.levels) == 1
    assert dict(fill.books) == {
        "okx:BTC-USDT": (Decimal("1"), Decimal("101")),
        "binance.com:BTCUSDT": (Decimal("1"), Decimal("101")),
    }
    everything = consolidated.cost_to_fill("sell", Decimal("10"))
    assert (everything.filled, everything.complete, everything.truncated) == (Decimal("7"), False, False)
    assert everything.cost == Decimal("703")


def test_running_out_of_a_truncated_answer_says_so() -> None:
    fill = book([("10", "1")], truncated=True).cost_to_fill("buy", "3")
    assert (fill.filled, fill.complete, fill.truncated) == (Decimal("1"), False, True)
    assert book([("10", "5")], truncated=True).cost_to_fill("buy", "3").truncated is False  # it was enough
    assert book([]).cost_to_fill("buy", "1").average_price is None


@pytest.mark.parametrize("quantity", [0.5, True, None, "abc", "0", "-1", "NaN", "Infinity"])
def test_a_quantity_must_be_an_exact_positive_number(quantity: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        book([("10", "1")]).cost_to_fill("buy", quantity)  # type: ignore[arg-type]


def test_a_side_is_buy_or_sell() -> None:
    with pytest.raises(ValueError, match="buy, sell"):
        book([("10", "1")]).cost_to_fill("bid", "1")
