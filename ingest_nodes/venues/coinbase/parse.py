"""Pure parser for Coinbase Advanced Trade's WebSocket frames (JSON text frames, one object each).

Prices and sizes are strings and stay the venue's strings (orjson, as for Binance). A book's
``event_time`` is the message's ``timestamp`` (the snapshot's levels carry the epoch as theirs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, cast

from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthUpdate, Level
from ingest_nodes.venues.coinbase.schemas import ChannelMessage, CoinbaseMessage, ErrorMessage, L2Event
from ingest_nodes.venues.timestamps import rfc3339_to_ms
from ingest_nodes.venues.wire import json_object, loads

_BID: Final = "bid"
_ASK: Final = frozenset({"offer", "ask"})


def parse_coinbase_frame(raw: bytes | str, ingest_time: int) -> CoinbaseMessage:
    """Read one frame.

    Example (a snapshot, cut to two levels)::

        {"channel":"l2_data","client_id":"","timestamp":"2023-02-09T20:32:50.714964855Z",
         "sequence_num":1,"events":[{"type":"snapshot","product_id":"BTC-USD","updates":[
           {"side":"bid","event_time":"1970-01-01T00:00:00Z","price_level":"21921.73",
            "new_quantity":"0.06317902"},
           {"side":"offer","event_time":"1970-01-01T00:00:00Z","price_level":"21921.74",
            "new_quantity":"1.5"}]}]}

    Others: ``{"channel":"heartbeats",...,"sequence_num":2,"events":[{"current_time":"...",
    "heartbeat_counter":"3049"}]}``, ``{"channel":"subscriptions",...,"sequence_num":0,"events":
    [{"subscriptions":{"level2":["BTC-USD"],"heartbeats":["heartbeats"]}}]}``, and
    ``{"type":"error","message":"..."}``. Channels Ladder does not use still count their numbers.
    """
    message = json_object(loads(raw), "frame")
    if message.get("type") == "error":
        error = cast(ErrorMessage, message)
        return CoinbaseMessage(_number(message), error=str(error.get("message", "error"))[:200])
    channel_message = cast(ChannelMessage, message)
    sequence_num = _number(message)
    if sequence_num is None:
        raise VenuePayloadError("message without an integer 'sequence_num'")
    channel = channel_message.get("channel")
    if channel == "l2_data":
        return CoinbaseMessage(sequence_num, updates=_l2(channel_message, ingest_time))
    return CoinbaseMessage(
        sequence_num, subscriptions=channel == "subscriptions", heartbeat=channel == "heartbeats"
    )


def _number(message: Mapping[str, object]) -> int | None:
    sequence_num = message.get("sequence_num")
    return sequence_num if type(sequence_num) is int else None


def _l2(message: ChannelMessage, ingest_time: int) -> tuple[DepthUpdate, ...]:
    timestamp = message.get("timestamp")
    if not isinstance(timestamp, str):
        raise VenuePayloadError("l2_data 'timestamp' is missing or not a string")
    event_time = rfc3339_to_ms(timestamp)
    events = message.get("events")
    if not isinstance(events, list):
        raise VenuePayloadError("l2_data 'events' is missing or not a list")
    return tuple(_event(cast(L2Event, event), event_time, ingest_time) for event in events)


def _event(event: L2Event, event_time: int, ingest_time: int) -> DepthUpdate:
    if not isinstance(event, dict):
        raise VenuePayloadError("l2_data holds an event that is not an object")
    kind = event.get("type")
    if kind not in ("snapshot", "update"):
        raise VenuePayloadError(f"l2_data event of unknown type {str(kind)[:20]!r}")
    product = event.get("product_id")
    rows = event.get("updates")
    if not isinstance(product, str) or not isinstance(rows, list):
        raise VenuePayloadError("l2_data event without a product_id and a list of updates")
    bids: list[Level] = []
    asks: list[Level] = []
    for row in rows:
        if not isinstance(row, dict):
            raise VenuePayloadError("l2_data holds an update that is not an object")
        price, quantity, side = row.get("price_level"), row.get("new_quantity"), row.get("side")
        if not isinstance(price, str) or not isinstance(quantity, str):
            raise VenuePayloadError("l2_data update without string 'price_level' and 'new_quantity'")
        if side == _BID:
            bids.append((price, quantity))
        elif side in _ASK:
            asks.append((price, quantity))
        else:
            raise VenuePayloadError(f"l2_data update of unknown side {str(side)[:10]!r}")
    return DepthUpdate.unnumbered(
        product, event_time, ingest_time, tuple(bids), tuple(asks), reset=kind == "snapshot"
    )
