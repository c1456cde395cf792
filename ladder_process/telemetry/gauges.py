"""Per-book gauges read straight into the data points a collection reports, beside the SDK.

A node keeps thousands of book replicas, each reported by a few gauges. As SDK observable gauges,
every one of those points is a measurement the SDK copies, hashes and aggregates, once for each of
its readers, before it reports it: microseconds a point, paid on the node's event loop at every
scrape. Read here, a point costs what it is: the row's reading and one data point (a series'
attributes are one dict, kept while the series is read and shared by a book's gauges), with the
same names, attributes, values and types the SDK reports (a series per label set, the last value
of a label set read twice, a label set no longer read gone from the next collection, non-finite
values left out, a reader that fails logged and skipped).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from opentelemetry.sdk.metrics.export import Gauge, Metric, NumberDataPoint

from ladder_process.telemetry.metrics import Kind, LabelValues, Reading, Source
from ladder_process.telemetry.metrics import Metric as Row

log = logging.getLogger(__name__)

PER_BOOK_PREFIX = "ladder_book_"
"""Per-book gauges (the one place a market may be an attribute) are named with this prefix ..."""
PER_BOOK_CARDINALITY = 100_000
"""... and may hold this many series each (the SDK's default stops at 2000); past it, the rest are
one point with the SDK's overflow attribute, holding the last value read, as the SDK reports."""
OVERFLOW = {"otel.metric.overflow": True}

Attributes = dict[str, str | int]


def per_book(row: Row[Source]) -> bool:
    """Whether ``row`` is a per-book gauge, read here rather than by the SDK."""
    return row.name.startswith(PER_BOOK_PREFIX) and row.kind is Kind.GAUGE


class LocalGauges:
    """The per-book gauge rows of one pipeline, each with the reading of its source."""

    def __init__(self, cardinality_limit: int = PER_BOOK_CARDINALITY) -> None:
        self._limit = cardinality_limit
        self._rows: list[tuple[Row[Any], Callable[[], Reading]]] = []
        self._attributes: dict[tuple[str, ...], dict[LabelValues, Attributes]] = {}
        """Each series' attributes by label names and values, from the last collection: one dict a
        series, shared by the gauges of a book and kept while it is read (as the SDK keeps its)."""

    def observe(self, table: Iterable[Row[Source]], source: Source) -> None:
        """Read each of ``table``'s rows over ``source`` at every collection."""
        for row in table:
            assert per_book(row), row.name
            assert row.read is not None
            self._rows.append((row, partial(row.read, source)))

    def metrics(self, now_ns: int) -> list[Metric]:
        """The SDK metric of each row that reads any point now."""
        known, self._attributes = self._attributes, {}
        found = []
        for row, read in list(self._rows):
            points = self._points(row, read, now_ns, known.get(row.labels, {}))
            if points:
                data = Gauge(data_points=points)
                found.append(Metric(name=row.name, description=row.description, unit=row.unit, data=data))
        return found

    def _points(
        self, row: Row[Any], read: Callable[[], Reading], now_ns: int, known: dict[LabelValues, Attributes]
    ) -> list[NumberDataPoint]:
        try:
            latest: dict[LabelValues, float] = {}
            for number, values in read():
                if math.isfinite(number):
                    latest[values] = number
        except Exception:
            log.exception("Reading the gauge %s failed.", row.name)
            return []
        labels = row.labels
        readings = list(latest.items())
        kept = self._attributes.setdefault(labels, {})
        points = []
        for values, number in readings[: self._limit]:
            attributes = kept.get(values)
            if attributes is None:
                attributes = kept[values] = known.get(values) or dict(zip(labels, values, strict=True))
            # The SDK's gauge points carry no start time (its NumberDataPoint says int, its gauges None).
            points.append(NumberDataPoint(attributes, None, now_ns, number))  # type: ignore[arg-type]
        if len(readings) > self._limit:
            points.append(NumberDataPoint(dict(OVERFLOW), None, now_ns, readings[-1][1]))  # type: ignore[arg-type]
        return points
