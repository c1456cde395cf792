"""Pure parser for Alpaca's crypto market-data stream frames (JSON text frames).

Alpaca writes prices and sizes as JSON numbers. They are decoded with the standard library's
``json`` and ``parse_float=Decimal``, which hands the number's own text to ``Decimal`` (orjson, like
any float parser, would turn ``0.1`` into a binary approximation first), and rendered back in one
canonical form: plain decimal, no exponent, no trailing zeros (``71859.530`` and ``7.185953E+4``
are both ``71859.53``, zero is ``0``), so one price is one level and one published string whatever
the venue wrote. Negative numbers, NaN and infinities are refused. Timestamps are RFC-3339 with up
to nanosecond precision (``venues/timestamps.py``).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import cast

from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.venues.alpaca.schemas import (
    AlpacaControl,
    AlpacaError,
    AlpacaSubscription,
    AlpacaSuccess,
    ErrorMessage,
    OrderbookMessage,
    SubscriptionMessage,
    SuccessMessage,
)
from ingest_nodes.venues.timestamps import rfc3339_to_ms
from ingest_nodes.venues.wire import object_levels, str_field


def parse_alpaca_frame(raw: bytes | str, ingest_time: int) -> list[DepthUpdate | AlpacaControl]:
    """Read one frame: every order-book message and control message in it, in order.

    Example (a batch with a reset and an update)::

        [{"T":"o","S":"BTC/USD","t":"2024-03-12T10:38:50.79613221Z",
          "b":[{"p":71859.53,"s":0.27994}],"a":[{"p":71939.7,"s":0.83953}],"r":true},
         {"T":"o","S":"BTC/USD","t":"2024-03-12T10:38:50.801Z","b":[{"p":71859.53,"s":0}],"a":[]}]

    Control messages: ``[{"T":"success","msg":"authenticated"}]``,
    ``[{"T":"error","code":406,"msg":"connection limit exceeded"}]``,
    ``[{"T":"subscription","trades":[],"quotes":[],"orderbooks":["BTC/USD"],"bars":[]}]``.
    Other message types (trades, quotes, bars) are skipped.
    """
    try:
        decoded = json.loads(raw, parse_float=Decimal)
    except (ValueError, UnicodeDecodeError) as exc:
        raise VenuePayloadError(f"invalid JSON: {exc}") from exc
    messages = decoded if isinstance(decoded, list) else [decoded]
    parsed: list[DepthUpdate | AlpacaControl] = []
    for message in messages:
        if not isinstance(message, dict):
            raise VenuePayloadError("message is not a JSON object")
        kind = message.get("T")
        if kind == "o":
            parsed.append(_orderbook(cast(OrderbookMessage, message), ingest_time))
        elif kind == "success":
            parsed.append(AlpacaSuccess(msg=str_field(cast(SuccessMessage, message), "msg")))
        elif kind == "error":
            error = cast(ErrorMessage, message)
            code = error.get("code")
            if type(code) is not int:
                raise VenuePayloadError("error message without an integer code")
            parsed.append(AlpacaError(code=code, msg=str_field(error, "msg")))
        elif kind == "subscription":
            parsed.append(_subscription(cast(SubscriptionMessage, message)))
    return parsed


def _orderbook(message: OrderbookMessage, ingest_time: int) -> DepthUpdate:
    reset = message.get("r", False)
    if type(reset) is not bool:
        raise VenuePayloadError("orderbook 'r' is not a boolean")
    return DepthUpdate.unnumbered(
        str_field(message, "S"),
        rfc3339_to_ms(str_field(message, "t")),
        ingest_time,
        object_levels(message.get("b"), "b", "p", "s", _number),
        object_levels(message.get("a"), "a", "p", "s", _number),
        reset=reset,
    )


def _subscription(message: SubscriptionMessage) -> AlpacaSubscription:
    symbols = message.get("orderbooks", [])
    if not isinstance(symbols, list) or not all(isinstance(symbol, str) for symbol in symbols):
        raise VenuePayloadError("subscription 'orderbooks' is not a list of symbols")
    return AlpacaSubscription(orderbooks=tuple(symbols))


def _number(value: object, key: str) -> str:
    """A JSON number in canonical form: ``71859.530`` -> ``71859.53``, ``1E-7`` -> ``0.0000001``,
    ``0.0`` -> ``0`` (exact: no rounding context is involved)."""
    if type(value) is int and value >= 0:
        return str(value)
    if isinstance(value, Decimal) and value.is_finite() and value >= 0:
        if not value:
            return "0"
        text = format(value, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    raise VenuePayloadError(f"level {key!r} is missing or not a non-negative number")
