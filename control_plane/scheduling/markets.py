"""What the control plane needs to know about venues: which exchanges and markets exist.

Subscriptions are validated through this Protocol so that the control plane never trusts a market
name a caller typed and never talks to a venue itself. The process supplies the implementation
(normally backed by the market catalog the ingest nodes keep in the book store).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Protocol


class MarketValidator(Protocol):
    async def known_exchange(self, exchange: str) -> bool:
        """True if Ladder supports ``exchange``; CatalogUnavailableError when it is served but its
        market list is not loaded yet (the venue is out of reach)."""

    async def tradable(self, exchange: str, market: str) -> bool:
        """True if ``market`` is listed by ``exchange`` and currently trading."""


class StaticMarketValidator:
    """A fixed list of tradable markets per exchange (the fake venue, tests, offline demos)."""

    def __init__(self, markets: Mapping[str, Collection[str]]) -> None:
        self._markets = {exchange: frozenset(names) for exchange, names in markets.items()}

    async def known_exchange(self, exchange: str) -> bool:
        return exchange in self._markets

    async def tradable(self, exchange: str, market: str) -> bool:
        return market in self._markets.get(exchange, frozenset())
