"""Prices and quantities are held as scaled integers and written as each venue writes them.

Integers keep the book exact and cheap; the text form is where the venues differ, and those
differences are what client parsers must survive:

- Binance spot pads everything to 8 decimals, zero included (``"0.00000000"``);
- Binance futures pads to the symbol's precision but writes a zero quantity as ``"0"``;
- Alpaca sends JSON numbers, written here in their shortest plain form (``71859.53``, ``0``).
"""

from __future__ import annotations

from dataclasses import dataclass


def fixed(units: int, decimals: int) -> str:
    """``units`` scaled by ``10**-decimals``, with exactly ``decimals`` digits after the point."""
    if decimals == 0:
        return str(units)
    whole, frac = divmod(units, 10**decimals)
    return f"{whole}.{frac:0{decimals}d}"


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

    def price(self, tick: int) -> str:
        units = tick * self.price_factor
        return trimmed(units, self.price_decimals) if self.trim else fixed(units, self.price_decimals)

    def qty(self, units: int) -> str:
        if units == 0:
            return self.zero_qty
        units *= self.qty_factor
        return trimmed(units, self.qty_decimals) if self.trim else fixed(units, self.qty_decimals)

    def level(self, tick: int, units: int) -> list[str]:
        return [self.price(tick), self.qty(units)]
