"""The venues the fake serves: one entry per dialect, each built from a folder (``binance/``,
``alpaca/``, ``okx/``, ``bybit/``, ``kraken/``, ``coinbase/``) that holds the dialect's rules, its
venue state, and its REST and WS pieces (OKX and Bybit share ``chained/``: books sent on subscribe,
then chained updates; Kraken and Coinbase share ``server/book_stream.py``: books sent on subscribe,
then updates with no ids of their own).

A new venue is a folder beside those, a member of ``Venue`` and one entry in ``DIALECTS``; the app,
the clock, stats and truth then serve it. Control's faults narrow ``Venue`` where a fault belongs
to one venue's protocol.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from fake_venue.alpaca.routes import alpaca_routes
from fake_venue.alpaca.venue import AlpacaVenue
from fake_venue.binance.dialect import BinanceDialect
from fake_venue.binance.futures import FuturesDialect
from fake_venue.binance.routes import binance_routes
from fake_venue.binance.spot import SpotDialect
from fake_venue.binance.venue import BinanceVenue
from fake_venue.bybit.routes import bybit_routes
from fake_venue.bybit.venue import BybitVenue
from fake_venue.coinbase.routes import coinbase_routes
from fake_venue.coinbase.venue import CoinbaseVenue
from fake_venue.config import VenueConfig
from fake_venue.kraken.routes import kraken_routes
from fake_venue.kraken.venue import KrakenVenue
from fake_venue.market.scheduler import Scheduler
from fake_venue.okx.routes import okx_routes
from fake_venue.okx.venue import OkxVenue

Venue = BinanceVenue | AlpacaVenue | OkxVenue | BybitVenue | KrakenVenue | CoinbaseVenue

Served = tuple[Venue, list[web.RouteDef]]
"""A venue built on the shared clock, and the routes that serve it."""


def _binance(dialect: Callable[[VenueConfig], BinanceDialect]) -> Callable[[VenueConfig, Scheduler], Served]:
    def serve(config: VenueConfig, scheduler: Scheduler) -> Served:
        venue = BinanceVenue(dialect(config), config, scheduler)
        return venue, binance_routes(venue)

    return serve


def _alpaca(config: VenueConfig, scheduler: Scheduler) -> Served:
    venue = AlpacaVenue(config, scheduler)
    return venue, alpaca_routes(venue)


def _okx(config: VenueConfig, scheduler: Scheduler) -> Served:
    venue = OkxVenue(config, scheduler)
    return venue, okx_routes(venue)


def _bybit(category: str) -> Callable[[VenueConfig, Scheduler], Served]:
    def serve(config: VenueConfig, scheduler: Scheduler) -> Served:
        venue = BybitVenue(config, scheduler, category=category)
        return venue, bybit_routes(venue)

    return serve


def _kraken(config: VenueConfig, scheduler: Scheduler) -> Served:
    venue = KrakenVenue(config, scheduler)
    return venue, kraken_routes(venue)


def _coinbase(config: VenueConfig, scheduler: Scheduler) -> Served:
    venue = CoinbaseVenue(config, scheduler)
    return venue, coinbase_routes(venue)


DIALECTS: dict[str, Callable[[VenueConfig, Scheduler], Served]] = {
    "spot": _binance(SpotDialect),
    "futures": _binance(FuturesDialect),
    "alpaca": _alpaca,
    "okx": _okx,
    "bybit": _bybit("spot"),
    "bybit-linear": _bybit("linear"),
    "kraken": _kraken,
    "coinbase": _coinbase,
}
"""Venue name (as control, stats and truth requests name it) -> how to build and serve it."""
