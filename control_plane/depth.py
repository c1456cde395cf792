"""How deep books may be kept: the defaults, and each venue's limit, as data in one place.

A subscription asks for ``depth`` levels per side and a book is kept as deep as its deepest
subscriber asks. Ladder can only vouch for levels a REST snapshot told it about, so a venue's
limit is the most levels one of its snapshots holds (the venues' REST references): ``/api/v3/depth``
takes ``limit`` up to 5000 on Binance's spot venues, ``/fapi/v1/depth`` up to 1000 on USD-M futures.
Alpaca and Coinbase (``level2``) send whole books; 5000 bounds what Ladder keeps of one. OKX and
Bybit send their books on the stream cut at the channel's depth: 400 levels (OKX ``books``), 1000
(Bybit's deepest). Kraken's ``book`` channel keeps a subscriber's top 10, 25, 100, 500 or 1000
levels current: 1000 at most. A tenant's ``max_depth`` bounds its own subscriptions below that.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

DEFAULT_DEPTH = 100  # a subscription that names no depth (and every book before depth existed)
DEFAULT_MAX_DEPTH = 1000  # a tenant created without max_depth (and every tenant before it existed)

VENUE_MAX_DEPTH: Mapping[str, int] = MappingProxyType(
    {
        "binance.com": 5000,
        "binance.com-testnet": 5000,
        "binance.us": 5000,
        "binance.com-futures": 1000,
        "binance.com-futures-testnet": 1000,
        "alpaca-crypto": 5000,
        "okx": 400,
        "bybit": 1000,
        "bybit-linear": 1000,
        "kraken": 1000,
        "coinbase": 5000,
    }
)
MAX_DEPTH_LIMIT = max(VENUE_MAX_DEPTH.values())  # the most a tenant's max_depth may be


def venue_max_depth(exchange: str) -> int:
    """The deepest book ``exchange`` can be kept at; one the table does not list keeps the default."""
    return VENUE_MAX_DEPTH.get(exchange, DEFAULT_DEPTH)
