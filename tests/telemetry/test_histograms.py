"""Local histograms: OTel's bucket rule on record, and their place in scrapes and periodic exports."""

from __future__ import annotations

import io
import json
import time

import pytest
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    ConsoleMetricExporter,
    Histogram,
)

from ingest_nodes.ops.telemetry import IngestTelemetry
from ladder_process.telemetry.histograms import LocalHistogram, bucket_quantile
from ladder_process.telemetry.setup import Telemetry
from tests.telemetry.helpers import Collecting, recorded

BOUNDS = (0.001, 0.01, 0.1)


def latency(telemetry: Telemetry) -> LocalHistogram:
    return telemetry.histogram("ladder_test_seconds", description="Test latency.", unit="s", bounds=BOUNDS)


def test_a_value_on_a_bound_counts_in_the_bucket_it_closes() -> None:
    record = recorded("ladder-histogram-test")
    before = time.time_ns()
    series = latency(record.telemetry).series({"route": "/x"})
    for value in (0.0, 0.001, 0.0010001, 0.01, 0.1, 0.1000001, 7.0):
        series.record(value)

    point = record.histogram("ladder_test_seconds", route="/x")
    assert point is not None
    assert list(point.bucket_counts) == [2, 2, 1, 2]
    assert list(point.explicit_bounds) == list(BOUNDS)
    assert point.count == 7
    assert point.sum == pytest.approx(7.2120002)
    assert (point.min, point.max) == (0.0, 7.0)
    assert before <= point.start_time_unix_nano <= point.time_unix_nano
    assert point.attributes == {"route": "/x"}


def test_one_histogram_per_name_one_series_per_label_set() -> None:
    telemetry = Telemetry("ladder-histogram-test")
    histogram = latency(telemetry)
    again = latency(telemetry)
    assert again is histogram
    assert histogram.series({"a": "1", "b": "2"}) is histogram.series({"b": "2", "a": "1"})
    assert histogram.series({"a": "1"}) is not histogram.series({"a": "2"})
    histogram.series({"a": "1"}).record(0.5)
    data = telemetry.collect()
    assert data is not None
    (metric,) = [m for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics]
    assert isinstance(metric.data, Histogram)
    assert [p.attributes for p in metric.data.data_points] == [{"a": "1"}]  # unrecorded series: no point


def test_bounds_must_increase() -> None:
    with pytest.raises(ValueError, match="increase"):
        Telemetry.disabled().histogram("ladder_test_seconds", description="", unit="s", bounds=(0.1, 0.1))


def test_disabled_telemetry_records_cheaply_and_reports_nothing() -> None:
    telemetry = Telemetry.disabled()
    latency(telemetry).series({}).record(1.0)
    assert telemetry.collect() is None
    assert telemetry.render_prometheus() == b""


def test_collect_puts_histograms_beside_the_sdk_metrics_and_prometheus_renders_them() -> None:
    telemetry = Telemetry("ladder-histogram-test")
    telemetry.meter.create_counter("ladder_test_things").add(1)
    histogram = latency(telemetry)
    for value in (0.0005, 0.005, 0.005, 3.0):
        histogram.series({"route": "/x"}).record(value)

    data = telemetry.collect()
    assert data is not None
    (resource,) = data.resource_metrics
    assert resource.resource.attributes["service.name"] == "ladder-histogram-test"
    (scope,) = resource.scope_metrics
    assert scope.scope.name == "ladder"
    by_name = {m.name: m for m in scope.metrics}
    assert set(by_name) == {"ladder_test_things", "ladder_test_seconds"}
    seconds = by_name["ladder_test_seconds"]
    assert (seconds.description, seconds.unit) == ("Test latency.", "s")
    assert isinstance(seconds.data, Histogram)
    assert seconds.data.aggregation_temporality is AggregationTemporality.CUMULATIVE

    lines = telemetry.render_prometheus({"worker": "7"}).decode().splitlines()
    assert "# HELP ladder_test_seconds Test latency." in lines
    assert "# TYPE ladder_test_seconds histogram" in lines
    assert [line for line in lines if line.startswith("ladder_test_seconds_bucket")] == [
        'ladder_test_seconds_bucket{worker="7",route="/x",le="0.001"} 1',
        'ladder_test_seconds_bucket{worker="7",route="/x",le="0.01"} 3',
        'ladder_test_seconds_bucket{worker="7",route="/x",le="0.1"} 3',
        'ladder_test_seconds_bucket{worker="7",route="/x",le="+Inf"} 4',
    ]
    assert 'ladder_test_seconds_count{worker="7",route="/x"} 4' in lines
    assert 'ladder_test_seconds_sum{worker="7",route="/x"} 3.0105' in lines
    assert "ladder_test_things_total" in "\n".join(lines)


def test_collect_reports_histograms_when_the_sdk_has_nothing() -> None:
    telemetry = Telemetry("ladder-histogram-test")
    latency(telemetry).series({}).record(0.5)
    assert b"ladder_test_seconds_count 1" in telemetry.render_prometheus()


def test_a_periodic_exporter_receives_the_histograms_in_the_same_resource() -> None:
    exporter = Collecting()
    telemetry = Telemetry("ladder-histogram-test", metric_exporters=[exporter])
    telemetry.meter.create_counter("ladder_test_things").add(1)
    series = latency(telemetry).series({"exchange": "binance.com"})
    series.record(0.005)
    series.record(0.05)
    telemetry.shutdown()  # the periodic reader's last collection exports

    assert exporter.exported
    (resource,) = exporter.exported[-1].resource_metrics
    assert resource.resource.attributes["service.name"] == "ladder-histogram-test"
    (scope,) = resource.scope_metrics
    by_name = {m.name: m for m in scope.metrics}
    assert set(by_name) == {"ladder_test_things", "ladder_test_seconds"}
    histogram = by_name["ladder_test_seconds"].data
    assert isinstance(histogram, Histogram)
    (point,) = histogram.data_points
    assert point.attributes == {"exchange": "binance.com"}
    assert (point.count, list(point.bucket_counts)) == (2, [0, 1, 1, 0])


def test_the_console_exporter_prints_the_histograms() -> None:
    out = io.StringIO()
    telemetry = Telemetry("ladder-histogram-test", metric_exporters=[ConsoleMetricExporter(out=out)])
    telemetry.meter.create_counter("ladder_test_things").add(1)
    latency(telemetry).series({}).record(0.05)
    telemetry.shutdown()

    exported = json.loads(out.getvalue())
    metrics = {
        m["name"]: m for r in exported["resource_metrics"] for s in r["scope_metrics"] for m in s["metrics"]
    }
    (point,) = metrics["ladder_test_seconds"]["data"]["data_points"]
    assert (point["count"], point["bucket_counts"], point["min"]) == (1, [0, 0, 1, 0], 0.05)


def test_a_quantile_reads_as_the_bound_of_its_bucket() -> None:
    assert bucket_quantile(BOUNDS, [0, 0, 0, 0], 0.5) is None
    assert bucket_quantile(BOUNDS, [5, 4, 1, 0], 0.5) == 0.001
    assert bucket_quantile(BOUNDS, [5, 4, 1, 0], 0.9) == 0.01
    assert bucket_quantile(BOUNDS, [5, 4, 1, 0], 0.99) == 0.1
    assert bucket_quantile(BOUNDS, [0, 0, 1, 9], 0.5) == 0.1  # past the last bound: "at least this"


def test_reported_publish_latency_covers_about_the_last_minute() -> None:
    ingest = IngestTelemetry(recorded("ladder-ingest-window").telemetry)
    series = ingest._latency_of("binance.com")
    for value in (0.0004, 0.0015, 0.0015, 0.004):
        series.record(value)
    assert ingest.publish_latency(1000.0) == {"binance.com": {"count": 4, "p50": 2.0, "p90": 5.0, "p99": 5.0}}
    series.record(0.3)
    assert ingest.publish_latency(1030.0)["binance.com"] == {
        "count": 5,
        "p50": 2.0,
        "p90": 500.0,
        "p99": 500.0,
    }
    assert ingest.publish_latency(1061.0)["binance.com"]["count"] == 1  # the first four are over a minute old
    assert ingest.publish_latency(1100.0)["binance.com"] == {
        "count": 0,
        "p50": None,
        "p90": None,
        "p99": None,
    }
