"""Bybit's REST client for one category: instrument lists (the market catalog) and order books.

Books sync from the stream; a REST book (``GET /v5/market/orderbook``, up to 1000 levels, at the
``u`` of the 1000-level stream) checks a quiet book (is the venue still at our ``u``?) and audits
a busy one at equal ``u``. The catalog is ``GET /v5/market/instruments-info`` (linear pages with
``cursor``; spot answers in one page). Requests are paid from the shared per-minute budget at one
unit each; a 403 ("access too frequent", the venue's IP limit) or a 429 closes the budget for ten
minutes, as the venue asks; ``retCode`` 10006 for the ``Retry-After`` it names, or a minute.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import aiohttp

from book_store.catalog import MarketInfo
from ingest_nodes.core.events import DepthSnapshot
from ingest_nodes.venues.budget import WeightBudget
from ingest_nodes.venues.bybit.parse import parse_bybit_error, parse_bybit_instruments, parse_bybit_orderbook
from ingest_nodes.venues.rest import VenueRequestError, get_answer
from ladder_process.clock import now_ms

ORDERBOOK_PATH: Final = "/v5/market/orderbook"
INSTRUMENTS_PATH: Final = "/v5/market/instruments-info"
TOO_MANY_VISITS: Final = 10006
BAD_PARAMETER: Final = 10001
IP_BAN_S: Final = 600.0
DEFAULT_BACKOFF_S: Final = 60.0
MAX_PAGES: Final = 20


class BybitRest:
    """Instruments and books of one Bybit category; the HTTP session belongs to the caller."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        exchange: str,
        rest_url: str,
        category: str,
        budget: WeightBudget,
        *,
        timeout_s: float = 10.0,
        on_status: Callable[[int], None] | None = None,
    ) -> None:
        self._session = session
        self._exchange = exchange
        self._base = rest_url.rstrip("/")
        self._category = category
        self._budget = budget
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._on_status = on_status

    async def snapshot(self, symbol: str, limit: int) -> DepthSnapshot:
        """The best ``limit`` levels (at most 1000) a side; the caller has paid for the request."""
        params = {"category": self._category, "symbol": symbol, "limit": str(min(limit, 1000))}
        return parse_bybit_orderbook(await self._get(ORDERBOOK_PATH, params), symbol, limit, now_ms())

    async def markets(self) -> list[MarketInfo]:
        """Every instrument of the category, page by page (pays its own requests)."""
        markets: list[MarketInfo] = []
        cursor = ""
        for _ in range(MAX_PAGES):
            await self._budget.acquire(1)
            params = {"category": self._category, "limit": "1000"}
            if cursor:
                params["cursor"] = cursor
            page, cursor = parse_bybit_instruments(await self._get(INSTRUMENTS_PATH, params), self._exchange)
            markets += page
            if not cursor or self._category == "spot":
                break
        return markets

    async def _get(self, path: str, params: dict[str, str]) -> bytes:
        answer = await get_answer(
            self._session, self._base + path, params, self._timeout, f"{self._exchange} {path}"
        )
        status, body, pause_s = answer.status, answer.body, answer.retry_after_s
        code, msg = parse_bybit_error(body)
        if status == 200 and code == 0:
            return body
        if self._on_status is not None:
            self._on_status(status)
        if status in (403, 429):
            await self._budget.close_for(pause_s if pause_s is not None else IP_BAN_S)
        elif code == TOO_MANY_VISITS:
            await self._budget.close_for(pause_s if pause_s is not None else DEFAULT_BACKOFF_S)
        raise VenueRequestError(
            f"{self._exchange} {path} answered {status} (retCode {code}: {msg[:80]})",
            status=status,
            retry_after_s=pause_s,
            invalid_symbol=code == BAD_PARAMETER,
        )
