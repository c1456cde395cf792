"""The REST client of each venue, chosen by its exchange's protocol: what the runtime asks for."""

from __future__ import annotations

from collections.abc import Callable

import aiohttp

from ingest_nodes.venues.alpaca.assets import AlpacaRest
from ingest_nodes.venues.binance.rest import VenueRestClient
from ingest_nodes.venues.budget import WeightBudget
from ingest_nodes.venues.bybit.rest import BybitRest
from ingest_nodes.venues.credentials import Credential
from ingest_nodes.venues.okx.rest import OkxRest
from ingest_nodes.venues.registry import ExchangeSpec, VenueProtocol
from ingest_nodes.venues.rest import VenueRest


def rest_client(
    spec: ExchangeSpec,
    session: aiohttp.ClientSession,
    budget: WeightBudget,
    credential: Credential | None,
    *,
    on_status: Callable[[int], None],
) -> VenueRest:
    """Alpaca's asset list (read with ``credential``), or the books and market lists of Binance,
    OKX and Bybit inside ``budget``; ``on_status`` observes every non-200 answer."""
    protocol = spec.protocol
    if protocol is VenueProtocol.ALPACA:
        return AlpacaRest(session, spec.id, spec.rest_url, credential)
    if protocol is VenueProtocol.OKX:
        return OkxRest(session, spec.id, spec.rest_url, budget, on_status=on_status)
    if protocol in (VenueProtocol.BYBIT_SPOT, VenueProtocol.BYBIT_LINEAR):
        category = "spot" if protocol is VenueProtocol.BYBIT_SPOT else "linear"
        return BybitRest(session, spec.id, spec.rest_url, category, budget, on_status=on_status)
    return VenueRestClient(session, spec, budget, on_status=on_status)
