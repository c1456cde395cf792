"""Setting up OpenTelemetry for a Ladder process: one tracer and one meter, from ``OTEL_*`` variables
(:mod:`ladder_process.telemetry.exporters` reads them).

Theory of operation
-------------------
Each process builds one :class:`Telemetry` at start-up (``Telemetry.from_env("ladder-ingest")``)
and hands it to its component's instrument module (``ingest_nodes.ops.telemetry``,
``read_functions.telemetry``, ``control_plane.scheduling.telemetry``). Those modules keep the hot paths off
the SDK: a synchronous SDK instrument costs microseconds per call (it cleans and hashes the
attributes every time), which the read path and the ingest loop cannot pay per event. So counts
are plain integers kept by the component and read by *observable* instruments when metrics are
collected (a scrape of the Prometheus endpoint, or a periodic OTLP export). Latency histograms
are kept the same way: :meth:`Telemetry.histogram` gives a :class:`LocalHistogram` whose
:class:`HistogramSeries` (one per label set, cached by the caller) records with one bisection
and a few number updates, no lock. Per-book gauges (``ladder_book_*``, thousands of points on a
node) are read at collection into data points directly (:mod:`ladder_process.telemetry.gauges`),
where the SDK's path would cost microseconds a point on the process's event loop.
:class:`LocalMetrics` merges both into every collection: :meth:`Telemetry.collect` for the
Prometheus endpoint, and a wrapper around each periodic exporter for OTLP and the console.

Tracing is off unless an exporter is configured. ``tracer`` is then ``None`` and every hook skips
its span work after one ``is None`` test, so a disabled tracer costs nothing measurable.

Every process describes itself by one resource, on its spans and its metrics alike:
``service.name`` (``ladder-ingest``, ``ladder-control``, ``ladder-read``), ``service.version``,
``service.instance.id`` (the ingest node id, or host and pid), ``deployment.environment`` (from
``LADDER_ENVIRONMENT``) and the component's own ids (``ladder.node_id``, ``ladder.worker``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import socket
from collections.abc import Iterable, Mapping, Sequence

from opentelemetry.context import Context
from opentelemetry.metrics import Meter, NoOpMeter
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import (
    InMemoryMetricReader,
    MetricExporter,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_ON,
    ParentBased,
    Sampler,
)
from opentelemetry.trace import Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ladder_process.telemetry.exporters import metric_exporters, sampler_from_env, span_exporters
from ladder_process.telemetry.gauges import per_book
from ladder_process.telemetry.histograms import LocalHistogram
from ladder_process.telemetry.local import SCOPE, LocalMetrics, WithLocalMetrics
from ladder_process.telemetry.metrics import Kind, Metric, Reading, Source, observe, value
from ladder_process.telemetry.prometheus import render_metrics
from ladder_process.telemetry.span_queue import BoundedSpanProcessor, quiet_exporter_logs

log = logging.getLogger(__name__)

_W3C = TraceContextTextMapPropagator()

ResourceValue = str | int | bool
ResourceAttributes = Mapping[str, ResourceValue]


class Telemetry:
    """One process's tracer (or ``None``: tracing off) and meter, and its Prometheus rendering."""

    def __init__(
        self,
        service_name: str,
        *,
        span_processors: Sequence[SpanProcessor] = (),
        metric_exporters: Sequence[MetricExporter] = (),
        sampler: Sampler | None = None,
        enabled: bool = True,
        resource_attributes: ResourceAttributes | None = None,
    ) -> None:
        self.service_name = service_name
        resource = ladder_resource(service_name, resource_attributes or {})
        self.resource = resource
        self._scrape: InMemoryMetricReader | None = None
        self._meter_provider: MeterProvider | None = None
        self._tracer_provider: TracerProvider | None = None
        self._local = LocalMetrics(resource)
        self.tracer: Tracer | None = None
        self.meter: Meter = NoOpMeter(SCOPE.name)
        if not enabled:
            return
        self._scrape = InMemoryMetricReader()
        periodic = [
            PeriodicExportingMetricReader(WithLocalMetrics(exporter, self._local))
            for exporter in metric_exporters
        ]
        self._meter_provider = MeterProvider(
            metric_readers=[self._scrape, *periodic],
            resource=resource,
            # Exemplars cost time on every record, and the Prometheus text format drops them.
            exemplar_filter=AlwaysOffExemplarFilter(),
        )
        self.meter = self._meter_provider.get_meter(SCOPE.name)
        queues = [p for p in span_processors if isinstance(p, BoundedSpanProcessor)]
        if queues:
            self.observe(SPAN_METRICS, queues)
        if span_processors:
            self._tracer_provider = TracerProvider(
                resource=resource, sampler=sampler or ParentBased(ALWAYS_ON)
            )
            for processor in span_processors:
                self._tracer_provider.add_span_processor(processor)
            self.tracer = self._tracer_provider.get_tracer("ladder")

    @classmethod
    def disabled(cls, service_name: str = "ladder") -> Telemetry:
        """No tracer, a no-op meter: what components use until a process installs a real one."""
        return cls(service_name, enabled=False)

    @classmethod
    def from_env(
        cls,
        service_name: str,
        environ: Mapping[str, str] | None = None,
        *,
        resource_attributes: ResourceAttributes | None = None,
    ) -> Telemetry:
        """The process's telemetry as the ``OTEL_*`` variables describe it (see the module doc);
        ``resource_attributes`` are the component's ids (``service.instance.id``, ...)."""
        env = os.environ if environ is None else environ
        if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return cls.disabled(service_name)
        quiet_exporter_logs()
        spans = [BoundedSpanProcessor.from_env(exporter, env) for exporter in span_exporters(env)]
        attributes: dict[str, ResourceValue] = {}
        environment = env.get("LADDER_ENVIRONMENT", "").strip()
        if environment:
            attributes["deployment.environment"] = environment
        return cls(
            env.get("OTEL_SERVICE_NAME") or service_name,
            span_processors=spans,
            metric_exporters=metric_exporters(env),
            sampler=sampler_from_env(env),
            resource_attributes={**attributes, **(resource_attributes or {})},
        )

    @property
    def enabled(self) -> bool:
        return self._meter_provider is not None

    def histogram(self, name: str, *, description: str, unit: str, bounds: Sequence[float]) -> LocalHistogram:
        """An explicit-bucket histogram kept here and merged into every collection and export.

        Asking twice for one name gives the same histogram. Disabled telemetry still gives one (its
        records cost the same and go nowhere).
        """
        return self._local.histograms.histogram(name, description=description, unit=unit, bounds=bounds)

    def observe(self, table: Iterable[Metric[Source]], source: Source) -> None:
        """Report each counter and gauge of ``table`` by reading ``source`` at every collection:
        per-book gauges here, the others through the SDK's observable instruments."""
        rows = [row for row in table if row.kind is not Kind.HISTOGRAM]
        self._local.gauges.observe([row for row in rows if per_book(row)], source)
        observe(self.meter, [row for row in rows if not per_book(row)], source)

    def collect(self) -> MetricsData | None:
        """Every metric now (runs the observable callbacks); None when telemetry is disabled."""
        return None if self._scrape is None else self._local.merged(self._scrape.get_metrics_data())

    def render_prometheus(self, extra_labels: Mapping[str, str] | None = None) -> bytes:
        """The Prometheus text exposition of :meth:`collect`, ``extra_labels`` on every sample."""
        return render_metrics(self.collect(), extra_labels)

    def shutdown(self) -> None:
        """Export what is buffered, then stop the exporters."""
        if self._tracer_provider is not None:
            self._tracer_provider.shutdown()
        if self._meter_provider is not None:
            self._meter_provider.shutdown()


def ladder_version() -> str:
    """The installed Ladder's version (``service.version``)."""
    try:
        return importlib.metadata.version("ladder")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a bare tree
        return "0"


def instance_id() -> str:
    """This process among its kind: host and pid (a component with an id of its own uses that)."""
    return f"{socket.gethostname()}-{os.getpid()}"


def ladder_resource(service_name: str, attributes: ResourceAttributes) -> Resource:
    """The resource of every span and metric: Ladder's own attributes, then ``OTEL_RESOURCE_ATTRIBUTES``
    (which wins where both say something), then ``service.name``."""
    own: dict[str, ResourceValue] = {
        "service.namespace": "ladder",
        "service.version": ladder_version(),
        "service.instance.id": instance_id(),
        **attributes,
    }
    named = Resource({SERVICE_NAME: service_name})
    # The SDK's own (telemetry.sdk.*, a random service.instance.id) < Ladder's < the environment's.
    return Resource.create().merge(Resource(own)).merge(OTELResourceDetector().detect()).merge(named)


def caller_context(headers: Mapping[str, str]) -> Context | None:
    """The caller's W3C trace context (``traceparent``/``tracestate``), or None if it sent none."""
    if headers.get("traceparent") is None:
        return None
    return _W3C.extract(headers)


def _dropped(queues: Sequence[BoundedSpanProcessor]) -> Reading:
    full = sum(p.dropped for p in queues)
    paused = sum(p.counting.outcomes.get("skipped", 0) for p in queues)
    return [(full, ("queue_full",)), (paused, ("export_paused",))]


def _exported(queues: Sequence[BoundedSpanProcessor]) -> Reading:
    return [
        (sum(p.counting.outcomes.get(outcome, 0) for p in queues), (outcome,))
        for outcome in ("exported", "failed")
    ]


SPAN_METRICS: tuple[Metric[Sequence[BoundedSpanProcessor]], ...] = (
    Metric(
        "ladder_telemetry_spans_dropped",
        Kind.COUNTER,
        "Spans dropped: the export queue was full, or exports paused after a failure.",
        ("reason",),
        _dropped,
    ),
    Metric(
        "ladder_telemetry_span_queue",
        Kind.GAUGE,
        "Spans waiting for export.",
        read=lambda queues: value(sum(p.queued for p in queues)),
    ),
    Metric(
        "ladder_telemetry_spans_exported",
        Kind.COUNTER,
        "Spans handed to the collector, by outcome (exported, failed).",
        ("outcome",),
        _exported,
    ),
)
"""How spans leave every process: dropped at a full queue, queued, and exported or failed."""
