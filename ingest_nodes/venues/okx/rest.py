"""OKX's REST client: instrument lists (the ``okx`` market catalog) and order-book snapshots.

The catalog is SPOT and SWAP instruments (``GET /api/v5/public/instruments?instType=...``); books
sync from the stream, so a REST book (``GET /api/v5/market/books``, at most 400 levels, carrying
the ``seqId`` it is at) only ever serves as a second opinion. Requests are paid from the shared
per-minute budget at one unit each (OKX counts requests per endpoint per IP in 2-second windows;
the budget's minute is set at half of ``books``' rate, see ``limits``). A 429, or OKX's code 50011,
closes the budget for ``Retry-After`` (or a minute).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import aiohttp

from book_store.catalog import MarketInfo
from ingest_nodes.core.events import DepthSnapshot
from ingest_nodes.venues.budget import WeightBudget
from ingest_nodes.venues.okx.parse import parse_okx_books, parse_okx_error, parse_okx_instruments
from ingest_nodes.venues.rest import VenueRequestError, get_answer
from ladder_process.clock import now_ms

INSTRUMENTS_PATH: Final = "/api/v5/public/instruments"
BOOKS_PATH: Final = "/api/v5/market/books"
INSTRUMENT_TYPES: Final = ("SPOT", "SWAP")
TOO_MANY_REQUESTS: Final = 50011
NO_SUCH_INSTRUMENT: Final = 51001
DEFAULT_BACKOFF_S: Final = 60.0


class OkxRest:
    """Instruments and books of OKX; the HTTP session belongs to the caller."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        exchange: str,
        rest_url: str,
        budget: WeightBudget,
        *,
        timeout_s: float = 10.0,
        on_status: Callable[[int], None] | None = None,
    ) -> None:
        self._session = session
        self._exchange = exchange
        self._base = rest_url.rstrip("/")
        self._budget = budget
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._on_status = on_status

    async def snapshot(self, symbol: str, limit: int) -> DepthSnapshot:
        """The best ``limit`` levels (at most 400) a side; the caller has paid for the request."""
        body = await self._get(BOOKS_PATH, {"instId": symbol, "sz": str(min(limit, 400))})
        return parse_okx_books(body, symbol, limit, now_ms())

    async def markets(self) -> list[MarketInfo]:
        """Every SPOT and SWAP instrument, with its state (pays its own requests)."""
        markets: list[MarketInfo] = []
        for kind in INSTRUMENT_TYPES:
            await self._budget.acquire(1)
            markets += parse_okx_instruments(
                await self._get(INSTRUMENTS_PATH, {"instType": kind}), self._exchange
            )
        return markets

    async def _get(self, path: str, params: dict[str, str]) -> bytes:
        answer = await get_answer(
            self._session, self._base + path, params, self._timeout, f"{self._exchange} {path}"
        )
        status, body, pause_s = answer.status, answer.body, answer.retry_after_s
        code, msg = parse_okx_error(body)
        if status == 200 and code == 0:
            return body
        if self._on_status is not None:
            self._on_status(status)
        if status == 429 or code == TOO_MANY_REQUESTS:
            await self._budget.close_for(pause_s if pause_s is not None else DEFAULT_BACKOFF_S)
        raise VenueRequestError(
            f"{self._exchange} {path} answered {status} (code {code}: {msg[:80]})",
            status=status,
            retry_after_s=pause_s,
            invalid_symbol=code == NO_SUCH_INSTRUMENT,
        )
