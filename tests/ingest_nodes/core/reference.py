"""A naive reference venue book for the randomized sync tests: a dict per side, sorted only when compared."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from decimal import Decimal

from ingest_nodes.core.events import Level

BID_PRICES = [Decimal(9000 + step * 7) / 100 for step in range(40)]  # 90.00 .. 92.73
ASK_PRICES = [Decimal(10001 + step * 7) / 100 for step in range(40)]  # 100.01 .. 102.74


def written(value: Decimal, rng: random.Random) -> str:
    """The same number written with a random count of trailing zeros, like different venues do."""
    text = f"{value:f}"
    if "." not in text:
        text += "."
    return (text + "0" * rng.randint(0, 4)).rstrip(".")


@dataclass
class Book:
    """Naive reference book: a dict per side, sorted only when compared."""

    bids: dict[Decimal, Level] = field(default_factory=dict)
    asks: dict[Decimal, Level] = field(default_factory=dict)

    def set(self, side: str, price: Decimal, level: Level) -> None:
        levels = self.bids if side == "b" else self.asks
        if Decimal(level[1]) == 0:
            levels.pop(price, None)
        else:
            levels[price] = level

    def sides(self) -> tuple[list[Level], list[Level]]:
        return (
            [self.bids[p] for p in sorted(self.bids, reverse=True)],
            [self.asks[p] for p in sorted(self.asks)],
        )

    def copy(self) -> Book:
        return Book(dict(self.bids), dict(self.asks))
