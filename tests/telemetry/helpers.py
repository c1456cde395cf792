"""Telemetry that keeps its spans and metrics in memory, and small readers for the assertions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    NumberDataPoint,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ladder_process.telemetry.setup import Telemetry


@dataclass
class Recorded:
    """A real SDK pipeline whose exporter is a list."""

    telemetry: Telemetry
    spans: InMemorySpanExporter

    def finished(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans.get_finished_spans() if span.name == name]

    def points(self, metric: str) -> list[Any]:
        data = self.telemetry.collect()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for m in scope.metrics
            if m.name == metric
            for point in m.data.data_points
        ]

    def value(self, metric: str, **attributes: object) -> float:
        """The value of the one number point of ``metric`` whose attributes include ``attributes``."""
        found = [p for p in self.points(metric) if _has(p.attributes, attributes)]
        assert len(found) == 1, f"{metric}{attributes}: {[p.attributes for p in self.points(metric)]}"
        point = found[0]
        assert isinstance(point, NumberDataPoint)
        return point.value

    def histogram(self, metric: str, **attributes: object) -> HistogramDataPoint | None:
        found = [p for p in self.points(metric) if _has(p.attributes, attributes)]
        assert len(found) <= 1
        if not found:
            return None
        assert isinstance(found[0], HistogramDataPoint)
        return found[0]


class Collecting(MetricExporter):
    """A metric exporter that keeps what it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.exported: list[MetricsData] = []

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        self.exported.append(metrics_data)
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        pass


def recorded(service: str) -> Recorded:
    exporter = InMemorySpanExporter()
    return Recorded(Telemetry(service, span_processors=[SimpleSpanProcessor(exporter)]), exporter)


def _has(attributes: Mapping[str, Any] | None, wanted: Mapping[str, object]) -> bool:
    return all((attributes or {}).get(key) == value for key, value in wanted.items())
