"""Alpaca's crypto stream wire shapes (in the venue's own field names) and the values parsing yields.

Every server frame is a JSON array of objects tagged by ``T``; control messages come alone,
data messages may be batched. The ``TypedDict`` classes document what the parser reads; the
frozen dataclasses (``AlpacaControl``) are what the connection driver receives besides depth
events.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import NotRequired, TypedDict

# --- wire shapes ------------------------------------------------------------------------------


class OrderbookLevel(TypedDict):
    """One level; both members are JSON numbers (parsed as Decimal or int, never float)."""

    p: Decimal | int  # price
    s: Decimal | int  # size; 0 removes the level


class OrderbookMessage(TypedDict):
    """``T: "o"``: levels to set, or with ``r: true`` the whole book."""

    T: str  # "o"
    S: str  # symbol, "BTC/USD"
    t: str  # RFC-3339 time with up to nanosecond precision
    b: list[OrderbookLevel]
    a: list[OrderbookLevel]
    r: NotRequired[bool]  # reset: replace the whole book


class SuccessMessage(TypedDict):
    """``T: "success"``: ``msg`` is "connected" or "authenticated"."""

    T: str
    msg: str


class ErrorMessage(TypedDict):
    """``T: "error"``: e.g. 402 auth failed, 406 connection limit exceeded, 407 slow client."""

    T: str
    code: int
    msg: str


class SubscriptionMessage(TypedDict):
    """``T: "subscription"``: the complete current subscription set, per channel."""

    T: str
    orderbooks: list[str]


# --- typed values handed to the driver --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AlpacaSuccess:
    """The connection was opened (``"connected"``) or authenticated (``"authenticated"``)."""

    msg: str


@dataclass(frozen=True, slots=True)
class AlpacaError:
    """The venue reported an error; 406 and 407 are followed by a disconnect."""

    code: int
    msg: str


@dataclass(frozen=True, slots=True)
class AlpacaSubscription:
    """The order-book symbols now subscribed (the venue always sends the full set)."""

    orderbooks: tuple[str, ...]


AlpacaControl = AlpacaSuccess | AlpacaError | AlpacaSubscription
