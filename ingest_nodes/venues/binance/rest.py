"""Binance's REST client: depth snapshots and exchangeInfo, inside the shared weight budget.

Snapshots are paid for by the caller (the snapshot scheduler charges the budget in batches before it
fetches); exchangeInfo pays for itself. Every answer's ``X-MBX-USED-WEIGHT-1M`` is fed back to the
budget, and a 429/418 closes the budget for ``Retry-After`` (60 s when the venue names no time).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

import aiohttp
from opentelemetry.trace import get_current_span

from book_store.catalog import MarketInfo
from ingest_nodes.core.events import DepthSnapshot
from ingest_nodes.venues.binance.exchange_info import parse_exchange_info
from ingest_nodes.venues.binance.parse import parse_futures_snapshot, parse_rest_error, parse_spot_snapshot
from ingest_nodes.venues.binance.schemas import VenueRestError
from ingest_nodes.venues.budget import WeightBudget
from ingest_nodes.venues.registry import ExchangeSpec
from ingest_nodes.venues.rest import VenueRequestError, unreachable
from ladder_process.clock import now_ms

USED_WEIGHT_HEADER: Final = "X-MBX-USED-WEIGHT-1M"
DEFAULT_BACKOFF_S: Final = 60.0


class VenueRestClient:
    """Snapshots and market lists of one Binance exchange (spot or USD-M futures); the HTTP
    session belongs to the caller."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        spec: ExchangeSpec,
        budget: WeightBudget,
        *,
        timeout_s: float = 10.0,
        on_status: Callable[[int], None] | None = None,
    ) -> None:
        """``on_status(status)`` observes every non-200 answer (for counters)."""
        self._session = session
        self._spec = spec
        self._budget = budget
        self._timeout_s = timeout_s
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._on_status = on_status

    @property
    def budget(self) -> WeightBudget:
        return self._budget

    async def snapshot(self, symbol: str, limit: int) -> DepthSnapshot:
        """``GET depth`` for one symbol. The caller has already charged its weight to the budget."""
        body = await self._get(self._spec.depth_path, {"symbol": symbol, "limit": str(limit)})
        parse = parse_futures_snapshot if self._spec.is_futures else parse_spot_snapshot
        return parse(body, symbol, limit, now_ms())

    async def markets(self) -> list[MarketInfo]:
        """Every symbol the venue lists, with its status (pays its own weight)."""
        await self._budget.acquire(self._spec.exchange_info_weight)
        body = await self._get(self._spec.exchange_info_path, {})
        return parse_exchange_info(body, self._spec.id)

    async def _get(self, path: str, params: dict[str, str]) -> bytes:
        url = self._spec.rest_url.rstrip("/") + path
        sent_at_s = time.time()
        try:
            async with self._session.get(url, params=params, timeout=self._timeout) as response:
                body = await response.read()
                used = response.headers.get(USED_WEIGHT_HEADER)
                _annotate_span(response.status, used)
                if used is not None and used.isdigit():
                    await self._budget.observe(int(used), sent_at_s)
                if response.status == 200:
                    return body
                error = parse_rest_error(response.status, body, response.headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise VenueRequestError(f"{self._spec.id} {path}: {unreachable(exc, self._timeout_s)}") from exc
        await self._refused(error)
        raise VenueRequestError(
            f"{self._spec.id} {path} answered {error.status} (code {error.code}: {error.msg[:80]})",
            status=error.status,
            retry_after_s=error.retry_after_s,
            invalid_symbol=error.invalid_symbol,
        )

    async def _refused(self, error: VenueRestError) -> None:
        if self._on_status is not None:
            self._on_status(error.status)
        if error.rate_limited or error.retry_after_s is not None:
            await self._budget.close_for(_pause_s(error))


def _annotate_span(status: int, used_weight: str | None) -> None:
    """The venue's answer on the current span (a snapshot fetch's, when tracing is on)."""
    span = get_current_span()
    if span.is_recording():
        span.set_attribute("http.response.status_code", status)
        if used_weight is not None and used_weight.isdigit():
            span.set_attribute("ladder.venue_used_weight", int(used_weight))


def _pause_s(error: VenueRestError) -> float:
    """How long the venue wants us quiet: ``Retry-After``, else the ban's end, else a minute."""
    if error.retry_after_s is not None:
        return error.retry_after_s
    if error.banned_until_ms is not None:
        return max(1.0, (error.banned_until_ms - now_ms()) / 1000)
    return DEFAULT_BACKOFF_S
