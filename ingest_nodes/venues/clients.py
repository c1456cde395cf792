"""The REST client of each venue, chosen by its exchange's protocol: what the runtime asks for."""

from __future__ import annotations

from collections.abc import Callable

import aiohttp

from ingest_nodes.venues.alpaca.assets import alpaca_markets
from ingest_nodes.venues.binance.rest import VenueRestClient
from ingest_nodes.venues.budget import WeightBudget
from ingest_nodes.venues.bybit.rest import BybitRest
from ingest_nodes.venues.coinbase.products import PRODUCTS_PARAMS, PRODUCTS_PATH, parse_products
from ingest_nodes.venues.credentials import Credential
from ingest_nodes.venues.kraken.pairs import PAIRS_PATH, parse_asset_pairs
from ingest_nodes.venues.market_list import MarketListClient
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
    """Alpaca's asset list (read with ``credential``), Kraken's pair list, Coinbase's product list,
    or the books and market lists of Binance, OKX and Bybit inside ``budget``; ``on_status``
    observes every non-200 answer of those three."""
    protocol = spec.protocol
    base = spec.rest_url.rstrip("/")
    if protocol is VenueProtocol.ALPACA:
        return alpaca_markets(session, spec.id, spec.rest_url, credential)
    if protocol is VenueProtocol.KRAKEN:
        return MarketListClient(session, spec.id, base + PAIRS_PATH, parse_asset_pairs)
    if protocol is VenueProtocol.COINBASE:
        return MarketListClient(
            session, spec.id, base + PRODUCTS_PATH, parse_products, params=PRODUCTS_PARAMS
        )
    if protocol is VenueProtocol.OKX:
        return OkxRest(session, spec.id, spec.rest_url, budget, on_status=on_status)
    if protocol in (VenueProtocol.BYBIT_SPOT, VenueProtocol.BYBIT_LINEAR):
        category = "spot" if protocol is VenueProtocol.BYBIT_SPOT else "linear"
        return BybitRest(session, spec.id, spec.rest_url, category, budget, on_status=on_status)
    return VenueRestClient(session, spec, budget, on_status=on_status)
