"""``POST /_fake/control``: faults switched on at run time, one JSON object per request.

``{"action": ..., "venue": "spot"|"futures"|"alpaca"|"okx"|"bybit"|"bybit-linear"|"kraken"|"coinbase",
"symbol": ...}``; the answer is ``{"ok": true, ...}`` or HTTP 400 ``{"error": ...}``. ``connection``
picks who is hit where it
applies: ``"all"`` (default), ``"one"`` (the oldest connection listening to the symbol, or the
oldest of the venue without a symbol) or a connection id from ``GET /_fake/connections``.

=================  ==========================================================================
action             fields (defaults)
=================  ==========================================================================
gap                symbol, count (1), connection: the next ``count`` events are withheld
duplicate          symbol, back (0), connection: an event sent again (``back`` > 0: an older one,
                   replayed after newer ones)
disconnect         symbol (any), connection, mode close|drop|slow (close), code (1000); slow is
                   the venue's slow-client exit (Alpaca: 407 then close; Binance: drop)
server_shutdown    Binance and OKX; symbol (any), connection: ``serverShutdown`` (OKX: the notice
                   64008) then close
max_connection_age seconds: connections older than this are closed (the venues' 24 h cut-off)
stall              symbol (all active), seconds: no updates at all, sockets stay open (quiet)
withhold           symbol, seconds, resume gap|replay (gap): updates made but sent to nobody
                   (a silent stall), then resumed with the gap or with the withheld ones first
cross              symbol, locked (false), updates (10): a bid at/above the best ask, then cleared
empty_book         symbol, side bids|asks|both (both): one update deleting every level
symbol_status      symbol, status: exchangeInfo shows it; only TRADING symbols move
rate               rate (events/s), symbol (venue-wide)
burst              count, symbol (every active symbol at once)
drift              symbol (venue-wide), ticks_per_s (0), turn_every_s (20), sweep_every_s (0),
                   sweep_levels (30): the mid walks ``ticks_per_s`` ticks a second, turning on
                   average every ``turn_every_s``, and every ``sweep_every_s`` one update deletes
                   the best ``sweep_levels`` levels of the side it walks into; a field left out
                   takes its default, so ``{"action": "drift", "venue": ...}`` alone is off
deep_activity      share (0..1), symbol (venue-wide): that share of each update's operations land
                   at a uniformly random depth of a side (0 = all near the touch)
book_levels        symbol, levels: the symbol's book gets that many levels a side when it is
                   built; refused once the symbol is in use (subscribed, fetched or controlled)
snapshot_delay_ms  ms, symbol (venue-wide)
snapshot_lag       updates, symbol (venue-wide): snapshots as of that many updates ago
http_status        status, count (1), retry_after (0): the next REST answers
weight_limit       limit
ack_delay_ms       ms: SUBSCRIBE/UNSUBSCRIBE acks held back, data goes first
snapshot_in_hole   futures; enabled (true): snapshot ids fall between two events' ranges
alpaca_reset       symbol (every subscribed one), connection, count (1): a full ``r: true`` book
                   now; count > 1 is a reset storm, each reset followed by one update
alpaca_limits      connection_limit, symbol_limit (0 = unlimited)
sequence_restart   okx, bybit*; symbol: its ids start over lower (OKX: the next update's seqId
                   below its prevSeqId; Bybit: a u=1 snapshot to every listener)
book_snapshot      okx, bybit*; symbol, connection: the book sent again as a snapshot now
kraken_checksum    symbol, count (1): the symbol's next ``count`` messages carry a wrong checksum
lose_message       kraken|coinbase; connection, count (1): the connection's next ``count`` messages
                   are lost (Kraken: book messages, snapshots included; Coinbase: of any channel,
                   with their numbers)
reset              venue (all): every fault above back to the start-up settings
=================  ==========================================================================
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import orjson
from aiohttp import web

from fake_venue.alpaca.venue import AlpacaVenue
from fake_venue.binance.venue import BinanceVenue
from fake_venue.chained.venue import ChainedVenue
from fake_venue.coinbase.venue import CoinbaseVenue
from fake_venue.config import Drift
from fake_venue.kraken.venue import KrakenVenue
from fake_venue.market.generator import ChangeSet
from fake_venue.market.markets import Market
from fake_venue.market.scheduler import Scheduler
from fake_venue.okx.venue import OkxVenue
from fake_venue.registry import Venue
from fake_venue.server.connection import Connection

ConnT = TypeVar("ConnT", bound=Connection)


class ControlError(Exception):
    """A control request that cannot be carried out; answered with 400."""


class Control:
    """Carries out control actions on the venues."""

    def __init__(self, venues: dict[str, Venue], scheduler: Scheduler) -> None:
        self.venues = venues
        self.scheduler = scheduler
        self._actions: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "gap": self.gap,
            "duplicate": self.duplicate,
            "disconnect": self.disconnect,
            "server_shutdown": self.server_shutdown,
            "max_connection_age": self.max_connection_age,
            "stall": self.stall,
            "withhold": self.withhold,
            "cross": self.cross,
            "empty_book": self.empty_book,
            "symbol_status": self.symbol_status,
            "rate": self.rate,
            "burst": self.burst,
            "drift": self.drift,
            "deep_activity": self.deep_activity,
            "book_levels": self.book_levels,
            "snapshot_delay_ms": self.snapshot_delay,
            "snapshot_lag": self.snapshot_lag,
            "http_status": self.http_status,
            "weight_limit": self.weight_limit,
            "ack_delay_ms": self.ack_delay,
            "snapshot_in_hole": self.snapshot_in_hole,
            "alpaca_reset": self.alpaca_reset,
            "sequence_restart": self.sequence_restart,
            "book_snapshot": self.book_snapshot,
            "alpaca_limits": self.alpaca_limits,
            "kraken_checksum": self.kraken_checksum,
            "lose_message": self.lose_message,
            "reset": self.reset,
        }

    def handler(self) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def control(request: web.Request) -> web.Response:
            try:
                params = orjson.loads(await request.read())
                if not isinstance(params, dict):
                    raise ControlError("the body must be a JSON object")
                action = self._actions.get(params.get("action", ""))
                if action is None:
                    raise ControlError(f"action must be one of {sorted(self._actions)}")
                return web.json_response({"ok": True, **action(params)})
            except orjson.JSONDecodeError:
                return web.json_response({"error": "the body is not JSON"}, status=400)
            except ControlError as error:
                return web.json_response({"error": str(error)}, status=400)

        return control

    # -- per-symbol stream faults

    def gap(self, params: dict[str, Any]) -> dict[str, Any]:
        venue, market = self._venue(params), self._market(params)
        count = _int(params, "count", 1)
        if params.get("connection", "all") == "all":
            market.skip_next += count
            return {"connections": "all"}
        hit = self._pick(venue.listeners_of(market.name), params)
        for conn in hit:
            conn.skip[market.name] = conn.skip.get(market.name, 0) + count
        return {"connections": [conn.id for conn in hit]}

    def duplicate(self, params: dict[str, Any]) -> dict[str, Any]:
        venue, market = self._venue(params), self._market(params)
        back = _int(params, "back", 0)
        if params.get("connection", "all") == "all":
            return {"resent": venue.duplicate(market, None, back)}
        if isinstance(venue, BinanceVenue):
            hit_binance = self._pick(venue.listeners_of(market.name), params)
            return {"resent": sum(venue.duplicate(market, conn, back) for conn in hit_binance)}
        if isinstance(venue, ChainedVenue):
            hit_chained = self._pick(venue.listeners_of(market.name), params)
            return {"resent": sum(venue.duplicate(market, conn, back) for conn in hit_chained)}
        if isinstance(venue, KrakenVenue):
            hit_kraken = self._pick(venue.listeners_of(market.name), params)
            return {"resent": sum(venue.duplicate(market, conn, back) for conn in hit_kraken)}
        if isinstance(venue, CoinbaseVenue):
            hit_coinbase = self._pick(venue.listeners_of(market.name), params)
            return {"resent": sum(venue.duplicate(market, conn, back) for conn in hit_coinbase)}
        hit_alpaca = self._pick(venue.listeners_of(market.name), params)
        return {"resent": sum(venue.duplicate(market, conn, back) for conn in hit_alpaca)}

    def stall(self, params: dict[str, Any]) -> dict[str, Any]:
        venue = self._venue(params)
        seconds = _number(params, "seconds")
        markets = [self._market(params)] if "symbol" in params else list(venue.markets.active.values())
        until = asyncio.get_running_loop().time() + seconds
        for market in markets:
            market.stall_until = until
            self.scheduler.reschedule(market, venue)
        return {"symbols": [market.name for market in markets]}

    def withhold(self, params: dict[str, Any]) -> dict[str, Any]:
        venue, market = self._venue(params), self._market(params)
        seconds = _number(params, "seconds")
        resume = params.get("resume", "gap")
        if resume not in ("gap", "replay"):
            raise ControlError('resume must be "gap" or "replay"')
        market.withhold_until = time.monotonic() + seconds
        market.withheld = [] if resume == "replay" else None

        def release() -> None:
            for update in market.release_withheld():
                venue.send(market, update)

        asyncio.get_running_loop().call_later(seconds, release)
        return {"until_s": seconds, "resume": resume}

    def cross(self, params: dict[str, Any]) -> dict[str, Any]:
        market = self._market(params)
        market.cross_pending = bool(params.get("locked", False))
        market.cross_updates = _int(params, "updates", 10)
        return {}

    def empty_book(self, params: dict[str, Any]) -> dict[str, Any]:
        venue, market = self._venue(params), self._market(params)
        side = params.get("side", "both")
        if side not in ("bids", "asks", "both"):
            raise ControlError("side must be bids, asks or both")

        def empty(changes: ChangeSet) -> None:
            market.empty_side(changes, bids=side != "asks", asks=side != "bids")

        update = market.step(extra=empty, generate=False)
        if isinstance(venue, BinanceVenue):
            venue.publish(market, update)
        else:
            venue.send_update(market, update)
        return {"update_id": update.last_id}

    def symbol_status(self, params: dict[str, Any]) -> dict[str, Any]:
        venue, status = self._venue(params), params.get("status")
        name = params.get("symbol")
        if not isinstance(status, str) or not status or name not in venue.markets.specs:
            raise ControlError("symbol_status needs a listed symbol and a status")
        venue.markets.set_status(name, status)
        return {}

    def rate(self, params: dict[str, Any]) -> dict[str, Any]:
        venue, rate = self._venue(params), _number(params, "rate")
        if "symbol" in params:
            market = self._market(params)
            market.rate = rate
            self.scheduler.reschedule(market, venue)
        else:
            venue.markets.motion.rate = rate
            for market in venue.markets.active.values():
                self.scheduler.reschedule(market, venue)
        return {}

    def burst(self, params: dict[str, Any]) -> dict[str, Any]:
        venue, count = self._venue(params), _int(params, "count", 5)
        markets = [self._market(params)] if "symbol" in params else list(venue.markets.active.values())
        for market in markets:
            if market.trading:
                venue.burst(market, count)
        return {"symbols": len(markets)}

    def drift(self, params: dict[str, Any]) -> dict[str, Any]:
        venue, off = self._venue(params), Drift()
        drift = Drift(
            ticks_per_s=_number(params, "ticks_per_s", off.ticks_per_s),
            turn_every_s=_number(params, "turn_every_s", off.turn_every_s),
            sweep_every_s=_number(params, "sweep_every_s", off.sweep_every_s),
            sweep_levels=_int(params, "sweep_levels", off.sweep_levels),
        )
        if drift.sweep_levels < 1:
            raise ControlError("sweep_levels must be at least 1")
        if "symbol" in params:
            self._market(params).drift = drift
        else:
            venue.markets.motion.drift = drift
        return {"drift": dataclasses.asdict(drift)}

    def deep_activity(self, params: dict[str, Any]) -> dict[str, Any]:
        venue, share = self._venue(params), _number(params, "share")
        if share > 1:
            raise ControlError("share must be between 0 and 1")
        if "symbol" in params:
            self._market(params).deep_share = share
        else:
            venue.markets.motion.deep_share = share
        return {}

    def book_levels(self, params: dict[str, Any]) -> dict[str, Any]:
        markets, name, levels = self._venue(params).markets, params.get("symbol"), _int(params, "levels")
        if name not in markets.specs:
            raise ControlError(f"{markets.venue} lists no symbol {name!r}")
        if name in markets.active:
            raise ControlError(f"{name} is in use already; its book keeps its depth")
        if levels < 1:
            raise ControlError("levels must be at least 1")
        markets.levels[name] = levels
        return {}

    # -- connections

    def disconnect(self, params: dict[str, Any]) -> dict[str, Any]:
        venue = self._venue(params)
        hit = self._pick(venue.listeners_of(self._symbol_or_none(params)), params)
        mode = params.get("mode", "close")
        if mode not in ("close", "drop", "slow"):
            raise ControlError("mode must be close, drop or slow")
        for conn in hit:
            if mode == "close":
                conn.close(_int(params, "code", 1000), "closed by control")
            elif mode == "drop":
                conn.drop()
            else:
                conn.on_slow_client()
        return {"connections": [conn.id for conn in hit]}

    def max_connection_age(self, params: dict[str, Any]) -> dict[str, Any]:
        self._venue(params).max_connection_age_s = _number(params, "seconds")
        return {}

    def server_shutdown(self, params: dict[str, Any]) -> dict[str, Any]:
        venue = self._venue(params)
        if isinstance(venue, OkxVenue):
            hit_okx = self._pick(venue.listeners_of(self._symbol_or_none(params)), params)
            venue.server_shutdown(hit_okx)
            return {"connections": [conn.id for conn in hit_okx]}
        binance = self._binance(params)
        hit = self._pick(binance.listeners_of(self._symbol_or_none(params)), params)
        binance.server_shutdown(hit)
        return {"connections": [conn.id for conn in hit]}

    def sequence_restart(self, params: dict[str, Any]) -> dict[str, Any]:
        """OKX and Bybit: the symbol's ids start over lower (OKX with its next update, Bybit with a
        ``u`` = 1 snapshot to every listener at once)."""
        venue, market = self._chained(params), self._market(params)
        venue.restart_ids(market)
        return {}

    def book_snapshot(self, params: dict[str, Any]) -> dict[str, Any]:
        """OKX and Bybit: the venue sends the symbol's book as a snapshot now (Bybit does when it had
        a problem), to the picked connections."""
        venue, market = self._chained(params), self._market(params)
        hit = self._pick(venue.listeners_of(market.name), params)
        venue.resend_books(market, hit)
        return {"connections": [conn.id for conn in hit]}

    def alpaca_reset(self, params: dict[str, Any]) -> dict[str, Any]:
        venue = self.venues["alpaca"]
        assert isinstance(venue, AlpacaVenue)
        if "symbol" in params:
            markets = [self._market({**params, "venue": "alpaca"})]
        else:
            markets = [market for name, market in venue.markets.active.items() if venue.listeners_of(name)]
        hit: set[int] = set()
        for market in markets:
            conns = self._pick(venue.listeners_of(market.name), params)
            venue.reset(market, conns, _int(params, "count", 1))
            hit.update(conn.id for conn in conns)
        return {"symbols": [market.name for market in markets], "connections": sorted(hit)}

    def alpaca_limits(self, params: dict[str, Any]) -> dict[str, Any]:
        venue = self.venues["alpaca"]
        assert isinstance(venue, AlpacaVenue)
        venue.connection_limit = _int(params, "connection_limit", venue.connection_limit)
        venue.symbol_limit = _int(params, "symbol_limit", venue.symbol_limit)
        return {}

    def kraken_checksum(self, params: dict[str, Any]) -> dict[str, Any]:
        venue = self.venues["kraken"]
        assert isinstance(venue, KrakenVenue)
        market = self._market({**params, "venue": "kraken"})
        venue.corrupt_next[market.name] = venue.corrupt_next.get(market.name, 0) + _int(params, "count", 1)
        return {"symbol": market.name}

    def lose_message(self, params: dict[str, Any]) -> dict[str, Any]:
        venue = self._venue(params)
        count = _int(params, "count", 1)
        if isinstance(venue, KrakenVenue):
            hit_kraken = self._pick(venue.listeners_of(self._symbol_or_none(params)), params)
            for kraken_conn in hit_kraken:
                kraken_conn.lose_next += count
            return {"connections": [conn.id for conn in hit_kraken]}
        if not isinstance(venue, CoinbaseVenue):
            raise ControlError("lose_message applies to kraken and coinbase only")
        hit = self._pick(venue.listeners_of(self._symbol_or_none(params)), params)
        for conn in hit:
            conn.lose_next += count
        return {"connections": [conn.id for conn in hit]}

    # -- REST and acks (Binance)

    def snapshot_delay(self, params: dict[str, Any]) -> dict[str, Any]:
        self._binance(params).faults.snapshot_delay_ms[self._symbol_or_none(params)] = _int(params, "ms")
        return {}

    def snapshot_lag(self, params: dict[str, Any]) -> dict[str, Any]:
        self._binance(params).faults.snapshot_lag[self._symbol_or_none(params)] = _int(params, "updates")
        return {}

    def http_status(self, params: dict[str, Any]) -> dict[str, Any]:
        venue = self._binance(params)
        status = _int(params, "status")
        if not 100 <= status <= 599:
            raise ControlError("status must be an HTTP status")
        venue.faults.force(status, _int(params, "count", 1), _int(params, "retry_after", 0))
        return {"queued": len(venue.faults.forced)}

    def weight_limit(self, params: dict[str, Any]) -> dict[str, Any]:
        self._binance(params).weights.limit = _int(params, "limit")
        return {}

    def ack_delay(self, params: dict[str, Any]) -> dict[str, Any]:
        self._binance(params).faults.ack_delay_ms = _int(params, "ms")
        return {}

    def snapshot_in_hole(self, params: dict[str, Any]) -> dict[str, Any]:
        venue = self._binance(params)
        if venue.name != "futures":
            raise ControlError("only futures ids have holes")
        venue.faults.snapshot_in_hole = bool(params.get("enabled", True))
        return {}

    def reset(self, params: dict[str, Any]) -> dict[str, Any]:
        names = [params["venue"]] if "venue" in params else list(self.venues)
        for name in names:
            venue = self.venues.get(name)
            if venue is None:
                raise ControlError(f"venue must be one of {sorted(self.venues)}")
            _reset_venue(venue)
            for market in venue.markets.active.values():
                self.scheduler.reschedule(market, venue)
        return {"venues": names}

    # -- parameter helpers

    def _venue(self, params: dict[str, Any]) -> Venue:
        venue = self.venues.get(params.get("venue", ""))
        if venue is None:
            raise ControlError(f"venue must be one of {sorted(self.venues)}")
        return venue

    def _chained(self, params: dict[str, Any]) -> ChainedVenue:
        venue = self._venue(params)
        if not isinstance(venue, ChainedVenue):
            raise ControlError("this action applies to okx, bybit and bybit-linear only")
        return venue

    def _binance(self, params: dict[str, Any]) -> BinanceVenue:
        venue = self._venue(params)
        if not isinstance(venue, BinanceVenue):
            raise ControlError("this action applies to spot and futures only")
        return venue

    def _market(self, params: dict[str, Any]) -> Market:
        venue = self._venue(params)
        market = venue.markets.get(params.get("symbol", ""))
        if market is None:
            raise ControlError(f"{venue.name} lists no symbol {params.get('symbol')!r}")
        return market

    def _symbol_or_none(self, params: dict[str, Any]) -> str | None:
        return self._market(params).name if "symbol" in params else None

    @staticmethod
    def _pick(conns: Sequence[ConnT], params: dict[str, Any]) -> list[ConnT]:
        which = params.get("connection", "all")
        if which == "all":
            return list(conns)
        if which == "one":
            return list(conns[:1])
        if isinstance(which, int) and not isinstance(which, bool):
            return [conn for conn in conns if conn.id == which]
        raise ControlError('connection must be "all", "one" or a connection id')


def _reset_venue(venue: Venue) -> None:
    venue.markets.reset()
    venue.max_connection_age_s = venue.config.max_connection_age_s
    for market in venue.markets.active.values():
        market.rate = None
        market.drift = None
        market.deep_share = None
        market.stall_until = 0.0
        market.skip_next = 0
        market.release_withheld()
        market.cross_pending = None
    for conn in venue.connections.values():
        conn.skip.clear()
    if isinstance(venue, BinanceVenue):
        venue.faults.clear()
        venue.weights.limit = venue.dialect.limits.weight_limit
        venue.weights.clear()
    elif isinstance(venue, AlpacaVenue):
        venue.connection_limit = venue.config.alpaca_connection_limit
        venue.symbol_limit = venue.config.alpaca_symbol_limit
    elif isinstance(venue, KrakenVenue):
        venue.corrupt_next.clear()
        for kraken_conn in venue.connections.values():
            kraken_conn.lose_next = 0
    elif isinstance(venue, CoinbaseVenue):
        for conn in venue.connections.values():
            conn.lose_next = 0


def _int(params: dict[str, Any], key: str, default: int | None = None) -> int:
    value = params.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ControlError(f"{key} must be a non-negative integer")
    return value


def _number(params: dict[str, Any], key: str, default: float | None = None) -> float:
    value = params.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise ControlError(f"{key} must be a non-negative number")
    return float(value)
