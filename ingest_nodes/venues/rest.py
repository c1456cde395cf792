"""What every venue's REST client offers an exchange's runtime, how its calls fail, and the one GET
the OKX, Bybit and market-list clients share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import aiohttp

from book_store.catalog import MarketInfo
from ingest_nodes.core.events import DepthSnapshot
from ingest_nodes.venues.wire import retry_after
from ladder_process.errors import LadderError


class VenueRequestError(LadderError):
    """A venue REST call failed; ``retry_after_s`` is the venue's word on when to try again."""

    code = "venue_request_failed"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
        invalid_symbol: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s
        self.invalid_symbol = invalid_symbol


class VenueRest(Protocol):
    """What an exchange's runtime asks its venue over REST."""

    async def snapshot(self, symbol: str, limit: int) -> DepthSnapshot:
        """A depth snapshot of ``symbol`` (paid for by the caller); VenueRequestError when the venue
        has none."""

    async def markets(self) -> list[MarketInfo]:
        """Every market the venue lists, with its status."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A venue's REST answer, whatever its status: what a client decides on."""

    status: int
    body: bytes
    retry_after_s: float | None


async def get_answer(
    session: aiohttp.ClientSession,
    url: str,
    params: Mapping[str, str],
    client_timeout: aiohttp.ClientTimeout,
    what: str,
    *,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """GET ``url``; a transport failure or a timeout is a ``VenueRequestError`` naming ``what``."""
    try:
        async with session.get(url, params=params, headers=headers, timeout=client_timeout) as response:
            return Answer(response.status, await response.read(), retry_after(response.headers))
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise VenueRequestError(f"{what}: {unreachable(exc, client_timeout.total or 0)}") from exc


def unreachable(exc: aiohttp.ClientError | TimeoutError, timeout_s: float) -> str:
    """Why a request got no answer, in words a person acts on: the host that could not be resolved
    or reached, or the time it waited (a venue's URL carries no secret; its keys go in headers)."""
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"cannot resolve {exc.host} (no network, or no DNS)"
    if isinstance(exc, aiohttp.ClientConnectorError):
        why = exc.os_error.strerror or type(exc.os_error).__name__
        return f"cannot connect to {exc.host}:{exc.port} ({why})"
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout_s:g} s"
    return type(exc).__name__
