"""Venue timestamps in RFC 3339 (Alpaca, Kraken v2, Coinbase), as Ladder's milliseconds since the epoch."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Final

from ingest_nodes.core.errors import VenuePayloadError

_RFC3339: Final = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", re.IGNORECASE)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS: Final = timedelta(milliseconds=1)


def rfc3339_to_ms(text: str) -> int:
    """``2024-03-12T10:38:50.79613221Z`` -> ms since the epoch (sub-millisecond digits dropped)."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise VenuePayloadError(f"bad timestamp {text[:40]!r}")
    whole, fraction, zone = match.groups()
    offset = "+00:00" if zone.upper() == "Z" else zone
    try:
        moment = datetime.fromisoformat(whole + offset)
    except ValueError as exc:
        raise VenuePayloadError(f"bad timestamp {text[:40]!r}") from exc
    millis = int((fraction or "")[:3].ljust(3, "0"))
    return (moment - _EPOCH) // _ONE_MS + millis
