"""The REST side of a venue that sends its books on the stream: its market list, and no snapshots.

Alpaca, Kraken and Coinbase send a book's whole state on the WebSocket after each subscribe, so all
Ladder asks of their REST APIs is the list of markets they trade (one GET, read at most every
``LADDER_CATALOG_REFRESH_S`` by one node); there is no snapshot for the scheduler to fetch and no
request weight to share. Each venue supplies the URL, its headers and a parser of the answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import aiohttp

from book_store.catalog import MarketInfo
from ingest_nodes.core.events import DepthSnapshot
from ingest_nodes.venues.rest import VenueRequestError, get_answer

MarketParser = Callable[[bytes, str], list[MarketInfo]]
"""``(body, exchange) -> markets``; raises ``VenuePayloadError`` on an answer it cannot read."""


class MarketListClient:
    """``markets()`` from one GET of ``url``; ``snapshot()`` always refuses (the stream has them)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        exchange: str,
        url: str,
        parse: MarketParser,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 10.0,
        unreadable: str | None = None,
    ) -> None:
        """``unreadable``: why the list cannot be read at all (a key is missing), said by each call."""
        self._session = session
        self._exchange = exchange
        self._url = url
        self._parse = parse
        self._params = dict(params or {})
        self._headers = dict(headers or {})
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._unreadable = unreadable

    async def snapshot(self, symbol: str, limit: int) -> DepthSnapshot:
        raise VenueRequestError(f"{self._exchange} has no depth snapshots: books come whole on the stream")

    async def markets(self) -> list[MarketInfo]:
        if self._unreadable is not None:
            raise VenueRequestError(f"{self._exchange}: {self._unreadable}")
        what = f"{self._exchange} /{self._url.split('://', 1)[-1].partition('/')[2]}"
        answer = await get_answer(
            self._session, self._url, self._params, self._timeout, what, headers=self._headers
        )
        if answer.status != 200:
            raise VenueRequestError(
                f"{what} answered {answer.status}", status=answer.status, retry_after_s=answer.retry_after_s
            )
        return self._parse(answer.body, self._exchange)
