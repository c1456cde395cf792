"""Bybit's wire shapes (in the venue's own field names) and the typed values parsing yields.

The ``TypedDict`` classes document what the parsers read; nothing outside ``parse.py`` sees them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict

# --- wire shapes ------------------------------------------------------------------------------


class BookData(TypedDict):
    """The ``data`` of an orderbook push, and the ``result`` of a REST orderbook answer."""

    s: str  # symbol
    b: list[list[str]]  # bids [[price, size], ...]; size "0" deletes
    a: list[list[str]]  # asks
    u: int  # update id: contiguous; 1 after a restart of the venue's service
    seq: int  # cross sequence
    ts: NotRequired[int]  # REST: when the system made the book, ms


class OrderbookPush(TypedDict):
    """``orderbook.{depth}.{symbol}``: ``type`` is ``snapshot`` or ``delta``."""

    topic: str
    type: str
    ts: int  # ms
    data: BookData
    cts: NotRequired[int]  # matching engine time, ms


class OpAnswer(TypedDict):
    """The answer to a ``subscribe``, ``unsubscribe`` or ``ping``."""

    success: bool
    ret_msg: str
    op: str
    conn_id: NotRequired[str]
    req_id: NotRequired[str]


class RestBody(TypedDict):
    """Every REST answer: ``retCode`` 0 on success."""

    retCode: int
    retMsg: str
    result: dict[str, object]
    time: int


# --- typed values handed to the drivers -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BybitAnswer:
    """The venue's answer to a request of ours (``request_id``: the ``req_id`` echoed, if any)."""

    op: str
    success: bool
    request_id: str | None
    msg: str
