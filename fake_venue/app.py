"""``FakeVenue``: Binance spot and USD-M futures, Alpaca crypto, OKX, Bybit, Kraken and Coinbase on
one local port.

Where a client points (``base`` is what ``start`` returns, ``http://host:port``):

=====================  ====================================================
Binance spot REST      ``base`` (``/api/v3/depth``, ``/api/v3/exchangeInfo``)
Binance spot streams   ``ws://host:port`` (``/ws``, ``/ws/<streams>``, ``/stream?streams=``)
Binance futures REST   ``base`` (``/fapi/v1/depth``, ``/fapi/v1/exchangeInfo``)
Binance futures WS     ``ws://host:port/public`` (``/public/ws``, ``/public/stream?streams=``)
Alpaca crypto stream   ``ws://host:port/v1beta3/crypto/{us,us-1,eu-1}`` (one feed)
Alpaca trading API     ``base`` (``/v2/assets?asset_class=crypto``)
OKX public WS, REST    ``ws://host:port`` (``/ws/v5/public``), ``base`` (``/api/v5/...``)
Bybit public WS        ``ws://host:port/v5/public/{spot,linear}``
Bybit REST             ``base/bybit-spot``, ``base/bybit-linear`` (``/v5/market/...``)
Kraken WS v2           ``ws://host:port/v2`` (a client adds ``/v2`` to ``ws://host:port``)
Kraken REST            ``base`` (``/0/public/AssetPairs``)
Coinbase market data   ``ws://host:port`` (at ``/``, as the venue's host)
Coinbase REST          ``base`` (``/api/v3/brokerage/market/products``)
test-only              ``/_fake/book``, ``/_fake/control``, ``/_fake/stats``, ``/_fake/connections``
=====================  ====================================================

Run it in-process (``await venue.start()`` ... ``await venue.stop()``) or as
``python -m fake_venue``. One scheduler task drives every symbol of every venue.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from aiohttp import web

from fake_venue.bybit.routes import rest_prefix
from fake_venue.config import VenueConfig
from fake_venue.control import Control
from fake_venue.market.scheduler import Scheduler
from fake_venue.registry import DIALECTS, Venue
from fake_venue.stats import stats_routes
from fake_venue.truth import truth_handler

TEND_PERIOD_S = 0.1
GOING_AWAY = 1001


class FakeVenue:
    """The whole fake venue: build it, ``start`` it, point clients at its URLs, ``stop`` it."""

    def __init__(self, config: VenueConfig | None = None) -> None:
        self.config = config or VenueConfig()
        self.scheduler = Scheduler()
        served = {name: serve(self.config, self.scheduler) for name, serve in DIALECTS.items()}
        self.venues: dict[str, Venue] = {name: venue for name, (venue, _) in served.items()}
        self._routes = [route for _, routes in served.values() for route in routes]
        self.control = Control(self.venues, self.scheduler)
        self._runner: web.AppRunner | None = None
        self._clock: asyncio.Task[None] | None = None
        self.url = ""
        self.scheduler.every(TEND_PERIOD_S, self._tend)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (0 picks a free port); return the base URL ``http://host:port``."""
        runner = web.AppRunner(self._application(), access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        self._runner = runner
        bound_port = runner.addresses[0][1]
        self.url = f"http://{host}:{bound_port}"
        self._clock = asyncio.get_running_loop().create_task(self.scheduler.run())
        return self.url

    async def stop(self) -> None:
        """Close every connection (close frame, going away) and stop listening."""
        if self._clock is not None:
            self._clock.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._clock
        closing = [
            task
            for venue in self.venues.values()
            for conn in list(venue.connections.values())
            if (task := conn.close(GOING_AWAY, "venue stopping")) is not None
        ]
        if closing:
            await asyncio.wait(closing, timeout=1.0)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def spot(self) -> Venue:
        return self.venues["spot"]

    @property
    def futures(self) -> Venue:
        return self.venues["futures"]

    @property
    def alpaca(self) -> Venue:
        return self.venues["alpaca"]

    @property
    def kraken(self) -> Venue:
        return self.venues["kraken"]

    @property
    def coinbase(self) -> Venue:
        return self.venues["coinbase"]

    @property
    def ws_url(self) -> str:
        return "ws" + self.url.removeprefix("http")

    @property
    def spot_rest_url(self) -> str:
        return self.url

    @property
    def spot_ws_url(self) -> str:
        return self.ws_url

    @property
    def futures_rest_url(self) -> str:
        return self.url

    @property
    def futures_ws_url(self) -> str:
        return self.ws_url + "/public"

    @property
    def alpaca_ws_url(self) -> str:
        return self.ws_url + "/v1beta3/crypto/us"

    @property
    def alpaca_stream_url(self) -> str:
        """The stream base a client adds ``/v1beta3/crypto/<location>`` to."""
        return self.ws_url

    @property
    def alpaca_trading_url(self) -> str:
        return self.url

    @property
    def okx_rest_url(self) -> str:
        return self.url

    @property
    def okx_ws_url(self) -> str:
        """The base a client adds ``/ws/v5/public`` to."""
        return self.ws_url

    @property
    def bybit_rest_url(self) -> str:
        """Spot's REST base (each fake category has its own; the venue has one host for both)."""
        return self.url + rest_prefix("spot")

    @property
    def bybit_linear_rest_url(self) -> str:
        return self.url + rest_prefix("linear")

    @property
    def bybit_spot_ws_url(self) -> str:
        return self.ws_url + "/v5/public/spot"

    @property
    def bybit_linear_ws_url(self) -> str:
        return self.ws_url + "/v5/public/linear"

    @property
    def kraken_ws_url(self) -> str:
        """The WebSocket base a client adds ``/v2`` to, as ``wss://ws.kraken.com`` is."""
        return self.ws_url

    @property
    def coinbase_ws_url(self) -> str:
        return self.ws_url

    @property
    def kraken_rest_url(self) -> str:
        return self.url

    @property
    def coinbase_rest_url(self) -> str:
        return self.url

    def _application(self) -> web.Application:
        app = web.Application()
        app.add_routes(
            [
                *self._routes,
                truth_handler(self.venues),
                web.post("/_fake/control", self.control.handler()),
                *stats_routes(self.venues),
            ]
        )
        return app

    def _tend(self) -> None:
        now = time.monotonic()
        for venue in self.venues.values():
            venue.tend(now)
