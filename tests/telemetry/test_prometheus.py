"""The Prometheus text rendering of real SDK metrics, and the endpoint that serves it."""

from __future__ import annotations

import aiohttp
from opentelemetry.metrics import CallbackOptions, Observation

from ladder_process.health import ReadinessSlot
from ladder_process.metrics_server import MetricsSettings, serve_metrics
from ladder_process.telemetry.metrics import Kind, Metric, counts, observe
from ladder_process.telemetry.setup import Telemetry


def test_counters_gauges_and_histograms_render_in_the_text_format() -> None:
    telemetry = Telemetry("ladder-test")
    meter = telemetry.meter
    kept = {("binance.com", 'odd "reason"\n'): 3}
    things: Metric[dict[tuple[str, str], int]] = Metric(
        "ladder_things", Kind.COUNTER, "Things.\nCounted.", ("exchange", "reason"), counts
    )
    observe(meter, [things], kept)
    meter.create_up_down_counter("ladder_level").add(-2)

    def level(_options: CallbackOptions) -> list[Observation]:
        return [Observation(0.25, {"market": "BTC/USD"})]

    meter.create_observable_gauge("ladder_ratio", [level])
    histogram = meter.create_histogram("ladder_seconds", explicit_bucket_boundaries_advisory=(0.001, 0.01))
    for value in (0.0005, 0.005, 0.005, 3.0):
        histogram.record(value, {"route": "/x"})

    lines = telemetry.render_prometheus({"worker": "7"}).decode().splitlines()

    assert "# HELP ladder_things_total Things.\\nCounted." in lines
    assert "# TYPE ladder_things_total counter" in lines
    assert 'ladder_things_total{worker="7",exchange="binance.com",reason="odd \\"reason\\"\\n"} 3' in lines
    assert "# TYPE ladder_level gauge" in lines and 'ladder_level{worker="7"} -2' in lines
    assert 'ladder_ratio{worker="7",market="BTC/USD"} 0.25' in lines
    assert "# TYPE ladder_seconds histogram" in lines
    buckets = [line for line in lines if line.startswith("ladder_seconds_bucket")]
    assert buckets == [
        'ladder_seconds_bucket{worker="7",route="/x",le="0.001"} 1',
        'ladder_seconds_bucket{worker="7",route="/x",le="0.01"} 3',
        'ladder_seconds_bucket{worker="7",route="/x",le="+Inf"} 4',
    ]
    assert 'ladder_seconds_count{worker="7",route="/x"} 4' in lines
    assert 'ladder_seconds_sum{worker="7",route="/x"} 3.0105' in lines


def test_per_book_gauges_are_not_cut_at_the_default_cardinality_limit() -> None:
    telemetry = Telemetry("ladder-test")
    books = {f"M{i}": float(i) for i in range(2500)}
    gauges: list[Metric[dict[str, float]]] = [
        Metric(name, Kind.GAUGE, "", ("market",), counts)
        for name in ("ladder_book_test_age", "ladder_other_test")
    ]
    telemetry.observe(gauges, books)
    text = telemetry.render_prometheus().decode()
    assert text.count("ladder_book_test_age{") == 2500
    assert text.count("ladder_other_test{") < 2500  # any other instrument overflows as the SDK decides


async def test_the_endpoint_serves_the_rendering_and_is_off_by_default() -> None:
    ready = ReadinessSlot()
    async with serve_metrics(lambda: b"ladder_up 1\n", ready, MetricsSettings()) as url:
        assert url is None
    async with serve_metrics(lambda: b"ladder_up 1\n", ready, MetricsSettings(metrics_port=0)) as url:
        assert url is not None
        async with aiohttp.ClientSession() as http, http.get(url) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert await response.read() == b"ladder_up 1\n"
        taken = MetricsSettings(metrics_port=int(url.split(":")[2].split("/")[0]))
        async with serve_metrics(lambda: b"", ready, taken) as second:
            assert second is None  # the port is in use: no endpoint, and no crash
