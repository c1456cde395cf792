"""Binance's wire shapes (in the venue's own field names) and the typed values parsing yields.

The ``TypedDict`` classes document what the parsers read; nothing outside ``parse.py`` sees them.
The frozen dataclasses are what the connection and REST drivers receive besides depth events:
stream control frames (``ControlFrame``) and REST failures (``VenueRestError``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict

# --- wire shapes ------------------------------------------------------------------------------


class DepthUpdateEvent(TypedDict):
    """``<symbol>@depth`` diff event; ``T`` and ``pu`` are sent by futures only."""

    e: str  # "depthUpdate"
    E: int  # event time, ms
    T: NotRequired[int]  # futures transaction time, ms
    s: str  # symbol, upper case
    U: int  # first update id in the event
    u: int  # final update id in the event
    pu: NotRequired[int]  # futures: final update id of the previous event
    b: list[list[str]]  # bids [[price, qty], ...]
    a: list[list[str]]  # asks


class CombinedFrame(TypedDict):
    """``/stream?streams=...`` wraps every payload with the stream's name."""

    stream: str
    data: dict[str, object]


class ServerShutdownEvent(TypedDict):
    """Sent before the venue closes the connection for maintenance."""

    e: str  # "serverShutdown"
    E: int


class CommandResult(TypedDict):
    """Answer to SUBSCRIBE / UNSUBSCRIBE / LIST_SUBSCRIPTIONS / SET_PROPERTY / GET_PROPERTY."""

    result: list[str] | bool | None
    id: int | str | None


class ErrorBody(TypedDict):
    """A REST error body, and the ``error`` member of a stream error frame."""

    code: int
    msg: str


class CommandError(TypedDict):
    """A stream command that failed; ``id`` is null when the request could not be parsed."""

    error: ErrorBody
    id: int | str | None


class DepthSnapshotBody(TypedDict):
    """``GET /api/v3/depth`` (spot) or ``GET /fapi/v1/depth`` (futures, adds ``E`` and ``T``)."""

    lastUpdateId: int
    E: NotRequired[int]
    T: NotRequired[int]
    bids: list[list[str]]
    asks: list[list[str]]


# --- typed values handed to the drivers -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SubscribeAck:
    """A command was accepted; ``result`` is the answer of a LIST/GET command, else None."""

    id: int | str | None
    result: list[str] | bool | None = None


@dataclass(frozen=True, slots=True)
class VenueErrorFrame:
    """The venue rejected a command sent on the stream connection."""

    code: int | None
    msg: str
    id: int | str | None = None


@dataclass(frozen=True, slots=True)
class ServerShutdown:
    """The venue is about to close this connection: reconnect now."""

    event_time: int


ControlFrame = SubscribeAck | VenueErrorFrame | ServerShutdown


@dataclass(frozen=True, slots=True)
class VenueRestError:
    """A failed REST call, read once from its status, body and headers.

    ``code`` is Binance's error code (``-1003`` too much weight, ``-1121`` invalid symbol) when the
    body carried one. ``retry_after_s`` comes from ``Retry-After``. ``banned`` is an IP ban (418, or
    a body saying "banned until"), and ``banned_until_ms`` the end the venue named, if any.
    """

    status: int
    code: int | None
    msg: str
    retry_after_s: float | None
    banned: bool
    banned_until_ms: int | None = None

    @property
    def rate_limited(self) -> bool:
        """The IP used too much request weight: back off, keep buffering."""
        return self.status in (418, 429) or self.code == -1003

    @property
    def invalid_symbol(self) -> bool:
        """The venue does not know the symbol: retrying will not help."""
        return self.code == -1121
