"""Per-book gauges read locally report exactly what the SDK's observable gauges reported.

The reference is the SDK itself, configured as Ladder configured it before these gauges left it:
the same rows read by observable gauges (:func:`ladder_process.telemetry.metrics.observe`) in a
meter provider with the per-book cardinality view. Both report the same source, and what a
scrape serves (over HTTP) and what an OTLP exporter encodes must be the same, collection after
collection, a replica that stops included.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricsData,
    NumberDataPoint,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.metrics.export import Metric as SdkMetric
from opentelemetry.sdk.metrics.view import View

from ladder_process.health import ReadinessSlot
from ladder_process.metrics_server import MetricsSettings, serve_metrics
from ladder_process.telemetry.gauges import PER_BOOK_CARDINALITY, PER_BOOK_PREFIX, LocalGauges
from ladder_process.telemetry.local import SCOPE
from ladder_process.telemetry.metrics import Kind, Metric, Reading, observe, value
from ladder_process.telemetry.prometheus import render_metrics
from ladder_process.telemetry.setup import Telemetry
from tests.telemetry.helpers import Collecting

Book = tuple[str, str, int]
BOOK = ("exchange", "market", "replica")


class Books:
    """What per-book gauges read: each replica's update id (None before it syncs) and age."""

    def __init__(self) -> None:
        self.update_ids: dict[Book, int | None] = {
            ("binance.com", "BTCUSDT", 1): 2**53 + 1,  # exact past a float's integers
            ("binance.com", "BTCUSDT", 2): None,
            ("kraken", 'odd "market"\n', 1): 7,
            ("okx", "ETH-USDT", 1): 0,
        }
        self.ages: dict[Book, float] = {book: 0.25 * i for i, book in enumerate(self.update_ids)}
        self.ages[("okx", "ETH-USDT", 1)] = float("nan")  # left out, as the SDK leaves it out


def _update_ids(books: Books) -> Reading:
    return [(n, book) for book, n in books.update_ids.items() if n is not None]


def _ages(books: Books) -> Reading:
    first = next(iter(books.ages), None)
    repeated = [] if first is None else [(99.0, first)]  # one label set read twice: the last wins
    return [*((age, book) for book, age in books.ages.items()), *repeated]


def _replicas(books: Books) -> Reading:
    return value(len(books.ages))


def _broken(books: Books) -> Reading:
    raise RuntimeError("a reader that fails reports nothing, and the others go on")


TABLE: tuple[Metric[Books], ...] = (
    Metric("ladder_test_replicas", Kind.GAUGE, "Replicas (not per book: the SDK reads it).", read=_replicas),
    Metric("ladder_book_test_update_id", Kind.GAUGE, "The update id.\nPer replica.", BOOK, _update_ids),
    Metric("ladder_book_test_broken", Kind.GAUGE, "Never read.", BOOK, _broken),
    Metric("ladder_book_test_age_seconds", Kind.GAUGE, "Time since the venue spoke.", BOOK, _ages, unit="s"),
)


class Sdk:
    """The rows read by the SDK's observable gauges, as Ladder's meter provider read them."""

    def __init__(self, books: Books, limit: int = PER_BOOK_CARDINALITY) -> None:
        self.scrape = InMemoryMetricReader()
        self.exporter = Collecting()
        self.provider = MeterProvider(
            metric_readers=[self.scrape, PeriodicExportingMetricReader(self.exporter)],
            views=[View(instrument_name=PER_BOOK_PREFIX + "*", aggregation_cardinality_limit=limit)],
            exemplar_filter=AlwaysOffExemplarFilter(),
        )
        observe(self.provider.get_meter(SCOPE.name), TABLE, books)


@pytest.fixture
def books() -> Books:
    return Books()


@pytest.fixture
def sdk(books: Books) -> Iterator[Sdk]:
    reference = Sdk(books)
    yield reference
    reference.provider.shutdown()


def reported(data: MetricsData | SdkMetric | None) -> dict[str, Any]:
    """Every metric's name, description, unit, type and points, without the collection's time."""
    assert data is not None
    metrics = (
        [data]
        if isinstance(data, SdkMetric)
        else [m for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics]
    )
    return {
        m.name: (
            m.description,
            m.unit,
            type(m.data).__name__,
            [
                (
                    p.attributes,
                    [type(v).__name__ for v in (p.attributes or {}).values()],
                    p.value,
                    type(p.value).__name__,
                    p.start_time_unix_nano,
                    list(p.exemplars),
                )
                for p in m.data.data_points
                if isinstance(p, NumberDataPoint)
            ],
        )
        for m in metrics
    }


def encoded(data: MetricsData) -> list[bytes]:
    """The OTLP protobuf of every metric, the points' collection time zeroed."""
    out = []
    for resource in encode_metrics(data).resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "ladder"
            for metric in scope.metrics:
                for point in metric.gauge.data_points:
                    point.time_unix_nano = 0
                out.append(metric.SerializeToString(deterministic=True))
    return out


async def test_a_scrape_serves_what_the_sdk_served_after_each_change(books: Books, sdk: Sdk) -> None:
    telemetry = Telemetry("ladder-test")
    telemetry.observe(TABLE, books)
    ready = ReadinessSlot()
    async with (
        serve_metrics(telemetry.render_prometheus, ready, MetricsSettings(metrics_port=0)) as url,
        aiohttp.ClientSession() as http,
    ):
        assert url is not None
        for _ in range(2):
            async with http.get(url) as response:
                served = await response.read()
            assert served == render_metrics(sdk.scrape.get_metrics_data())
            assert (
                b'update_id{exchange="binance.com",market="BTCUSDT",replica="1"} 9007199254740993' in served
            )
            assert b"ladder_book_test_broken" not in served and b"NaN" not in served
        books.update_ids.pop(("binance.com", "BTCUSDT", 1))  # the replica stops: its series go
        books.ages.pop(("binance.com", "BTCUSDT", 1))
        async with http.get(url) as response:
            served = await response.read()
        assert served == render_metrics(sdk.scrape.get_metrics_data())
        assert b'market="BTCUSDT",replica="1"' not in served
        books.update_ids.clear()  # no replica left: no per-book family at all
        books.ages.clear()
        async with http.get(url) as response:
            served = await response.read()
        assert served == render_metrics(sdk.scrape.get_metrics_data())
        assert b"ladder_test_replicas 0" in served and b"ladder_book_" not in served


def test_collected_and_exported_data_are_what_the_sdk_collected_and_exported(books: Books, sdk: Sdk) -> None:
    exporter = Collecting()
    telemetry = Telemetry("ladder-test", metric_exporters=[exporter])
    telemetry.observe(TABLE, books)
    assert reported(telemetry.collect()) == reported(sdk.scrape.get_metrics_data())
    books.update_ids.pop(("kraken", 'odd "market"\n', 1))
    collected = _one(telemetry.collect())
    assert encoded(collected) == encoded(_one(sdk.scrape.get_metrics_data()))
    books.ages.pop(("kraken", 'odd "market"\n', 1))
    assert reported(telemetry.collect()) == reported(sdk.scrape.get_metrics_data())
    telemetry.shutdown()  # the periodic reader's last collection exports
    sdk.provider.force_flush()
    assert len(exporter.exported) == len(sdk.exporter.exported) == 1
    assert encoded(exporter.exported[0]) == encoded(sdk.exporter.exported[0])
    assert reported(exporter.exported[0]) == reported(sdk.exporter.exported[0])


def test_past_the_cardinality_limit_the_rest_is_one_overflow_point_as_the_sdk_reports() -> None:
    books = Books()
    books.update_ids = {("binance.com", f"M{i}", 1): i for i in range(7)}
    books.ages = {}
    sdk = Sdk(books, limit=3)
    gauges = LocalGauges(cardinality_limit=3)
    gauges.observe(TABLE[1:], books)
    (metric,) = gauges.metrics(0)
    expected = reported(sdk.scrape.get_metrics_data())
    sdk.provider.shutdown()
    assert reported(metric) == {metric.name: expected[metric.name]}
    assert len(metric.data.data_points) == 4
    assert metric.data.data_points[-1].attributes == {"otel.metric.overflow": True}
    assert isinstance(metric.data.data_points[-1], NumberDataPoint) and metric.data.data_points[-1].value == 6


def _one(data: MetricsData | None) -> MetricsData:
    assert data is not None
    return data
