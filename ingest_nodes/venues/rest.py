"""What every venue's REST client offers an exchange's runtime, and how its calls fail."""

from __future__ import annotations

from typing import Protocol

from book_store.catalog import MarketInfo
from ingest_nodes.core.events import DepthSnapshot
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
