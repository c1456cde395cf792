"""An offline venue that speaks Binance spot, Binance USD-M futures and Alpaca crypto market data.

For demos, tests and benchmarks: realistic books that move, the venues' exact wire formats and
limits, a truth endpoint that returns the venue's whole book as of any recent update id, and a
control endpoint that injects every fault a client must survive (gaps, duplicates, disconnects,
stalls, crossed books, stale or slow snapshots, 429/418, server shutdowns, Alpaca resets).
See ``fake_venue.app`` for the URL map and ``fake_venue.control`` for the faults.
"""

from fake_venue.app import FakeVenue
from fake_venue.config import BinanceLimits, Drift, VenueConfig

__all__ = ["BinanceLimits", "Drift", "FakeVenue", "VenueConfig"]
