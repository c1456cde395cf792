"""Pure parsers for OKX v5 frames, book snapshots, instrument lists and REST errors.

Book pushes become ``DepthUpdate`` values (``seqId`` -> ``final_update_id``, ``prevSeqId`` ->
``prev_final_update_id``, a snapshot is a ``reset`` of the channel's depth); answers to requests
and notices become ``OkxEvent``; the text ``pong`` becomes ``Pong``. Pushes of other channels come
back as nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, cast

from book_store.catalog import FUTURE, OPTION, PERPETUAL, SPOT, TRADING, UNKNOWN_KIND, MarketInfo
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.core.events import DepthSnapshot, DepthUpdate
from ingest_nodes.venues.okx.limits import BOOKS_CHANNEL, BOOKS_DEPTH
from ingest_nodes.venues.okx.schemas import (
    BookData,
    BooksPush,
    EventFrame,
    Instrument,
    OkxControl,
    OkxEvent,
    Pong,
)
from ingest_nodes.venues.wire import int_field, json_object, levels, loads

_PONG: Final = Pong()
LIVE: Final = "live"


def parse_okx_frame(raw: bytes | str, ingest_time: int) -> list[DepthUpdate | OkxControl]:
    """Read one frame of the public WebSocket.

    Example (a ``books`` snapshot, trimmed; levels are price, size, a deprecated "0", orders)::

        {"arg":{"channel":"books","instId":"BTC-USDT"},"action":"snapshot","data":[{
          "asks":[["8476.98","415","0","13"],["8477","7","0","2"]],
          "bids":[["8476.97","256","0","12"],["8475.55","101","0","1"]],
          "ts":"1597026383085","checksum":0,"prevSeqId":-1,"seqId":123456}]}

    then ``"action":"update"`` with ``"prevSeqId":123456,"seqId":123457``. Answers:
    ``{"id":"1512","event":"subscribe","arg":{"channel":"books","instId":"BTC-USDT"},
    "connId":"a4d3ae55"}``, ``{"id":"1512","event":"error","code":"60012","msg":"Invalid request:
    ...","connId":"a4d3ae55"}``.
    """
    if raw == "pong" or raw == b"pong":
        return [_PONG]
    frame = json_object(loads(raw), "frame")
    if "event" in frame:
        return [_event(cast(EventFrame, frame))]
    arg = frame.get("arg")
    if not isinstance(arg, dict) or arg.get("channel") != BOOKS_CHANNEL or "data" not in frame:
        return []
    push = cast(BooksPush, frame)
    symbol = arg.get("instId")
    if not isinstance(symbol, str):
        raise VenuePayloadError("books push without an instId")
    action = push.get("action")
    if action not in ("snapshot", "update"):
        raise VenuePayloadError(f"books push with action {action!r}")
    data = push["data"]
    if not isinstance(data, list):
        raise VenuePayloadError("books push whose data is not a list")
    reset = action == "snapshot"
    return [_book(json_object(item, "book data"), symbol, reset, ingest_time) for item in data]


def parse_okx_books(body: bytes, symbol: str, limit: int, ingest_time: int) -> DepthSnapshot:
    """Read a ``GET /api/v5/market/books?instId=...&sz=...`` answer (``limit``: the ``sz`` asked).

    Example::

        {"code":"0","msg":"","data":[{"asks":[["41006.8","0.60038921","0","1"]],
          "bids":[["41006.3","0.30178218","0","2"]],"ts":"1629966436396","seqId":3235851742}]}
    """
    book = json_object(_data(body, "books")[0], "book")
    return DepthSnapshot(
        symbol=symbol,
        last_update_id=int_field(book, "seqId"),
        bids=levels(book.get("bids"), "bids"),
        asks=levels(book.get("asks"), "asks"),
        limit=limit,
        event_time=_ms(book, "ts"),
        ingest_time=ingest_time,
    )


_KINDS = {"SPOT": SPOT, "MARGIN": SPOT, "SWAP": PERPETUAL, "FUTURES": FUTURE, "OPTION": OPTION}


def parse_okx_instruments(body: bytes, exchange: str) -> list[MarketInfo]:
    """Every instrument of a ``GET /api/v5/public/instruments?instType=...`` answer.

    Example (trimmed)::

        {"code":"0","msg":"","data":[
          {"instType":"SPOT","instId":"BTC-USDT","baseCcy":"BTC","quoteCcy":"USDT","uly":"",
           "settleCcy":"","state":"live"},
          {"instType":"SWAP","instId":"BTC-USDT-SWAP","baseCcy":"","quoteCcy":"","uly":"BTC-USDT",
           "settleCcy":"USDT","state":"live"}]}

    ``state`` ``live`` is tradable; ``suspend``, ``preopen`` and ``test`` are kept, upper-cased, so
    the catalog can say why a market is not served. A derivative's base and quote come from its
    underlying (``BTC-USDT``), its kind from ``instType``.
    """
    markets = []
    for entry in _data(body, "instruments"):
        if not isinstance(entry, dict) or not isinstance(entry.get("instId"), str):
            continue
        instrument = cast(Instrument, entry)
        base, quote = instrument.get("baseCcy") or "", instrument.get("quoteCcy") or ""
        if not base:
            base, _, quote = (instrument.get("uly") or "").partition("-")
        state = str(instrument.get("state") or "unknown")
        markets.append(
            MarketInfo(
                exchange,
                instrument["instId"],
                TRADING if state == LIVE else state.upper(),
                base,
                quote,
                _KINDS.get(str(instrument.get("instType")), UNKNOWN_KIND),
            )
        )
    return markets


def parse_okx_error(body: bytes) -> tuple[int | None, str]:
    """The ``code`` (0: success) and ``msg`` of a REST answer (``50011``: too many requests;
    ``51001``: the instrument does not exist); a body that is not OKX's keeps its first bytes."""
    try:
        parsed = loads(body)
    except VenuePayloadError:
        return None, body[:200].decode("utf-8", errors="replace")
    if not isinstance(parsed, dict):
        return None, ""
    code = parsed.get("code")
    msg = parsed.get("msg")
    return (
        int(code) if isinstance(code, str) and code.isdigit() else None,
        msg if isinstance(msg, str) else "",
    )


def _book(data: Mapping[str, object], symbol: str, reset: bool, ingest_time: int) -> DepthUpdate:
    book = cast(BookData, data)
    seq_id = int_field(book, "seqId")
    return DepthUpdate(
        symbol=symbol,
        first_update_id=seq_id,
        final_update_id=seq_id,
        prev_final_update_id=int_field(book, "prevSeqId"),
        event_time=_ms(book, "ts"),
        ingest_time=ingest_time,
        bids=levels(book.get("bids"), "bids"),
        asks=levels(book.get("asks"), "asks"),
        reset=reset,
        limit=BOOKS_DEPTH if reset else 0,
    )


def _event(frame: EventFrame) -> OkxEvent:
    code = frame.get("code")
    msg = frame.get("msg")
    request_id = frame.get("id")
    return OkxEvent(
        event=str(frame["event"]),
        request_id=request_id if isinstance(request_id, str) else None,
        code=int(code) if isinstance(code, str) and code.isdigit() and code != "0" else None,
        msg=msg if isinstance(msg, str) else "",
    )


def _data(body: bytes, what: str) -> list[object]:
    answer = json_object(loads(body), what)
    code = answer.get("code")
    data = answer.get("data")
    if code != "0" or not isinstance(data, list):
        raise VenuePayloadError(f"{what} answer with code {code!r}: {str(answer.get('msg'))[:80]}")
    if not data and what == "books":
        raise VenuePayloadError("books answer without a book")
    return data


def _ms(container: Mapping[str, object], key: str) -> int:
    """OKX writes times as strings of milliseconds."""
    value = container.get(key)
    if not isinstance(value, str) or not value.isdigit():
        raise VenuePayloadError(f"field {key!r} is missing or not a time in ms")
    return int(value)
