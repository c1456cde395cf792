"""Prices and quantities are held as scaled integers and written as each venue writes them.

Integers keep the book exact and cheap; the text form is where the venues differ, and those
differences are what client parsers must survive:

- Binance spot pads everything to 8 decimals, zero included (``"0.00000000"``);
- Binance futures pads to the symbol's precision but writes a zero quantity as ``"0"``;
- Alpaca sends JSON numbers, written here in their shortest plain form (``71859.53``, ``0``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fake_venue.market.book import Levels


def fixed(units: int, decimals: int) -> str:
    """``units`` scaled by ``10**-decimals``, with exactly ``decimals`` digits after the point."""
    text, divisor = fixed_format(decimals)
    return text % divmod(units, divisor)


def fixed_format(decimals: int) -> tuple[str, int]:
    """The %-format and divisor ``fixed`` writes with, ``format % divmod(units, divisor)``: one C-level
    step per number, which ``LevelStyle.levels`` keeps for the thousands of levels of a deep
    snapshot (``%.0s`` swallows the zero remainder when there are no decimals)."""
    return ("%d%.0s", 1) if decimals == 0 else (f"%d.%0{decimals}d", 10**decimals)


def trimmed(units: int, decimals: int) -> str:
    """The same value with no trailing zeros and no bare point."""
    text = fixed(units, decimals)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


@dataclass(frozen=True, slots=True)
class LevelStyle:
    """How one symbol on one venue writes a price tick and a quantity in step units."""

    price_factor: int
    """Multiplier from a tick index to output units (tick multiple times 10**(out - in))."""
    price_decimals: int
    qty_factor: int
    qty_decimals: int
    trim: bool
    zero_qty: str
    _price_format: tuple[str, int] = field(init=False, repr=False, compare=False)
    _qty_format: tuple[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_price_format", fixed_format(self.price_decimals))
        object.__setattr__(self, "_qty_format", fixed_format(self.qty_decimals))

    def price(self, tick: int) -> str:
        units = tick * self.price_factor
        return trimmed(units, self.price_decimals) if self.trim else fixed(units, self.price_decimals)

    def qty(self, units: int) -> str:
        if units == 0:
            return self.zero_qty
        units *= self.qty_factor
        return trimmed(units, self.qty_decimals) if self.trim else fixed(units, self.qty_decimals)

    def levels(self, levels: Levels) -> list[list[str]]:
        """``[price, qty]`` texts of ``(tick, units)`` levels, as ``price`` and ``qty`` write them."""
        if self.trim:
            return [[self.price(tick), self.qty(units)] for tick, units in levels]
        (price_format, price_div), (qty_format, qty_div) = self._price_format, self._qty_format
        price_factor, qty_factor, zero = self.price_factor, self.qty_factor, self.zero_qty
        return [
            [
                price_format % divmod(tick * price_factor, price_div),
                qty_format % divmod(units * qty_factor, qty_div) if units else zero,
            ]
            for tick, units in levels
        ]
