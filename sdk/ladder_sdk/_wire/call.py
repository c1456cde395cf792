"""A call to one endpoint, described as data: what to send, how to read the answer, whether to retry.

Endpoints build a `Call`; the base client turns it into a request and reads the answer; the sync
and async clients only carry it over the wire. So each endpoint is written once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar
from urllib.parse import quote

T = TypeVar("T")
V = TypeVar("V")

Params = Mapping[str, str | int]


@dataclass(frozen=True)
class Call(Generic[T]):
    """One endpoint call.

    `retry_safe` says whether the request may be sent again after it may have reached the server
    (GET, DELETE, upserts); a call that creates something is retried only when the server
    provably did nothing (a refused connection, a 429).
    """

    method: str
    path: str
    parse: Callable[[object], T]
    params: Params = field(default_factory=dict)
    body: object | None = None
    retry_safe: bool = True


def path(*segments: str) -> str:
    """An absolute path with every segment URL-encoded, so that `BTC/USD` stays one segment."""
    return "".join("/" + quote(segment, safe="") for segment in segments)


def params(**values: V | None) -> dict[str, V]:
    """Query parameters (or body fields) without the ones left unset."""
    return {name: value for name, value in values.items() if value is not None}
