"""Latency histograms kept by the component, not the SDK: one bisection per record, merged into
every collection and export (:mod:`ladder_process.telemetry.local`).
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from itertools import pairwise

from opentelemetry.sdk.metrics.export import AggregationTemporality, Histogram, HistogramDataPoint, Metric


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
    """One pipeline's local histograms, by name."""

    def __init__(self) -> None:
        self._histograms: dict[str, LocalHistogram] = {}

    def histogram(self, name: str, *, description: str, unit: str, bounds: Sequence[float]) -> LocalHistogram:
        found = self._histograms.get(name)
        if found is None:
            found = LocalHistogram(name, description=description, unit=unit, bounds=bounds)
            self._histograms[name] = found
        return found

    def metrics(self, now_ns: int) -> list[Metric]:
        """The SDK metric of each histogram recorded so far."""
        return [m for h in list(self._histograms.values()) if (m := h.metric(now_ns)) is not None]
