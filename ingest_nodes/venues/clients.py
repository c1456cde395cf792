"""The REST client of each venue, chosen by its exchange's protocol: what the runtime asks for."""

from __future__ import annotations

from collections.abc import Callable

import aiohttp

from ingest_nodes.venues.alpaca.assets import AlpacaRest
from ingest_nodes.venues.binance.rest import VenueRestClient
from ingest_nodes.venues.budget import WeightBudget
from ingest_nodes.venues.credentials import Credential
from ingest_nodes.venues.registry import ExchangeSpec
from ingest_nodes.venues.rest import VenueRest


def rest_client(
    spec: ExchangeSpec,
    session: aiohttp.ClientSession,
    budget: WeightBudget,
    credential: Credential | None,
    *,
    on_status: Callable[[int], None],
) -> VenueRest:
    """Alpaca's asset list (read with ``credential``), or Binance's snapshots and exchangeInfo
    inside ``budget``; ``on_status`` observes every non-200 answer."""
    if spec.resets_on_stream:
        return AlpacaRest(session, spec.id, spec.rest_url, credential)
    return VenueRestClient(session, spec, budget, on_status=on_status)
