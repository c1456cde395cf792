"""REST calls to a Binance venue: depth snapshots and exchangeInfo, inside the weight budget."""

from __future__ import annotations

import time

import aiohttp

from book_store.catalog import MarketInfo
from book_store.errors import LadderError
from ingest_nodes.budget import WeightBudget
from ingest_nodes.events import DepthSnapshot
from ingest_nodes.exchanges import ExchangeSpec
from ingest_nodes.venues.binance.exchange_info import parse_exchange_info
from ingest_nodes.venues.binance.limits import depth_weight
from ingest_nodes.venues.binance.parse import parse_futures_snapshot, parse_rest_error, parse_spot_snapshot

USED_WEIGHT_HEADER = "X-MBX-USED-WEIGHT-1M"


class VenueRequestError(LadderError):
    """A venue REST call failed; ``retry_after_s`` is the venue's word on when to try again."""

    code = "venue_request_failed"

    def __init__(
        self, message: str, *, status: int | None = None, retry_after_s: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after_s = retry_after_s


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class VenueRestClient:
    """Snapshots and market lists of one exchange. The HTTP session belongs to the caller."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        spec: ExchangeSpec,
        budget: WeightBudget,
        *,
        timeout_s: float = 10.0,
    ) -> None:
        self._session = session
        self._spec = spec
        self._budget = budget
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)

    async def snapshot(self, symbol: str, limit: int) -> DepthSnapshot:
        """``GET depth`` for one symbol, paid from the shared weight budget."""
        body = await self._get(
            self._spec.depth_path,
            {"symbol": symbol, "limit": str(limit)},
            depth_weight(self._spec.depth_tiers, limit),
        )
        parse = parse_futures_snapshot if self._spec.is_futures else parse_spot_snapshot
        return parse(body, symbol, limit, now_ms())

    async def markets(self) -> list[MarketInfo]:
        """Every symbol the venue lists, with its status."""
        body = await self._get(self._spec.exchange_info_path, {}, self._spec.exchange_info_weight)
        return parse_exchange_info(body, self._spec.id)

    async def _get(self, path: str, params: dict[str, str], weight: int) -> bytes:
        await self._budget.acquire(weight)
        url = self._spec.rest_url.rstrip("/") + path
        try:
            async with self._session.get(url, params=params, timeout=self._timeout) as response:
                body = await response.read()
                used = response.headers.get(USED_WEIGHT_HEADER)
                if used is not None and used.isdigit():
                    await self._budget.observe(int(used))
                if response.status == 200:
                    return body
                error = parse_rest_error(response.status, body, response.headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise VenueRequestError(f"{self._spec.id} {path}: {type(exc).__name__}") from exc
        if error.retry_after_s is not None or response.status in (418, 429):
            await self._budget.close_for(error.retry_after_s if error.retry_after_s is not None else 60.0)
        raise VenueRequestError(
            f"{self._spec.id} {path} answered {response.status} (code {error.code})",
            status=response.status,
            retry_after_s=error.retry_after_s,
        )
