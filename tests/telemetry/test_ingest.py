"""One ingest node in this process, a quiet fake venue and real Valkey: what one update leaves behind."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import cast

import aiohttp
import pytest
import redis.asyncio as redis
from opentelemetry.sdk.trace import ReadableSpan

from book_store.codec import BookStatus, Snapshot
from book_store.reader import BookReader
from book_store.schema import BookKey
from control_plane.models import ReplicaAssignment
from control_plane.stores.redis import RedisControlStore
from fake_venue import FakeVenue
from ingest_nodes.ops.stats import ReplicaStats
from ingest_nodes.ops.telemetry import INGEST_METRICS, IngestTelemetry, NodeFacts
from ingest_nodes.runtime.node import IngestNode
from ingest_nodes.settings import IngestSettings
from ladder_process.telemetry.metrics import LabelValues
from tests.fake_venue.conftest import small_config
from tests.telemetry.helpers import Recorded, recorded

BOOK = BookKey("binance.com", "ETHBTC")
NODE = "telemetry-node"


@dataclass
class Running:
    venue: FakeVenue
    reader: BookReader
    record: Recorded
    http: aiohttp.ClientSession
    node: IngestNode

    async def control(self, **action: object) -> None:
        """The fake venue's control endpoint, for this test's book."""
        body = {"venue": "spot", "symbol": BOOK.market, **action}
        async with self.http.post(f"{self.venue.url}/_fake/control", json=body) as response:
            assert response.status == 200, await response.text()

    async def burst(self) -> None:
        await self.control(action="burst", count=1)


async def eventually(
    check: Callable[[], Awaitable[bool]], nudge: Callable[[], Awaitable[None]] | None = None
) -> None:
    """Poll ``check`` (awaiting ``nudge`` between polls) for up to 10 s."""
    async with asyncio.timeout(10.0):
        while not await check():
            if nudge is not None:
                await nudge()
            await asyncio.sleep(0.02)


@pytest.fixture
async def running(redis_client: redis.Redis, clean_redis_url: str) -> AsyncIterator[Running]:
    venue = FakeVenue(small_config(rate=0.0))  # quiet: the test makes every update itself
    url = await venue.start()
    record = recorded("ladder-ingest-test")
    settings = IngestSettings(
        redis_url=clean_redis_url,
        node_id=NODE,
        exchanges="binance.com",
        binance_spot_rest_url=url,
        binance_spot_ws_url="ws" + url.removeprefix("http"),
        # Long enough that stopping lands between store calls: on Python 3.11 a cancellation that
        # meets a completing redis call can be lost, and the heartbeat loop would never end.
        heartbeat_ms=2000,
    )
    assignment = ReplicaAssignment(BOOK.exchange, BOOK.market, 1, NODE)
    await RedisControlStore(redis_client).replace_assignments(NODE, [assignment])
    stop = asyncio.Event()
    async with aiohttp.ClientSession() as session:
        node = IngestNode(settings, redis_client, session, telemetry=IngestTelemetry(record.telemetry))
        task = asyncio.create_task(node.run(stop, drain=lambda: False))
        try:
            yield Running(venue, BookReader(redis_client), record, session, node)
        finally:
            stop.set()
            await asyncio.wait_for(task, 15)
            await venue.stop()


async def stored(running: Running) -> Snapshot | None:
    return (await running.reader.replicas(BOOK)).get(1)


async def wait_synced(running: Running) -> Snapshot:
    """Until the replica is stored as synced (a spot book syncs on the first event after its snapshot)."""
    found: list[Snapshot] = []

    async def synced() -> bool:
        snap = await stored(running)
        found[:] = [snap] if snap is not None and snap.meta.status is BookStatus.SYNCED else []
        return bool(found)

    await eventually(synced, nudge=running.burst)
    return found[0]


def latency_count(record: Recorded) -> int:
    point = record.histogram("ladder_ingest_publish_latency_seconds", exchange="binance.com")
    return 0 if point is None else point.count


def int_attribute(span: ReadableSpan, key: str) -> int:
    value = (span.attributes or {}).get(key)
    assert isinstance(value, int), f"{span.name} {key}={value!r}"
    return value


async def test_one_update_leaves_its_spans_and_metric_points(running: Running) -> None:
    record = running.record
    before = await wait_synced(running)
    fetch = record.finished("ladder.snapshot_fetch")
    assert len(fetch) == 1 and fetch[0].attributes is not None
    assert fetch[0].attributes["ladder.exchange"] == "binance.com"
    assert fetch[0].attributes["ladder.market"] == "ETHBTC"
    assert record.value("ladder_ingest_snapshot_fetches", exchange="binance.com", outcome="ok") == 1
    assert record.points("ladder_ingest_venue_refusals") == []  # the venue answered every request

    async def settled() -> bool:  # every frame the venue made has reached the book and the store
        made = running.venue.spot.events_sent
        return (
            record.value("ladder_ingest_events", exchange="binance.com") == made
            and latency_count(record) >= 1
        )

    await eventually(settled)
    await stored(running)  # one more round trip: the writer has reported the flush that stored it
    events = record.value("ladder_ingest_events", exchange="binance.com")
    latencies = latency_count(record)
    batches_before = len(record.finished("ladder.publish_batch"))

    await running.burst()

    async def one_more() -> bool:
        return latency_count(record) > latencies

    await eventually(one_more)
    after = await stored(running)
    assert after is not None and after.meta.update_id > before.meta.update_id
    assert after.meta.ingest_time is not None
    assert record.value("ladder_ingest_events", exchange="binance.com") == events + 1
    latency = record.histogram("ladder_ingest_publish_latency_seconds", exchange="binance.com")
    assert latency is not None and latency.count == latencies + 1
    assert 0 <= latency.max < 1.0
    batches = record.finished("ladder.publish_batch")[batches_before:]
    assert sum(int_attribute(span, "ladder.new_frames") for span in batches if span.attributes) == 1
    assert all(span.end_time >= span.start_time for span in batches if span.end_time and span.start_time)
    assert record.value("ladder_ingest_books", exchange="binance.com", status="synced") == 1
    age = record.value("ladder_book_age_seconds", exchange="binance.com", market="ETHBTC", replica=1)
    assert 0 <= age < 5
    assert record.value("ladder_ingest_published_snapshots") >= 2

    document = running.node.stats()  # what the node reports to the store, for operators
    reported = document["publish_latency_ms"]
    assert isinstance(reported, dict) and reported["binance.com"]["count"] == latencies + 1
    assert 0 < reported["binance.com"]["p50"] <= reported["binance.com"]["p99"] <= 1000
    process = document["process"]
    assert isinstance(process, dict) and process["cpu_s"] > 0 and process["rss_bytes"] > 10_000_000
    exchanges = document["exchanges"]
    assert isinstance(exchanges, dict) and exchanges["binance.com"]["weight_limit"] > 0
    assert document["egress_id"] == "default" and exchanges["binance.com"]["weight_pool"]
    text = record.telemetry.render_prometheus().decode()
    assert f'ladder_ingest_events_total{{exchange="binance.com"}} {events + 1}' in text
    assert "# TYPE ladder_ingest_publish_latency_seconds histogram" in text


async def test_a_gap_opens_a_resync_span_that_parents_the_fetch(running: Running) -> None:
    record = running.record
    await wait_synced(running)
    await running.control(action="gap", count=1)
    await running.control(action="burst", count=2)  # the first is withheld: the second shows the gap

    def reasons() -> list[object]:
        spans = record.finished("ladder.resync")
        return [span.attributes["ladder.reason"] for span in spans if span.attributes]

    async def resynced() -> bool:
        return "gap" in reasons()

    await eventually(resynced, nudge=running.burst)
    assert reasons() == ["start", "gap"], "the first sync is traced too"
    start, resync = record.finished("ladder.resync")
    assert resync.attributes is not None and start.attributes is not None
    assert resync.attributes["ladder.outcome"] == "synced"
    assert resync.context is not None and start.context is not None
    fetches = record.finished("ladder.snapshot_fetch")
    parents = [f.parent.span_id for f in fetches if f.parent is not None]
    assert parents == [start.context.span_id, resync.context.span_id]
    for span in (start, resync):
        assert span.attributes is not None
        assert span.attributes["ladder.venue_status"] == 200 and int_attribute(span, "ladder.weight") > 0
        assert int_attribute(span, "ladder.update_id") > 0
    fetch = fetches[-1]
    assert fetch.attributes is not None and fetch.attributes["http.response.status_code"] == 200
    assert record.value("ladder_ingest_resyncs", exchange="binance.com", reason="gap") == 1


@dataclass
class Kept:
    """A replica as the node's counters read it (they read nothing but its book and stats)."""

    book: BookKey
    stats: ReplicaStats


@dataclass
class Counted:
    """A node as its counters read it: live replicas and the retired ones' sums per exchange."""

    replicas: dict[tuple[BookKey, int], Kept]
    retired: dict[str, ReplicaStats]


def test_the_counters_sum_every_replica_kept_live_and_retired() -> None:
    kraken = BookKey("kraken", "XBT/USD")
    live = {
        (BOOK, 1): Kept(BOOK, ReplicaStats(events=5, snapshots=1, resyncs=Counter(gap=2))),
        (BOOK, 2): Kept(BOOK, ReplicaStats(events=7, snapshots=1, snapshot_failures=1)),
        (kraken, 1): Kept(kraken, ReplicaStats(events=3, resyncs=Counter(checksum=1))),
    }
    retired = {"binance.com": ReplicaStats(events=100, resyncs=Counter(gap=1, stall=1), audits=2)}
    expected = {
        "ladder_ingest_events": [(3, ("kraken",)), (112, ("binance.com",))],
        "ladder_ingest_resyncs": [
            (1, ("binance.com", "stall")),
            (1, ("kraken", "checksum")),
            (3, ("binance.com", "gap")),
        ],
        "ladder_ingest_fresh_snapshots": [(2, ("binance.com", "audit"))],
        "ladder_ingest_audit_mismatches": [],  # a count that is zero everywhere has no series
        "ladder_ingest_stall_checks": [],
        "ladder_ingest_snapshot_fetches": [(1, ("binance.com", "failed")), (2, ("binance.com", "ok"))],
    }
    ingest = IngestTelemetry(recorded("ladder-ingest-sums").telemetry)

    def read() -> dict[str, list[tuple[float, LabelValues]]]:
        return {
            row.name: sorted(row.read(ingest)) for row in INGEST_METRICS if row.name in expected and row.read
        }

    assert all(found == [] for found in read().values())  # no node watched yet
    ingest.node = cast(NodeFacts, Counted(live, retired))
    assert read() == expected
