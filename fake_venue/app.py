"""``FakeVenue``: Binance spot, Binance USD-M futures and Alpaca crypto on one local port.

Where a client points (``base`` is what ``start`` returns, ``http://host:port``):

=====================  ====================================================
Binance spot REST      ``base`` (``/api/v3/depth``, ``/api/v3/exchangeInfo``)
Binance spot streams   ``ws://host:port`` (``/ws``, ``/ws/<streams>``, ``/stream?streams=``)
Binance futures REST   ``base`` (``/fapi/v1/depth``, ``/fapi/v1/exchangeInfo``)
Binance futures WS     ``ws://host:port/public`` (``/public/ws``, ``/public/stream?streams=``)
Alpaca crypto stream   ``ws://host:port/v1beta3/crypto/{us,us-1,eu-1}`` (one feed)
Alpaca trading API     ``base`` (``/v2/assets?asset_class=crypto``)
test-only              ``/_fake/book``, ``/_fake/control``, ``/_fake/stats``, ``/_fake/connections``
=====================  ====================================================

Run it in-process (``await venue.start()`` ... ``await venue.stop()``) or as
``python -m fake_venue``. One scheduler task drives every symbol of the three venues.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from aiohttp import web

from fake_venue import alpaca_ws, binance_ws
from fake_venue.alpaca_venue import AlpacaVenue
from fake_venue.binance_futures import FuturesDialect
from fake_venue.binance_rest import BinanceRest
from fake_venue.binance_spot import SpotDialect
from fake_venue.binance_venue import BinanceVenue
from fake_venue.config import VenueConfig
from fake_venue.control import Control
from fake_venue.scheduler import Scheduler
from fake_venue.stats import stats_routes
from fake_venue.truth import truth_handler

TEND_PERIOD_S = 0.1
GOING_AWAY = 1001


class FakeVenue:
    """The whole fake venue: build it, ``start`` it, point clients at its URLs, ``stop`` it."""

    def __init__(self, config: VenueConfig | None = None) -> None:
        self.config = config or VenueConfig()
        self.scheduler = Scheduler()
        self.spot = BinanceVenue(SpotDialect(self.config), self.config, self.scheduler)
        self.futures = BinanceVenue(FuturesDialect(self.config), self.config, self.scheduler)
        self.alpaca = AlpacaVenue(self.config, self.scheduler)
        self.venues: dict[str, BinanceVenue | AlpacaVenue] = {
            "spot": self.spot,
            "futures": self.futures,
            "alpaca": self.alpaca,
        }
        self.control = Control(self.venues, self.scheduler)
        self._rests = {"spot": BinanceRest(self.spot), "futures": BinanceRest(self.futures)}
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

    def _application(self) -> web.Application:
        app = web.Application()
        for venue in (self.spot, self.futures):
            app.add_routes(_stream_routes(venue))
        for rest in self._rests.values():
            app.add_routes(rest.routes())

        async def alpaca(request: web.Request) -> web.StreamResponse:
            return await alpaca_ws.serve(self.alpaca, request)

        async def assets(request: web.Request) -> web.Response:
            return alpaca_ws.assets(self.alpaca, request)

        app.add_routes(
            [
                *(web.get(f"/v1beta3/crypto/{location}", alpaca) for location in alpaca_ws.LOCATIONS),
                web.get("/v2/assets", assets),
                truth_handler(self.venues),
                web.post("/_fake/control", self.control.handler()),
                *stats_routes(self.venues, self._rests),
            ]
        )
        return app

    def _tend(self) -> None:
        now = time.monotonic()
        for venue in self.venues.values():
            venue.tend(now)


def _stream_routes(venue: BinanceVenue) -> list[web.RouteDef]:
    prefix = venue.dialect.ws_prefix

    async def raw(request: web.Request) -> web.StreamResponse:
        path = request.match_info.get("streams", "")
        return await binance_ws.serve(venue, request, [s for s in path.split("/") if s], combined=False)

    async def combined(request: web.Request) -> web.StreamResponse:
        names = request.query.get("streams", "")
        return await binance_ws.serve(venue, request, [s for s in names.split("/") if s], combined=True)

    return [
        web.get(f"{prefix}/ws", raw),
        web.get(f"{prefix}/ws/{{streams:.+}}", raw),
        web.get(f"{prefix}/stream", combined),
    ]
