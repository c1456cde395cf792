"""OpenTelemetry for every Ladder process: one tracer and one meter, set up from ``OTEL_*`` variables.

Theory of operation
-------------------
Each process builds one :class:`Telemetry` at start-up (``Telemetry.from_env("ladder-ingest")``)
and hands it to its component's instrument module (``ingest_nodes.telemetry``,
``read_functions.telemetry``, ``control_plane.telemetry``). Those modules keep the hot paths off
the SDK: a synchronous SDK instrument costs microseconds per call (it cleans and hashes the
attributes every time), which the read path and the ingest loop cannot pay per event. So counts
are plain integers kept by the component and read by *observable* instruments when metrics are
collected (a scrape of the Prometheus endpoint, or a periodic OTLP export); only latency
histograms record through the SDK, once per request or per published snapshot.

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
``OTEL_TRACES_SAMPLER`` / ``..._ARG``       ``always_on``, ``always_off``, ``traceidratio``,
                                            ``parentbased_*`` (default ``parentbased_always_on``)
==========================================  ==========================================================

OTLP needs the ``opentelemetry-exporter-otlp`` package; without it a warning says so and that
signal is not exported.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Meter, NoOpMeter, Observation
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    InMemoryMetricReader,
    MetricExporter,
    MetricReader,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.metrics.view import View
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from book_store.prometheus import render_metrics

log = logging.getLogger(__name__)

PER_BOOK_PREFIX = "ladder_book_"
"""Per-book gauges (the one place a market may be an attribute) are named with this prefix ..."""
PER_BOOK_CARDINALITY = 100_000
"""... and may hold this many series, where the SDK's default stops at 2000."""

_W3C = TraceContextTextMapPropagator()
_OTLP_CLASSES = {
    ("TRACES", "grpc"): ("opentelemetry.exporter.otlp.proto.grpc.trace_exporter", "OTLPSpanExporter"),
    ("TRACES", "http/protobuf"): (
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        "OTLPSpanExporter",
    ),
    ("METRICS", "grpc"): ("opentelemetry.exporter.otlp.proto.grpc.metric_exporter", "OTLPMetricExporter"),
    ("METRICS", "http/protobuf"): (
        "opentelemetry.exporter.otlp.proto.http.metric_exporter",
        "OTLPMetricExporter",
    ),
}
_SAMPLERS: dict[str, Callable[[float], Sampler]] = {
    "always_on": lambda _ratio: ALWAYS_ON,
    "always_off": lambda _ratio: ALWAYS_OFF,
    "traceidratio": TraceIdRatioBased,
    "parentbased_always_on": lambda _ratio: ParentBased(ALWAYS_ON),
    "parentbased_always_off": lambda _ratio: ParentBased(ALWAYS_OFF),
    "parentbased_traceidratio": lambda ratio: ParentBased(TraceIdRatioBased(ratio)),
}

CountKey = TypeVar("CountKey", bound=str | tuple[str | int, ...])
"""A count's attribute values in label order; a plain string stands for a one-label key."""


class Telemetry:
    """One process's tracer (or ``None``: tracing off) and meter, and its Prometheus rendering."""

    def __init__(
        self,
        service_name: str,
        *,
        span_processors: Sequence[SpanProcessor] = (),
        metric_readers: Sequence[MetricReader] = (),
        sampler: Sampler | None = None,
        enabled: bool = True,
    ) -> None:
        self.service_name = service_name
        resource = Resource.create({SERVICE_NAME: service_name})
        self._scrape: InMemoryMetricReader | None = None
        self._meter_provider: MeterProvider | None = None
        self._tracer_provider: TracerProvider | None = None
        self.tracer: Tracer | None = None
        self.meter: Meter = NoOpMeter("ladder")
        if not enabled:
            return
        self._scrape = InMemoryMetricReader()
        per_book = View(
            instrument_name=PER_BOOK_PREFIX + "*", aggregation_cardinality_limit=PER_BOOK_CARDINALITY
        )
        self._meter_provider = MeterProvider(
            metric_readers=[self._scrape, *metric_readers],
            resource=resource,
            views=[per_book],
            # Exemplars cost time on every record, and the Prometheus text format drops them.
            exemplar_filter=AlwaysOffExemplarFilter(),
        )
        self.meter = self._meter_provider.get_meter("ladder")
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
    def from_env(cls, service_name: str, environ: Mapping[str, str] | None = None) -> Telemetry:
        """The process's telemetry as the ``OTEL_*`` variables describe it (see the module doc)."""
        env = os.environ if environ is None else environ
        if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return cls.disabled(service_name)
        spans = [BatchSpanProcessor(exporter) for exporter in _span_exporters(env)]
        readers = [PeriodicExportingMetricReader(exporter) for exporter in _metric_exporters(env)]
        return cls(
            env.get("OTEL_SERVICE_NAME") or service_name,
            span_processors=spans,
            metric_readers=readers,
            sampler=sampler_from_env(env),
        )

    @property
    def enabled(self) -> bool:
        return self._meter_provider is not None

    def collect(self) -> MetricsData | None:
        """Every metric now (runs the observable callbacks); None when telemetry is disabled."""
        return None if self._scrape is None else self._scrape.get_metrics_data()

    def render_prometheus(self, extra_labels: Mapping[str, str] | None = None) -> bytes:
        """The Prometheus text exposition of :meth:`collect`, ``extra_labels`` on every sample."""
        return render_metrics(self.collect(), extra_labels)

    def shutdown(self) -> None:
        """Export what is buffered, then stop the exporters."""
        if self._tracer_provider is not None:
            self._tracer_provider.shutdown()
        if self._meter_provider is not None:
            self._meter_provider.shutdown()


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
    """The OTLP exporter class of ``signal`` for the configured protocol, instantiated; None if absent."""
    protocol = (
        environ.get(f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL")
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    module_name, class_name = _OTLP_CLASSES.get((signal, protocol), _OTLP_CLASSES[(signal, "http/protobuf")])
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        log.warning(
            "OTLP export of %s asked for, but %s is not installed (pip install opentelemetry-exporter-otlp)",
            signal.lower(),
            module_name,
        )
        return None
    return getattr(module, class_name)()
