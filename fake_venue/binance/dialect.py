"""What differs between Binance spot and USD-M futures, behind one interface.

The two markets share the WebSocket request protocol, the weight rules and the sync procedure, and
differ in small, client-visible ways: paths, stream cadences, depth limits and their weights, the
event fields (futures adds ``T`` and ``pu``), how numbers are written, how ids are numbered and what
exchangeInfo holds. Each difference is one method or attribute of a ``BinanceDialect``; the venue,
REST and WebSocket code are written once against it.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any

import orjson

from fake_venue.binance.streams import StreamForm
from fake_venue.config import BinanceLimits, VenueConfig
from fake_venue.market.book import Levels
from fake_venue.market.decimal_text import LevelStyle
from fake_venue.market.markets import IdSource, Market, Update
from fake_venue.market.symbols import SymbolSpec


class BinanceError(Exception):
    """A Binance error answer: HTTP status plus the ``{"code", "msg"}`` body."""

    def __init__(self, status: int, code: int, msg: str) -> None:
        super().__init__(msg)
        self.status = status
        self.code = code
        self.msg = msg


def invalid_symbol() -> BinanceError:
    return BinanceError(400, -1121, "Invalid symbol.")


def bad_parameter(name: str) -> BinanceError:
    return BinanceError(
        400, -1100, f"Illegal characters found in parameter '{name}'; legal range is '^[0-9]{{1,20}}$'."
    )


def parse_int(raw: str, name: str) -> int:
    if not raw.isdigit() or len(raw) > 20:
        raise bad_parameter(name)
    return int(raw)


class BinanceDialect(ABC):
    """The spot/futures differences; one instance per venue."""

    venue: str
    rest_prefix: str
    ws_prefix: str
    forms: tuple[StreamForm, ...]
    exchange_info_weight: int
    order_types: tuple[str, ...]

    def __init__(self, config: VenueConfig) -> None:
        self.config = config

    @property
    @abstractmethod
    def limits(self) -> BinanceLimits: ...

    @abstractmethod
    def catalogue(self) -> list[SymbolSpec]: ...

    @abstractmethod
    def id_source(self, rng: random.Random) -> IdSource: ...

    @abstractmethod
    def style_for(self, spec: SymbolSpec) -> LevelStyle: ...

    @abstractmethod
    def depth_limit(self, raw: str | None) -> tuple[int, int]:
        """The effective snapshot depth for a ``limit`` parameter, and its request weight."""

    @abstractmethod
    def event_fields(self, market: Market, event: Update, event_time: int) -> dict[str, Any]:
        """A depthUpdate's fields, levels excluded; ``event_time`` is already in the asked unit."""

    @abstractmethod
    def snapshot_fields(self, market: Market, last_id: int, now_ms: int) -> dict[str, Any]:
        """A depth snapshot's fields, levels excluded."""

    @abstractmethod
    def symbol_info(self, spec: SymbolSpec, status: str) -> dict[str, Any]:
        """One entry of exchangeInfo's ``symbols``."""

    @abstractmethod
    def exchange_info_head(self, weight_limit: int) -> dict[str, Any]:
        """exchangeInfo's fields before ``symbols`` (``serverTime`` is added per request)."""

    @abstractmethod
    def valid_request_id(self, value: object) -> bool: ...

    def encode_event(self, market: Market, event: Update, micro: bool) -> bytes:
        style = market.style
        body = self.event_fields(market, event, event.t_ns // 1000 if micro else event.event_ms)
        frame = event.frame
        if frame is None:
            body["b"] = style.levels(event.bids)
            body["a"] = style.levels(event.asks)
            return orjson.dumps(body)
        if frame.body is None:  # a recorded frame's levels, written once for every turn of its cycle
            levels = orjson.dumps({"b": style.levels(frame.bids), "a": style.levels(frame.asks)})
            frame.body = b"," + levels[1:]
        return orjson.dumps(body)[:-1] + frame.body

    def encode_snapshot(
        self,
        market: Market,
        last_id: int,
        bids: Levels,
        asks: Levels,
        now_ms: int,
    ) -> bytes:
        style = market.style
        body = self.snapshot_fields(market, last_id, now_ms)
        body["bids"] = style.levels(bids)
        body["asks"] = style.levels(asks)
        return orjson.dumps(body)

    def form_for(self, suffix: str) -> int | None:
        for index, form in enumerate(self.forms):
            if form.suffix == suffix:
                return index
        return None
