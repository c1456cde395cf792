"""Kraken's book checksum, as this fake computes it (it shares no code with Ladder's).

The CRC32 of one string: the top 10 asks (lowest first), then the top 10 bids (highest first), each
as its price text then its quantity text, exactly as the venue writes them with the decimal point
taken out and the leading zeros stripped.
"""

from __future__ import annotations

import zlib

from fake_venue.market.markets import Market

CHECKSUM_LEVELS = 10


def book_checksum(market: Market) -> int:
    style = market.style
    parts = [
        _bare(style.price(tick)) + _bare(style.qty(qty))
        for side in (market.book.asks, market.book.bids)
        for tick, qty in side.levels(CHECKSUM_LEVELS)
    ]
    return zlib.crc32("".join(parts).encode())


def _bare(text: str) -> str:
    return text.replace(".", "").lstrip("0")
