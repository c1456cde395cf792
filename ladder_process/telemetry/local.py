"""Metrics kept off the SDK (latency histograms, per-book gauges) and the one place they join the
SDK's output: every collection for the Prometheus endpoint, and every periodic export.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from opentelemetry.sdk.metrics.export import (
    Metric,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from ladder_process.telemetry.gauges import LocalGauges
from ladder_process.telemetry.histograms import LocalHistograms

SCOPE = InstrumentationScope("ladder")
"""The scope of the meter, and of the local metrics merged into its output."""


class LocalMetrics:
    """One pipeline's local histograms and gauges, merged into what the SDK collects."""

    def __init__(self, resource: Resource) -> None:
        self._resource = resource
        self.histograms = LocalHistograms()
        self.gauges = LocalGauges()

    def merged(self, data: MetricsData | None) -> MetricsData:
        """``data`` (not modified; None: the SDK had nothing) plus the local metrics, in the
        ``ladder`` scope of this resource."""
        now_ns = time.time_ns()
        resources = [] if data is None else list(data.resource_metrics)
        metrics = [*self.histograms.metrics(now_ns), *self.gauges.metrics(now_ns)]
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


class WithLocalMetrics(MetricExporter):
    """A periodic exporter's wrapper that adds the local metrics to every export.

    The reader exports only when the SDK has something to report; every Ladder component has
    observable instruments that always do, so no export is skipped in practice.
    """

    def __init__(self, exporter: MetricExporter, local: LocalMetrics) -> None:
        super().__init__(
            preferred_temporality=exporter._preferred_temporality,
            preferred_aggregation=exporter._preferred_aggregation,
        )
        self._exporter = exporter
        self._local = local

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        merged = self._local.merged(metrics_data)
        return self._exporter.export(merged, timeout_millis=timeout_millis, **kwargs)

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self._exporter.force_flush(timeout_millis=timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._exporter.shutdown(timeout_millis, **kwargs)


def _with_metrics(scopes: Sequence[ScopeMetrics], metrics: list[Metric]) -> list[ScopeMetrics]:
    """``scopes`` with ``metrics`` added to the ``ladder`` scope (made if missing)."""
    merged = list(scopes)
    for index, scope_metrics in enumerate(merged):
        if scope_metrics.scope == SCOPE:
            merged[index] = replace(scope_metrics, metrics=[*scope_metrics.metrics, *metrics])
            return merged
    merged.append(ScopeMetrics(scope=SCOPE, metrics=metrics, schema_url=SCOPE.schema_url or ""))
    return merged
