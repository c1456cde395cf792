"""Pure parsers for Bybit v5 frames, REST order books, instrument lists and REST errors.

Orderbook pushes become ``DepthUpdate`` values (``u`` -> ``first_update_id`` and
``final_update_id``; a snapshot is a ``reset`` of the channel's depth, read from the topic);
answers to requests become ``BybitAnswer``. Pushes of other topics come back as nothing.
"""

from __future__ import annotations

from typing import Final, cast

from book_store.catalog import TRADING, MarketInfo, contract_kind
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthSnapshot, DepthUpdate
from ingest_nodes.venues.bybit.schemas import BookData, BybitAnswer, OpAnswer, OrderbookPush
from ingest_nodes.venues.wire import int_field, json_object, levels, loads

TOPIC_PREFIX: Final = "orderbook."
BYBIT_TRADING: Final = "Trading"


def parse_bybit_frame(raw: bytes | str, ingest_time: int) -> DepthUpdate | BybitAnswer | None:
    """Read one frame of a public stream (spot or linear).

    Example (a 50-level snapshot of the docs, trimmed)::

        {"topic":"orderbook.50.BTCUSDT","type":"snapshot","ts":1671179923028,
         "data":{"s":"BTCUSDT","b":[["17440.00","40.833"],["17439.50","0.513"]],
                 "a":[["17440.50","78.815"],["17441.00","8.858"]],"u":13079592,"seq":22520573250},
         "cts":1671179923018}

    then ``"type":"delta"`` messages with ``"u":13079593``. Answers: ``{"success":true,
    "ret_msg":"subscribe","conn_id":"2324d924-...","req_id":"10001","op":"subscribe"}``, and the
    pong ``{"success":true,"ret_msg":"pong","conn_id":"...","op":"ping"}``.
    """
    frame = json_object(loads(raw), "frame")
    topic = frame.get("topic")
    if isinstance(topic, str):
        if not topic.startswith(TOPIC_PREFIX):
            return None
        return _push(cast(OrderbookPush, frame), topic, ingest_time)
    if "op" in frame:
        answer = cast(OpAnswer, frame)
        request_id = answer.get("req_id")
        return BybitAnswer(
            op=str(answer["op"]),
            success=answer.get("success") is True,
            request_id=request_id if isinstance(request_id, str) and request_id else None,
            msg=str(answer.get("ret_msg") or ""),
        )
    return None


def parse_bybit_orderbook(body: bytes, symbol: str, limit: int, ingest_time: int) -> DepthSnapshot:
    """Read a ``GET /v5/market/orderbook?category=...&symbol=...&limit=...`` answer.

    Example (the docs', spot)::

        {"retCode":0,"retMsg":"OK","result":{"s":"BTCUSDT","a":[["65557.7","16.606555"]],
          "b":[["65485.47","47.081829"]],"ts":1716863719031,"u":230704,"seq":1432604333,
          "cts":1716863718905},"retExtInfo":{},"time":1716863719382}

    ``u`` is the update id of the 1000-level stream, which ``last_update_id`` carries.
    """
    book = json_object(_result(body, "orderbook"), "orderbook result")
    return DepthSnapshot(
        symbol=symbol,
        last_update_id=int_field(book, "u"),
        bids=levels(book.get("b"), "b"),
        asks=levels(book.get("a"), "a"),
        limit=limit,
        event_time=int_field(book, "ts"),
        ingest_time=ingest_time,
    )


def parse_bybit_instruments(body: bytes, exchange: str) -> tuple[list[MarketInfo], str]:
    """One page of ``GET /v5/market/instruments-info``, and the cursor of the next (empty: none).

    Example (trimmed)::

        {"retCode":0,"retMsg":"OK","result":{"category":"linear","list":[
          {"symbol":"BTCUSDT","contractType":"LinearPerpetual","status":"Trading",
           "baseCoin":"BTC","quoteCoin":"USDT"}],"nextPageCursor":""},"time":1672712495660}

    Status ``Trading`` is tradable; the others (``PreLaunch``, ``Delivering``, ``Closed``) are kept,
    upper-cased. ``contractType`` (``LinearPerpetual``, ``LinearFutures``) says what a derivative
    is; spot pairs have none.
    """
    result = json_object(_result(body, "instruments-info"), "instruments-info result")
    entries = result.get("list")
    if not isinstance(entries, list):
        raise VenuePayloadError("instruments-info without a list")
    markets = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("symbol"), str):
            continue
        status = str(entry.get("status") or "unknown")
        markets.append(
            MarketInfo(
                exchange,
                entry["symbol"],
                TRADING if status == BYBIT_TRADING else status.upper(),
                str(entry.get("baseCoin") or ""),
                str(entry.get("quoteCoin") or ""),
                contract_kind(entry.get("contractType")),
            )
        )
    cursor = result.get("nextPageCursor")
    return markets, cursor if isinstance(cursor, str) else ""


def parse_bybit_error(body: bytes) -> tuple[int | None, str]:
    """``retCode`` (0: success) and ``retMsg`` of an answer (``10001``: bad parameter or unknown
    symbol; ``10006``: too many visits); a body that is not Bybit's keeps its first bytes."""
    try:
        parsed = loads(body)
    except VenuePayloadError:
        return None, body[:200].decode("utf-8", errors="replace")
    if not isinstance(parsed, dict):
        return None, ""
    code = parsed.get("retCode")
    msg = parsed.get("retMsg")
    return (code if type(code) is int else None, msg if isinstance(msg, str) else "")


def _push(push: OrderbookPush, topic: str, ingest_time: int) -> DepthUpdate:
    kind = push.get("type")
    if kind not in ("snapshot", "delta"):
        raise VenuePayloadError(f"orderbook push of type {kind!r}")
    data = cast(BookData, json_object(push.get("data"), "orderbook data"))
    symbol = data.get("s")
    if not isinstance(symbol, str):
        raise VenuePayloadError("orderbook push without a symbol")
    update_id = int_field(data, "u")
    reset = kind == "snapshot"
    return DepthUpdate(
        symbol=symbol,
        first_update_id=update_id,
        final_update_id=update_id,
        prev_final_update_id=None,
        event_time=int_field(push, "ts"),
        ingest_time=ingest_time,
        bids=levels(data.get("b"), "b"),
        asks=levels(data.get("a"), "a"),
        reset=reset,
        limit=_depth(topic) if reset else 0,
    )


def _depth(topic: str) -> int:
    """``orderbook.1000.BTCUSDT`` -> 1000."""
    depth = topic[len(TOPIC_PREFIX) :].partition(".")[0]
    if not depth.isdigit():
        raise VenuePayloadError(f"orderbook topic without a depth: {topic[:60]!r}")
    return int(depth)


def _result(body: bytes, what: str) -> object:
    answer = json_object(loads(body), what)
    if answer.get("retCode") != 0:
        raise VenuePayloadError(
            f"{what} answer with retCode {answer.get('retCode')!r}: {str(answer.get('retMsg'))[:80]}"
        )
    return answer.get("result")
