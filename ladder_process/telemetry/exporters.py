"""Which exporters and sampler a process gets, from the ``OTEL_*`` variables.

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
                                            ``parentbased_*``, and Ladder's ``[parentbased_]ladder``,
                                            the default: errors, resyncs, moves and slow publishes,
                                            and ``..._ARG`` (0.01) of the rest
                                            (:mod:`ladder_process.telemetry.sampling`)
``OTEL_BSP_MAX_QUEUE_SIZE``                 spans waiting for export, at most (2048); more are
                                            dropped and counted (:mod:`ladder_process.telemetry.span_queue`)
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
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
from collections.abc import Callable, Mapping

from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExporter,
)
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)

from ladder_process.telemetry.sampling import DEFAULT_RATIO, LadderSampler

log = logging.getLogger(__name__)

_GRPC_CLASSES = {
    "TRACES": ("opentelemetry.exporter.otlp.proto.grpc.trace_exporter", "OTLPSpanExporter"),
    "METRICS": ("opentelemetry.exporter.otlp.proto.grpc.metric_exporter", "OTLPMetricExporter"),
}
# name -> (the sampler for a ratio, the ratio when OTEL_TRACES_SAMPLER_ARG is unset or unreadable)
_SAMPLERS: dict[str, tuple[Callable[[float], Sampler], float]] = {
    "always_on": (lambda _ratio: ALWAYS_ON, 1.0),
    "always_off": (lambda _ratio: ALWAYS_OFF, 1.0),
    "traceidratio": (TraceIdRatioBased, 1.0),
    "parentbased_always_on": (lambda _ratio: ParentBased(ALWAYS_ON), 1.0),
    "parentbased_always_off": (lambda _ratio: ParentBased(ALWAYS_OFF), 1.0),
    "parentbased_traceidratio": (lambda ratio: ParentBased(TraceIdRatioBased(ratio)), 1.0),
    "ladder": (LadderSampler, DEFAULT_RATIO),
    "parentbased_ladder": (lambda ratio: ParentBased(LadderSampler(ratio)), DEFAULT_RATIO),
}
DEFAULT_SAMPLER = "parentbased_ladder"


def sampler_from_env(environ: Mapping[str, str]) -> Sampler:
    name = environ.get("OTEL_TRACES_SAMPLER", DEFAULT_SAMPLER).strip().lower()
    if name not in _SAMPLERS:
        log.warning("unknown OTEL_TRACES_SAMPLER %r; using %s", name, DEFAULT_SAMPLER)
        name = DEFAULT_SAMPLER
    make, ratio = _SAMPLERS[name]
    raw = environ.get("OTEL_TRACES_SAMPLER_ARG", "").strip()
    if raw:
        try:
            ratio = float(raw)
        except ValueError:
            log.warning("OTEL_TRACES_SAMPLER_ARG is not a number; using %s", ratio)
    return make(min(max(ratio, 0.0), 1.0))


def _exporter_names(environ: Mapping[str, str], signal: str) -> list[str]:
    configured = environ.get(f"OTEL_{signal}_EXPORTER")
    if configured is None:
        endpoints = ("OTEL_EXPORTER_OTLP_ENDPOINT", f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
        return ["otlp"] if any(environ.get(name) for name in endpoints) else []
    names = (name.strip().lower() for name in configured.split(","))
    return [name for name in names if name not in ("", "none")]


def span_exporters(environ: Mapping[str, str]) -> list[SpanExporter]:
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


def metric_exporters(environ: Mapping[str, str]) -> list[MetricExporter]:
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
