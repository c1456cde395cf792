"""Everything one exchange needs on a node: its weight budget, REST client, snapshot scheduler, feed.

Built once per configured exchange from the settings; the node starts the scheduler's dispatcher
and the stall checker, and places every replica of the exchange on the feed and under the checker.
The venue decides the REST client (Binance: snapshots and exchangeInfo; Alpaca: the asset list, no
snapshots, so its scheduler stays idle) and whether connections hold keys (Alpaca: one connection
per key of ``credentials``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import aiohttp

from book_store.connect import StoreClient
from ingest_nodes.ops.stats import SnapshotStats
from ingest_nodes.runtime.feed import ExchangeFeed
from ingest_nodes.runtime.snapshots import SnapshotScheduler
from ingest_nodes.runtime.stall_checks import StallChecker
from ingest_nodes.settings import IngestSettings
from ingest_nodes.venues.budget import WeightBudget
from ingest_nodes.venues.clients import rest_client
from ingest_nodes.venues.credentials import Credential
from ingest_nodes.venues.registry import ExchangeSpec
from ingest_nodes.venues.rest import VenueRest


@dataclass(frozen=True, slots=True)
class ExchangeRuntime:
    spec: ExchangeSpec
    budget: WeightBudget
    rest: VenueRest
    scheduler: SnapshotScheduler
    feed: ExchangeFeed
    stats: SnapshotStats
    stall_checker: StallChecker


def build_exchange(
    spec: ExchangeSpec,
    settings: IngestSettings,
    client: StoreClient,
    session: aiohttp.ClientSession,
    credentials: Sequence[Credential] = (),
) -> ExchangeRuntime:
    """``credentials``: the keys of a venue that authenticates connections (ignored by others); the
    first reads the asset list, and the feed connects with them until ``set_credentials``."""
    stats = SnapshotStats()
    budget = WeightBudget(
        client,
        egress_id=settings.egress_id,
        venue_host=spec.weight_pool,
        limit=int(spec.weight_per_minute * settings.weight_budget_share),
    )
    rest = rest_client(spec, session, budget, next(iter(credentials), None), on_status=stats.refused)
    scheduler = SnapshotScheduler(
        rest,
        budget,
        weight_of=spec.depth_weight,
        concurrency=settings.snapshot_concurrency,
        background_share=settings.background_weight_share,
        check_share=settings.stall_check_share,
        stats=stats,
        exchange=spec.id,
    )
    feed = ExchangeFeed(
        spec,
        streams_per_connection=settings.streams_per_connection,
        max_age_s=settings.connection_max_age_s,
        rollover_jitter=settings.rollover_jitter,
        handover_timeout_s=settings.handover_timeout_s,
        credentials=list(credentials) if spec.needs_credentials else None,
    )
    return ExchangeRuntime(
        spec=spec,
        budget=budget,
        rest=rest,
        scheduler=scheduler,
        feed=feed,
        stats=stats,
        stall_checker=StallChecker(scheduler, by_rest=spec.checks_by_rest),
    )
