"""Spans and metrics leave over OTLP/HTTP to a real receiver, and a dead collector costs nothing.

The in-process tests export through the real OTLP exporter to the loopback receiver of
:mod:`tests.telemetry.otlp_receiver`, or to a closed port. The stack test runs every component
(fake venue, control, an ingest node, the read server) with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set,
as an operator would, and follows one SDK call into the read server's spans; then it closes the
receiver and shows that reads go on unharmed while spans are dropped and counted.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator, Sequence

import httpx
import pytest
from ladder_sdk import Ladder
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Tracer, format_span_id, format_trace_id

from ladder_process.telemetry.setup import Telemetry, ladder_version
from ladder_process.telemetry.span_queue import BoundedSpanProcessor, CountingSpanExporter
from tests.e2e.stack import ADMIN_KEY, Stack, start_stack
from tests.telemetry.otlp_receiver import OtlpReceiver, otlp_receiver

READ_SPAN = "GET /v1/books/{exchange}/{market}"


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape_value(text: str, sample: str) -> float:
    """The sum of the sample lines that start with ``sample`` (0 if none)."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(sample))


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    """A receiver, and the standard variables pointing at it (the exporters read os.environ)."""
    with otlp_receiver() as running:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", running.url)
        monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=from-env,team=books")
        yield running


def test_spans_and_metrics_reach_the_receiver_with_one_resource(receiver: OtlpReceiver) -> None:
    telemetry = Telemetry.from_env(
        "ladder-test",
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_METRICS_EXPORTER": "otlp",
            "OTEL_TRACES_SAMPLER": "parentbased_always_on",  # what is exported, not what is sampled
            "LADDER_ENVIRONMENT": "ci",
        },
        resource_attributes={"ladder.node_id": "node-7"},
    )
    assert telemetry.tracer is not None
    telemetry.meter.create_counter("ladder_test_things").add(3)
    with telemetry.tracer.start_as_current_span("ladder.test", attributes={"ladder.market": "ETHBTC"}):
        pass
    telemetry.shutdown()  # flushes both signals

    (span,) = receiver.received.named("ladder.test")
    assert span.attributes == {"ladder.market": "ETHBTC"}
    resource = span.resource
    assert resource["service.name"] == "ladder-test" and resource["service.version"] == ladder_version()
    assert resource["ladder.node_id"] == "node-7" and resource["service.instance.id"]
    # OTEL_RESOURCE_ATTRIBUTES wins over Ladder's own words, and adds what it likes
    assert resource["deployment.environment"] == "from-env" and resource["team"] == "books"
    assert "ladder_test_things" in receiver.received.metric_names
    assert resource in receiver.received.metric_resources, "metrics and traces share one resource"


def test_a_dead_collector_drops_spans_without_blocking(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    telemetry = Telemetry.from_env(
        "ladder-test",
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_BSP_MAX_QUEUE_SIZE": "100",
            "OTEL_TRACES_SAMPLER": "always_on",  # every span tries the dead collector
        },
    )
    assert telemetry.tracer is not None
    spans = 20_000

    def per_span_us(tracer: Tracer) -> float:
        started = time.perf_counter()
        for i in range(spans):
            tracer.start_span("ladder.test", attributes={"i": i}).end()
        return (time.perf_counter() - started) / spans * 1e6

    # The same spans into a list: what a span costs with nothing to wait for, under today's load.
    listed = Telemetry("ladder-test", span_processors=[SimpleSpanProcessor(InMemorySpanExporter())])
    assert listed.tracer is not None
    baseline_us = per_span_us(listed.tracer)
    listed.shutdown()
    dead_us = per_span_us(telemetry.tracer)
    assert dead_us < 3 * baseline_us + 20, f"{dead_us:.0f} us a span against {baseline_us:.0f}: it waited"
    failed = 'ladder_telemetry_spans_exported_total{outcome="failed"}'

    def counts() -> tuple[float, float, float]:
        text = telemetry.render_prometheus().decode()
        samples = ("ladder_telemetry_spans_dropped_total", failed, "ladder_telemetry_span_queue")
        dropped, failures, queued = (scrape_value(text, sample) for sample in samples)
        return dropped, failures, queued

    dropped, failures, queued = counts()
    assert queued <= 100, "the queue never holds more than its bound"
    assert dropped > spans / 2, "most spans met a full queue, or a paused exporter"
    # Every span is accounted for once the batch in flight has failed: dropped, failed or queued.
    deadline = time.monotonic() + 15
    while failures == 0 or dropped + failures + queued != spans:
        assert time.monotonic() < deadline, f"spans unaccounted for: {dropped=} {failures=} {queued=}"
        time.sleep(0.2)
        dropped, failures, queued = counts()
    started = time.perf_counter()
    telemetry.shutdown()
    assert time.perf_counter() - started < 10, "shutdown waited too long for a dead collector"
    exporter_lines = [r for r in caplog.records if r.name.startswith("opentelemetry.exporter")]
    assert 0 < len(exporter_lines) <= 6, "one export failure a minute per logger and level is logged"


def test_the_queue_bound_comes_from_the_standard_variable() -> None:
    def bound(env: dict[str, str]) -> int:
        processor = BoundedSpanProcessor.from_env(InMemorySpanExporter(), env)
        processor.shutdown()  # type: ignore[no-untyped-call]
        return processor.max_queue_size

    assert bound({}) == 2048
    assert bound({"OTEL_BSP_MAX_QUEUE_SIZE": "64"}) == 64
    assert bound({"OTEL_BSP_MAX_QUEUE_SIZE": "-3"}) == 2048


@pytest.fixture(scope="module")
def traced_stack() -> Iterator[tuple[Stack, OtlpReceiver]]:
    """A whole stack exporting to a receiver, as ``OTEL_EXPORTER_OTLP_ENDPOINT=... ladder up`` runs it."""
    with otlp_receiver() as receiver:
        stack = start_stack(
            ingest_nodes=1,
            extra_env={
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
                "OTEL_METRICS_EXPORTER": "otlp",
                "OTEL_METRIC_EXPORT_INTERVAL": "500",
                "OTEL_BSP_SCHEDULE_DELAY": "100",
                "OTEL_BSP_MAX_QUEUE_SIZE": "64",
                "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
                "OTEL_TRACES_SAMPLER": "parentbased_always_on",  # every component's spans, to check them
                "LADDER_ENVIRONMENT": "e2e",
            },
        )
        try:
            yield stack, receiver
        finally:
            stack.stop()


@pytest.mark.slow
def test_every_component_exports_and_a_read_continues_the_callers_trace(
    traced_stack: tuple[Stack, OtlpReceiver],
) -> None:
    stack, receiver = traced_stack
    received = receiver.received
    key = stack.tenant_key("otel")
    made = stack.call(key, "POST", "/v1/subscriptions", json={"exchange": "binance.com", "market": "ETHBTC"})
    assert made.status_code == 201, made.text
    stack.wait_synced(key, "binance.com", "ETHBTC")

    caller = TracerProvider().get_tracer("a-trading-bot")
    with caller.start_as_current_span("bot.decide") as decide, Ladder(api_key=key, base_url=stack.api) as sdk:
        book = sdk.book("binance.com", "ETHBTC", depth=5)
    context = decide.get_span_context()
    trace_id, span_id = format_trace_id(context.trace_id), format_span_id(context.span_id)
    (read,) = received.wait_for(
        "the read span of the SDK's call", lambda r: [s for s in r.named(READ_SPAN) if s.trace_id == trace_id]
    )
    assert read.parent_span_id == span_id, "the read span is a child of the caller's span"
    assert read.kind == SpanKind.SERVER.value + 1  # OTLP numbers kinds from 1 (SPAN_KIND_INTERNAL)
    assert (read.attributes["ladder.exchange"], read.attributes["ladder.market"]) == ("binance.com", "ETHBTC")
    assert read.attributes["http.response.status_code"] == 200
    assert read.resource["service.name"] == "ladder-read" and read.resource["deployment.environment"] == "e2e"
    assert book.market == "ETHBTC"
    # what it served: the same replica, update id and age the answer carries
    assert read.attributes["ladder.replica"] == book.replica
    assert read.attributes["ladder.update_id"] == book.update_id
    assert (
        read.attributes["ladder.age_ms"] == book.age_ms and read.attributes["ladder.book_status"] == "synced"
    )

    fetch = received.wait_for("a snapshot fetch span", lambda r: r.named("ladder.snapshot_fetch"))[0]
    assert fetch.resource["service.name"] == "ladder-ingest" and fetch.resource["ladder.node_id"] == "node-1"
    assert fetch.resource["service.instance.id"] == "node-1"
    assert fetch.attributes["http.response.status_code"] == 200 and fetch.attributes["ladder.weight"] > 0
    assert fetch.attributes["ladder.venue_used_weight"] > 0
    synced = received.wait_for(
        "the resync that synced the book",
        lambda r: [s for s in r.named("ladder.resync") if s.attributes.get("ladder.market") == "ETHBTC"],
    )[0]
    assert synced.attributes["ladder.outcome"] == "synced" and synced.attributes["ladder.venue_status"] == 200
    assert synced.attributes["ladder.weight"] > 0
    assert synced.attributes["ladder.update_id"] <= book.update_id, "the read descends from this sync"
    assert fetch.parent_span_id in {s.span_id for s in received.named("ladder.resync")}
    move = received.wait_for(
        "the placement of the replica",
        lambda r: [
            s for s in r.named("ladder.replica_move") if s.attributes.get("ladder.market") == "ETHBTC"
        ],
    )[0]
    assert (move.attributes["ladder.kind"], move.attributes["ladder.to_node"]) == ("placed", "node-1")
    assert move.parent_span_id in {s.span_id for s in received.named("ladder.schedule_round")}
    rounds = received.wait_for("a schedule round span", lambda r: r.named("ladder.schedule_round"))
    assert rounds[0].resource["service.name"] == "ladder-control"
    for span in (read, fetch, rounds[0]):
        assert span.resource["service.version"] == ladder_version()
    deadline = time.monotonic() + 10
    wanted = {"ladder_read_requests", "ladder_ingest_events", "ladder_control_rounds"}
    while not wanted <= received.metric_names:
        assert time.monotonic() < deadline, f"metrics received: {sorted(received.metric_names)}"
        time.sleep(0.2)


@pytest.mark.slow
def test_reads_go_on_when_the_collector_dies(traced_stack: tuple[Stack, OtlpReceiver]) -> None:
    stack, receiver = traced_stack
    key = stack.tenant_key("otel-dead", rate_limit_rps=10_000, burst=10_000)
    stack.call(key, "POST", "/v1/subscriptions", json={"exchange": "binance.com", "market": "BNBBTC"})
    stack.wait_synced(key, "binance.com", "BNBBTC")

    def timed_reads(client: httpx.Client, reads: int) -> list[float]:
        took = []
        for _ in range(reads):
            began = time.perf_counter()
            answer = client.get("/v1/books/binance.com/BNBBTC", params={"depth": 5})
            took.append(time.perf_counter() - began)
            assert answer.status_code == 200, answer.text
        return sorted(took)

    with httpx.Client(base_url=stack.api, headers={"Authorization": f"Bearer {key}"}) as client:
        alive = timed_reads(client, 300)
        receiver.close()  # from now on every export meets a closed port
        time.sleep(0.5)
        dead = timed_reads(client, 600)
        metrics = client.get("/metrics", headers={"Authorization": f"Bearer {ADMIN_KEY}"}).text

    def p(took: list[float], q: float) -> float:
        return took[int(q * (len(took) - 1))] * 1000

    print(f"\nreads, collector up: p50 {p(alive, 0.5):.2f} ms p99 {p(alive, 0.99):.2f} ms; "
          f"down: p50 {p(dead, 0.5):.2f} ms p99 {p(dead, 0.99):.2f} ms")  # fmt: skip
    # The shared machine's load moves both phases alike; a read that waited for the collector would
    # take its 1 s timeout.
    assert p(dead, 0.5) < 2 * p(alive, 0.5) + 2, "reads slowed down with the collector gone"
    assert p(dead, 0.99) < 500, "a read waited for the collector"
    # 600 spans into a queue of 64 whose exports fail: the overflow is dropped and counted
    assert scrape_value(metrics, "ladder_telemetry_spans_dropped_total") > 0, metrics


def test_after_a_failed_export_batches_are_skipped_unencoded_for_a_while() -> None:
    class Refusing(InMemorySpanExporter):
        calls = 0

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            self.calls += 1
            return SpanExportResult.FAILURE

    refusing = Refusing()
    counting = CountingSpanExporter(refusing)
    batch = [ReadableSpan("ladder.test")]
    for _ in range(3):
        assert counting.export(batch) is SpanExportResult.FAILURE
    assert refusing.calls == 1, "the exporter is not asked again during its pause"
    assert counting.outcomes == {"failed": 1, "skipped": 2}
