"""Which books trade one pair: each exchange's spot markets of a base and a quote asset.

The venue's catalogue says what a market trades (its base, quote and kind), never the symbol:
Binance writes ``BTCUSDT``, OKX ``BTC-USDT``, Alpaca ``BTC/USD``, and OKX's ``BTC-USDT-SWAP`` has
``BTC-USDT``'s base and quote but is a perpetual (its quantities are contracts), so it is no book
of the pair. An exchange joins by its catalogue alone. Each listing is indexed by (base, quote)
once, when the catalog cache loads it, and asked with a dict look-up until it is replaced.
"""

from __future__ import annotations

import weakref

from book_store.catalog import SPOT, MarketInfo
from read_functions.tenancy.catalog_cache import CatalogCache, MarketListing

_Index = dict[tuple[str, str], tuple[MarketInfo, ...]]


class PairMarkets:
    """The spot markets of a pair on each exchange, from the catalog cache's listings."""

    def __init__(self, catalog: CatalogCache) -> None:
        self._catalog = catalog
        self._indexes: dict[str, tuple[weakref.ref[MarketListing], _Index]] = {}

    async def exchanges(self) -> list[str]:
        """Every exchange that has a catalog, sorted."""
        return await self._catalog.exchanges()

    async def markets(self, exchange: str, base: str, quote: str) -> tuple[MarketInfo, ...]:
        """The spot markets of ``exchange`` trading ``base`` for ``quote`` (asset names in upper
        case), by name; UnknownExchangeError for an exchange with no catalog."""
        listing = await self._catalog.listing_of(exchange)
        indexed = self._indexes.get(exchange)
        if indexed is None or indexed[0]() is not listing:
            indexed = self._indexes[exchange] = (weakref.ref(listing), _index(listing))
        return indexed[1].get((base, quote), ())


def _index(listing: MarketListing) -> _Index:
    index: dict[tuple[str, str], list[MarketInfo]] = {}
    for name in sorted(listing):
        market = listing[name]
        if market.kind == SPOT:
            index.setdefault((market.base.upper(), market.quote.upper()), []).append(market)
    return {pair: tuple(markets) for pair, markets in index.items()}
