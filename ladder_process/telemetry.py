"""OpenTelemetry for every Ladder process: one tracer and one meter, set up from ``OTEL_*`` variables.

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
and a few number updates, no lock. :class:`LocalHistograms` turns them into SDK ``Histogram``
metrics (cumulative) and merges them into every collection: :meth:`Telemetry.collect` for the
Prometheus endpoint, and a wrapper around each periodic exporter for OTLP and the console.

Tracing is off unless an exporter is configured. ``tracer`` is then ``None`` and every hook skips
its span work after one ``is None`` test, so a disabled tracer costs nothing measurable.

The standard variables, read once:

==========================================  ==========================================================
``OTEL_SDK_DISABLED=true``                  no traces and no metrics (the endpoint renders nothing)
``OTEL_SERVICE_NAME``                       replaces the process kind (``ladder-ingest`` ...)
``OTEL_TRACES_EXPORTER``                    ``otlp``, ``console``, ``none`` (comma-separated); the
                                            default is ``otlp`` when ``OTEL_EXPORTER_OTLP_ENDPOINT``
                                            or ``..._TRACES_ENDPOINT`` is set, else ``none``
``OTEL_METRICS_EXPORTER``                   the same, for a periodic metrics export (the Prometheus
                                            text endpoint works either way)
``OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL``    ``http/protobuf`` (default) or ``grpc``
``OTEL_EXPORTER_OTLP_*``                    endpoint, headers, timeout, compression, certificates:
                                            read by the OTLP exporter itself, as the spec says
``OTEL_TRACES_SAMPLER`` / ``..._ARG``       ``always_on``, ``always_off``, ``traceidratio``,
                                            ``parentbased_*`` (default ``parentbased_always_on``)
``OTEL_BSP_MAX_QUEUE_SIZE``                 spans waiting for export, at most (2048); more are
                                            dropped and counted (:mod:`ladder_process.span_queue`)
``OTEL_BSP_*`` (delay, batch, timeout)      the SDK's batch processor reads them
``OTEL_RESOURCE_ATTRIBUTES``                added to the resource; they win over Ladder's own
==========================================  ==========================================================

The exporter does not default to ``otlp`` the way the specification's does: a process with no
endpoint and no exporter named exports nothing, rather than send every span to a collector on
localhost that a fresh install does not have. Naming one (``OTEL_TRACES_EXPORTER=otlp``) gets the
specification's default endpoint.

OTLP over HTTP (``opentelemetry-exporter-otlp-proto-http``) is a dependency of Ladder and part of the
Lambda zip. gRPC is not: ``grpcio`` is a large native wheel, and its channels do not survive the
``fork`` of the read server's workers; install ``opentelemetry-exporter-otlp-proto-grpc`` to use it.

Every process describes itself by one resource, on its spans and its metrics alike:
``service.name`` (``ladder-ingest``, ``ladder-control``, ``ladder-read``), ``service.version``,
``service.instance.id`` (the ingest node id, or host and pid), ``deployment.environment`` (from
``LADDER_ENVIRONMENT``) and the component's own ids (``ladder.node_id``, ``ladder.worker``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import math
import os
import socket
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Any, TypeVar

from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Meter, NoOpMeter, Observation
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    ConsoleMetricExporter,
    Histogram,
    HistogramDataPoint,
    InMemoryMetricReader,
    Metric,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.metrics.view import View
from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ladder_process.prometheus import render_metrics
from ladder_process.span_queue import BoundedSpanProcessor, quiet_exporter_logs

log = logging.getLogger(__name__)

PER_BOOK_PREFIX = "ladder_book_"
"""Per-book gauges (the one place a market may be an attribute) are named with this prefix ..."""
PER_BOOK_CARDINALITY = 100_000
"""... and may hold this many series, where the SDK's default stops at 2000."""

_SCOPE = InstrumentationScope("ladder")
"""The scope of the meter, and of the local histograms merged into its output."""
_W3C = TraceContextTextMapPropagator()
_GRPC_CLASSES = {
    "TRACES": ("opentelemetry.exporter.otlp.proto.grpc.trace_exporter", "OTLPSpanExporter"),
    "METRICS": ("opentelemetry.exporter.otlp.proto.grpc.metric_exporter", "OTLPMetricExporter"),
}
_SAMPLERS: dict[str, Callable[[float], Sampler]] = {
    "always_on": lambda _ratio: ALWAYS_ON,
    "always_off": lambda _ratio: ALWAYS_OFF,
    "traceidratio": TraceIdRatioBased,
    "parentbased_always_on": lambda _ratio: ParentBased(ALWAYS_ON),
    "parentbased_always_off": lambda _ratio: ParentBased(ALWAYS_OFF),
    "parentbased_traceidratio": lambda ratio: ParentBased(TraceIdRatioBased(ratio)),
}

ResourceValue = str | int | bool
ResourceAttributes = Mapping[str, ResourceValue]

CountKey = TypeVar("CountKey", bound=str | tuple[str | int, ...])
"""A count's attribute values in label order; a plain string stands for a one-label key."""


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
        self._local = LocalHistograms(resource)
        self.tracer: Tracer | None = None
        self.meter: Meter = NoOpMeter(_SCOPE.name)
        if not enabled:
            return
        self._scrape = InMemoryMetricReader()
        per_book = View(
            instrument_name=PER_BOOK_PREFIX + "*", aggregation_cardinality_limit=PER_BOOK_CARDINALITY
        )
        periodic = [
            PeriodicExportingMetricReader(WithLocalHistograms(exporter, self._local))
            for exporter in metric_exporters
        ]
        self._meter_provider = MeterProvider(
            metric_readers=[self._scrape, *periodic],
            resource=resource,
            views=[per_book],
            # Exemplars cost time on every record, and the Prometheus text format drops them.
            exemplar_filter=AlwaysOffExemplarFilter(),
        )
        self.meter = self._meter_provider.get_meter(_SCOPE.name)
        self._observe_span_queues([p for p in span_processors if isinstance(p, BoundedSpanProcessor)])
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
        spans = [BoundedSpanProcessor.from_env(exporter, env) for exporter in _span_exporters(env)]
        attributes: dict[str, ResourceValue] = {}
        environment = env.get("LADDER_ENVIRONMENT", "").strip()
        if environment:
            attributes["deployment.environment"] = environment
        return cls(
            env.get("OTEL_SERVICE_NAME") or service_name,
            span_processors=spans,
            metric_exporters=_metric_exporters(env),
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
        return self._local.histogram(name, description=description, unit=unit, bounds=bounds)

    def collect(self) -> MetricsData | None:
        """Every metric now (runs the observable callbacks); None when telemetry is disabled."""
        return None if self._scrape is None else self._local.merged(self._scrape.get_metrics_data())

    def render_prometheus(self, extra_labels: Mapping[str, str] | None = None) -> bytes:
        """The Prometheus text exposition of :meth:`collect`, ``extra_labels`` on every sample."""
        return render_metrics(self.collect(), extra_labels)

    def _observe_span_queues(self, processors: Sequence[BoundedSpanProcessor]) -> None:
        """How spans leave: dropped at a full queue, queued, and exported or failed at the collector."""
        if not processors:
            return

        def dropped(_options: CallbackOptions) -> Iterable[Observation]:
            full = sum(p.dropped for p in processors)
            paused = sum(p.counting.outcomes.get("skipped", 0) for p in processors)
            return [
                Observation(full, {"reason": "queue_full"}),
                Observation(paused, {"reason": "export_paused"}),
            ]

        def queued(_options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(sum(p.queued for p in processors))]

        def exported(_options: CallbackOptions) -> Iterable[Observation]:
            totals: dict[str, int] = {"exported": 0, "failed": 0}
            for processor in processors:
                for outcome in totals:
                    totals[outcome] += processor.counting.outcomes.get(outcome, 0)
            return [Observation(count, {"outcome": outcome}) for outcome, count in totals.items()]

        self.meter.create_observable_counter(
            "ladder_telemetry_spans_dropped",
            [dropped],
            description="Spans dropped: the export queue was full, or exports paused after a failure.",
        )
        self.meter.create_observable_gauge(
            "ladder_telemetry_span_queue", [queued], description="Spans waiting for export."
        )
        self.meter.create_observable_counter(
            "ladder_telemetry_spans_exported",
            [exported],
            description="Spans handed to the collector, by outcome (exported, failed).",
        )

    def shutdown(self) -> None:
        """Export what is buffered, then stop the exporters."""
        if self._tracer_provider is not None:
            self._tracer_provider.shutdown()
        if self._meter_provider is not None:
            self._meter_provider.shutdown()


class HistogramSeries:
    """One label set's buckets; :meth:`record` is the hot path (no lock, no attribute handling)."""

    __slots__ = ("attributes", "bounds", "bucket_counts", "max", "min", "start_time_unix_nano", "sum")

    def __init__(self, bounds: tuple[float, ...], attributes: Mapping[str, str]) -> None:
        self.bounds = bounds
        self.attributes = dict(attributes)
        self.start_time_unix_nano = time.time_ns()
        self.bucket_counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.min = math.inf
        self.max = -math.inf

    def record(self, value: float) -> None:
        """Count ``value`` in the first bucket whose upper bound it does not exceed (OTel's rule)."""
        # The bucket goes last: an export reading the buckets first then sees min, max and sum
        # already covering every value it counts.
        self.sum += value
        if value < self.min:
            self.min = value
        if value > self.max:
            self.max = value
        self.bucket_counts[bisect_left(self.bounds, value)] += 1

    def point(self, now_ns: int) -> HistogramDataPoint | None:
        """The cumulative data point so far; None before the first record."""
        buckets = list(self.bucket_counts)
        count = sum(buckets)
        if count == 0:
            return None
        return HistogramDataPoint(
            attributes=self.attributes,
            start_time_unix_nano=self.start_time_unix_nano,
            time_unix_nano=now_ns,
            count=count,
            sum=self.sum,
            bucket_counts=buckets,
            explicit_bounds=self.bounds,
            min=self.min,
            max=self.max,
        )


def bucket_quantile(bounds: Sequence[float], counts: Sequence[int], q: float) -> float | None:
    """The upper bound of the bucket holding quantile ``q`` (None without counts; the last bucket
    has no bound, so a quantile there reads as the largest bound: "at least this").

    Buckets only say a value is at most their bound, so reporting the bound never understates.
    """
    total = sum(counts)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    for bound, count in zip(bounds, counts, strict=False):
        seen += count
        if seen >= rank:
            return bound
    return bounds[-1]


class LocalHistogram:
    """An explicit-bucket histogram whose series the component records into directly."""

    def __init__(self, name: str, *, description: str, unit: str, bounds: Sequence[float]) -> None:
        if any(low >= high for low, high in pairwise(bounds)):
            raise ValueError(f"{name}: bucket bounds must increase strictly, got {bounds}")
        self.name = name
        self.description = description
        self.unit = unit
        self.bounds = tuple(float(bound) for bound in bounds)
        self._series: dict[tuple[tuple[str, str], ...], HistogramSeries] = {}

    def series(self, attributes: Mapping[str, str]) -> HistogramSeries:
        """The series of one label set (the same object each time); callers keep it, not the dict."""
        key = tuple(sorted(attributes.items()))
        found = self._series.get(key)
        if found is None:
            found = self._series[key] = HistogramSeries(self.bounds, attributes)
        return found

    def metric(self, now_ns: int) -> Metric | None:
        """The SDK metric of every series recorded so far; None if none has been."""
        points = [p for s in list(self._series.values()) if (p := s.point(now_ns)) is not None]
        if not points:
            return None
        data = Histogram(data_points=points, aggregation_temporality=AggregationTemporality.CUMULATIVE)
        return Metric(name=self.name, description=self.description, unit=self.unit, data=data)


class LocalHistograms:
    """One pipeline's local histograms, and the one place they join the SDK's metrics."""

    def __init__(self, resource: Resource) -> None:
        self._resource = resource
        self._histograms: dict[str, LocalHistogram] = {}

    def histogram(self, name: str, *, description: str, unit: str, bounds: Sequence[float]) -> LocalHistogram:
        found = self._histograms.get(name)
        if found is None:
            found = LocalHistogram(name, description=description, unit=unit, bounds=bounds)
            self._histograms[name] = found
        return found

    def merged(self, data: MetricsData | None) -> MetricsData:
        """``data`` (not modified; None: the SDK had nothing) plus the local histograms, in the
        ``ladder`` scope of this resource."""
        now_ns = time.time_ns()
        resources = [] if data is None else list(data.resource_metrics)
        metrics = [m for h in list(self._histograms.values()) if (m := h.metric(now_ns)) is not None]
        if not metrics:
            return MetricsData(resource_metrics=resources)
        for index, resource_metrics in enumerate(resources):
            if resource_metrics.resource == self._resource:
                resources[index] = replace(
                    resource_metrics, scope_metrics=_with_metrics(resource_metrics.scope_metrics, metrics)
                )
                break
        else:
            resources.append(
                ResourceMetrics(self._resource, _with_metrics([], metrics), self._resource.schema_url)
            )
        return MetricsData(resource_metrics=resources)


class WithLocalHistograms(MetricExporter):
    """A periodic exporter's wrapper that adds the local histograms to every export.

    The reader exports only when the SDK has something to report; every Ladder component has
    observable instruments that always do, so no export is skipped in practice.
    """

    def __init__(self, exporter: MetricExporter, histograms: LocalHistograms) -> None:
        super().__init__(
            preferred_temporality=exporter._preferred_temporality,
            preferred_aggregation=exporter._preferred_aggregation,
        )
        self._exporter = exporter
        self._histograms = histograms

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        merged = self._histograms.merged(metrics_data)
        return self._exporter.export(merged, timeout_millis=timeout_millis, **kwargs)

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self._exporter.force_flush(timeout_millis=timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._exporter.shutdown(timeout_millis, **kwargs)


def _with_metrics(scopes: Sequence[ScopeMetrics], metrics: list[Metric]) -> list[ScopeMetrics]:
    """``scopes`` with ``metrics`` added to the ``ladder`` scope (made if missing)."""
    merged = list(scopes)
    for index, scope_metrics in enumerate(merged):
        if scope_metrics.scope == _SCOPE:
            merged[index] = replace(scope_metrics, metrics=[*scope_metrics.metrics, *metrics])
            return merged
    merged.append(ScopeMetrics(scope=_SCOPE, metrics=metrics, schema_url=_SCOPE.schema_url or ""))
    return merged


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


def counts_callback(
    counts: Mapping[CountKey, int] | Mapping[CountKey, float], labels: Sequence[str]
) -> Callable[[CallbackOptions], Iterable[Observation]]:
    """An observable instrument's callback reporting ``counts``: key values become ``labels``."""

    def observe(_options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(value, dict(zip(labels, (key,) if isinstance(key, str) else key, strict=True)))
            for key, value in list(counts.items())
        ]

    return observe


def sampler_from_env(environ: Mapping[str, str]) -> Sampler:
    name = environ.get("OTEL_TRACES_SAMPLER", "parentbased_always_on").strip().lower()
    make = _SAMPLERS.get(name)
    if make is None:
        log.warning("unknown OTEL_TRACES_SAMPLER %r; sampling every trace", name)
        make = _SAMPLERS["parentbased_always_on"]
    try:
        ratio = float(environ.get("OTEL_TRACES_SAMPLER_ARG", "1.0"))
    except ValueError:
        log.warning("OTEL_TRACES_SAMPLER_ARG is not a number; using 1.0")
        ratio = 1.0
    return make(min(max(ratio, 0.0), 1.0))


def _exporter_names(environ: Mapping[str, str], signal: str) -> list[str]:
    configured = environ.get(f"OTEL_{signal}_EXPORTER")
    if configured is None:
        endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
        return ["otlp"] if any(environ.get(name) for name in endpoints) else []
    names = (name.strip().lower() for name in configured.split(","))
    return [name for name in names if name not in ("", "none")]


def _span_exporters(environ: Mapping[str, str]) -> list[SpanExporter]:
    exporters: list[SpanExporter] = []
    for name in _exporter_names(environ, "TRACES"):
        if name == "console":
            exporters.append(ConsoleSpanExporter())
        elif name == "otlp":
            otlp = _otlp_exporter(environ, "TRACES")
            if isinstance(otlp, SpanExporter):
                exporters.append(otlp)
        else:
            log.warning("unknown OTEL_TRACES_EXPORTER %r ignored", name)
    return exporters


def _metric_exporters(environ: Mapping[str, str]) -> list[MetricExporter]:
    exporters: list[MetricExporter] = []
    for name in _exporter_names(environ, "METRICS"):
        if name == "console":
            exporters.append(ConsoleMetricExporter())
        elif name == "otlp":
            otlp = _otlp_exporter(environ, "METRICS")
            if isinstance(otlp, MetricExporter):
                exporters.append(otlp)
        elif name != "prometheus":  # the Prometheus text endpoint is always there
            log.warning("unknown OTEL_METRICS_EXPORTER %r ignored", name)
    return exporters


def _otlp_exporter(environ: Mapping[str, str], signal: str) -> object:
    """The OTLP exporter of ``signal`` for the configured protocol; None if its package is absent.

    HTTP is imported by name (so the Lambda packager, which follows imports, bundles it); gRPC is
    optional and looked up only when asked for.
    """
    protocol = (
        environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL")
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if protocol == "grpc":
        module_name, class_name = _GRPC_CLASSES[signal]
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            log.warning(
                "OTLP/gRPC export of %s asked for, but %s is not installed "
                "(pip install opentelemetry-exporter-otlp-proto-grpc); exporting over HTTP instead",
                signal.lower(),
                module_name,
            )
        else:
            return getattr(module, class_name)()
    elif protocol not in ("http/protobuf", ""):
        log.warning("OTLP protocol %r is not supported; exporting %s over http/protobuf", protocol, signal)
    if signal == "TRACES":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter()
