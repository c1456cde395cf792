"""OKX's wire shapes (in the venue's own field names) and the typed values parsing yields.

The ``TypedDict`` classes document what the parsers read; nothing outside ``parse.py`` sees them.
The frozen dataclasses are what the stream and the REST client receive besides book messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict

# --- wire shapes ------------------------------------------------------------------------------


class ChannelArg(TypedDict):
    """Which channel and instrument a push or an event is about."""

    channel: str  # "books"
    instId: str  # "BTC-USDT", "BTC-USDT-SWAP"


class BookData(TypedDict):
    """One book message; levels are ``[price, size, "0" (deprecated), order count]``."""

    asks: list[list[str]]
    bids: list[list[str]]
    ts: str  # book generation time, ms, as a string
    checksum: NotRequired[int]  # always 0 since 2026-06-23
    prevSeqId: int  # -1 in a snapshot
    seqId: int


class BooksPush(TypedDict):
    """A push of the ``books`` channel: ``action`` is ``snapshot`` or ``update``."""

    arg: ChannelArg
    action: str
    data: list[BookData]


class EventFrame(TypedDict):
    """An answer to a request (``subscribe``, ``unsubscribe``, ``error``) or a ``notice``."""

    event: str
    id: NotRequired[str]  # the request's id, echoed
    arg: NotRequired[ChannelArg]
    code: NotRequired[str]
    msg: NotRequired[str]
    connId: NotRequired[str]


class RestBody(TypedDict):
    """Every REST answer: ``code`` "0" on success, ``data`` a list."""

    code: str
    msg: str
    data: list[dict[str, object]]


class Instrument(TypedDict):
    """One entry of ``GET /api/v5/public/instruments`` (the fields Ladder reads)."""

    instId: str
    instType: str  # SPOT, SWAP, FUTURES, OPTION
    state: str  # live, suspend, preopen, test
    baseCcy: str  # SPOT only
    quoteCcy: str  # SPOT only
    uly: str  # derivatives: "BTC-USDT"
    settleCcy: str


# --- typed values handed to the drivers -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OkxEvent:
    """An ``event`` frame: a request's answer (``id`` echoed, when the request had one) or a notice.

    ``code`` is OKX's error code as an int (``60012`` invalid request, ``64008`` the connection
    will soon close for a service upgrade); None on success.
    """

    event: str
    request_id: str | None
    code: int | None
    msg: str


@dataclass(frozen=True, slots=True)
class Pong:
    """The venue's ``pong`` to our ``ping`` keepalive."""


OkxControl = OkxEvent | Pong
