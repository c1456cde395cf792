"""The typed values parsing Binance's frames and REST answers yields besides depth events.

The frozen dataclasses are what the connection and REST drivers receive: stream control frames
(``ControlFrame``) and REST failures (``VenueRestError``). The wire shapes they are read from are
in ``parse.py``'s docstrings, which check every member they read.
"""

from __future__ import annotations

from dataclasses import dataclass


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
