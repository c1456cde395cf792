"""Binance REST: depth snapshots, exchangeInfo, ping and time, behind the weight rules and faults.

Every answer, refusals included, carries ``X-MBX-USED-WEIGHT-1M``. Order of checks, as on the
venue: the request is priced (a bad ``limit`` is priced as the default), a forced status from the
``http_status`` fault is served if one is queued, then the weight ledger may refuse (429 / 418 with
``Retry-After``), and only then are parameters and the symbol checked (``-1121 Invalid symbol.``).

A snapshot is taken when the request is served; ``snapshot_lag`` serves the book as of n updates
earlier (from history) and ``snapshot_delay_ms`` holds the answer back, so the snapshot reaches
the client older than the stream. ``snapshot_in_hole`` (futures) reports an id between two
events, which no event's ``[U, u]`` covers: the undocumented corner a client must resolve.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
from aiohttp import web

from fake_venue.binance.dialect import BinanceError, invalid_symbol
from fake_venue.binance.venue import BinanceVenue
from fake_venue.binance.weights import Verdict

USED_WEIGHT = "X-MBX-USED-WEIGHT-1M"
USED_WEIGHT_PLAIN = "X-MBX-USED-WEIGHT"
"""Binance sends the count under both names."""


class BinanceRest:
    """The REST routes of one Binance venue."""

    def __init__(self, venue: BinanceVenue) -> None:
        self.venue = venue
        self._info_cache: tuple[int, int, dict[str, bytes]] = (-1, -1, {})

    def routes(self) -> list[web.RouteDef]:
        prefix = self.venue.dialect.rest_prefix
        return [
            web.get(f"{prefix}/depth", self.depth),
            web.get(f"{prefix}/exchangeInfo", self.exchange_info),
            web.get(f"{prefix}/ping", self.ping),
            web.get(f"{prefix}/time", self.server_time),
        ]

    async def depth(self, request: web.Request) -> web.Response:
        dialect = self.venue.dialect
        problem: BinanceError | None = None
        try:
            limit, weight = dialect.depth_limit(request.query.get("limit"))
        except BinanceError as error:
            problem, (limit, weight) = error, dialect.depth_limit(None)
        verdict = self._admit(request, weight)
        if verdict.status != 200:
            return self._refusal(verdict)
        if problem is not None:
            return self._error(problem, verdict)
        symbol = request.query.get("symbol")
        if not symbol:
            return self._error(_missing("symbol"), verdict)
        market = self.venue.markets.get(symbol)
        if market is None:
            return self._error(invalid_symbol(), verdict)
        wanted_status = request.query.get("symbolStatus")
        if wanted_status is not None and wanted_status != market.status:
            return self._error(
                BinanceError(400, -1220, "The symbol's status does not match the requested symbolStatus."),
                verdict,
            )
        faults = self.venue.faults
        last_id, book = market.last_id, market.book
        lag = faults.lag(symbol)
        if lag > 0:
            last_id = market.history.id_back(lag)
            book = market.history.state_at(market.book, market.last_id, last_id)
        elif faults.snapshot_in_hole and dialect.venue == "futures":
            last_id += 1  # futures ids skip at least one after each update, so nothing used this id
        body = dialect.encode_snapshot(
            market, last_id, book.bids.levels(limit), book.asks.levels(limit), int(time.time() * 1000)
        )
        delay_ms = faults.delay_ms(symbol)
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)
        return self._ok(body, verdict)

    async def exchange_info(self, request: web.Request) -> web.Response:
        verdict = self._admit(request, self.venue.dialect.exchange_info_weight)
        if verdict.status != 200:
            return self._refusal(verdict)
        try:
            names = self._selected_symbols(request.query)
        except BinanceError as error:
            return self._error(error, verdict)
        entries = self._symbol_entries()
        head = self.venue.dialect.exchange_info_head(self.venue.weights.limit)
        body = {
            "timezone": head.pop("timezone"),
            "serverTime": int(time.time() * 1000),
            **head,
            "symbols": orjson.Fragment(b"[" + b",".join(entries[name] for name in names) + b"]"),
        }
        return self._ok(orjson.dumps(body), verdict)

    async def ping(self, request: web.Request) -> web.Response:
        verdict = self._admit(request, 1)
        return self._ok(b"{}", verdict) if verdict.status == 200 else self._refusal(verdict)

    async def server_time(self, request: web.Request) -> web.Response:
        verdict = self._admit(request, 1)
        if verdict.status != 200:
            return self._refusal(verdict)
        return self._ok(orjson.dumps({"serverTime": int(time.time() * 1000)}), verdict)

    def _selected_symbols(self, query: Any) -> list[str]:
        """Names asked for through ``symbol``, ``symbols`` or ``symbolStatus`` (spot), else all."""
        markets = self.venue.markets
        single, several, status = query.get("symbol"), query.get("symbols"), query.get("symbolStatus")
        if status is not None and (single is not None or several is not None):
            raise BinanceError(400, -1128, "Combination of optional parameters invalid.")
        if single is not None:
            names = [single]
        elif several is not None:
            try:
                names = orjson.loads(several)
            except orjson.JSONDecodeError:
                raise BinanceError(400, -1100, "Illegal characters found in parameter 'symbols'.") from None
            if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
                raise BinanceError(400, -1100, "Illegal characters found in parameter 'symbols'.")
        else:
            return [name for name in markets.specs if status is None or markets.statuses[name] == status]
        if any(name not in markets.specs for name in names):
            raise invalid_symbol()
        return names

    def _symbol_entries(self) -> dict[str, bytes]:
        """Encoded exchangeInfo entries, rebuilt only when a status or the weight limit changed."""
        markets = self.venue.markets
        version, limit, entries = self._info_cache
        if version != markets.catalogue_version or limit != self.venue.weights.limit or not entries:
            dialect = self.venue.dialect
            entries = {
                name: orjson.dumps(dialect.symbol_info(spec, markets.statuses[name]))
                for name, spec in markets.specs.items()
            }
            self._info_cache = (markets.catalogue_version, self.venue.weights.limit, entries)
        return entries

    def _admit(self, request: web.Request, weight: int) -> Verdict:
        self.venue.rest_requests += 1
        ip = request.remote or "unknown"
        now = time.time()
        forced = self.venue.faults.take_forced()
        if forced is not None:
            return Verdict(forced.status, self.venue.weights.used(ip, now), forced.retry_after)
        return self.venue.weights.charge(ip, weight, now)

    def _refusal(self, verdict: Verdict) -> web.Response:
        limit = self.venue.weights.limit
        if verdict.status == 429:
            msg = (
                f"Too much request weight used; current limit is {limit} request weight per 1 MINUTE. "
                "Please use WebSocket Streams for live updates to avoid polling the API."
            )
            code = -1003
        elif verdict.status == 418:
            until = verdict.banned_until_ms or int((time.time() + verdict.retry_after) * 1000)
            msg = (
                f"Way too much request weight used; IP banned until {until}. "
                "Please use WebSocket Streams for live updates to avoid bans."
            )
            code = -1003
        else:
            msg, code = "An unknown error occurred while processing the request.", -1000
        response = self._json(verdict.status, orjson.dumps({"code": code, "msg": msg}), verdict)
        if verdict.retry_after > 0:
            response.headers["Retry-After"] = str(verdict.retry_after)
        return response

    def _error(self, error: BinanceError, verdict: Verdict) -> web.Response:
        return self._json(error.status, orjson.dumps({"code": error.code, "msg": error.msg}), verdict)

    def _ok(self, body: bytes, verdict: Verdict) -> web.Response:
        return self._json(200, body, verdict)

    @staticmethod
    def _json(status: int, body: bytes, verdict: Verdict) -> web.Response:
        return web.Response(
            status=status,
            body=body,
            content_type="application/json",
            headers={USED_WEIGHT: str(verdict.used), USED_WEIGHT_PLAIN: str(verdict.used)},
        )


def _missing(name: str) -> BinanceError:
    return BinanceError(
        400, -1102, f"Mandatory parameter '{name}' was not sent, was empty/null, or malformed."
    )
