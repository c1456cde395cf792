"""Metrics as data: each metric one row (name, kind, unit, labels, the reader of what it reports),
and the instruments made from a table of rows.

A component keeps its counts as plain numbers in its own objects (a hot path pays an attribute
increment, never an SDK call) and declares one table of :class:`Metric` rows, which it hands to
``Telemetry.observe``: each counter and gauge runs the row's reader over the component's source
object when metrics are collected (per-book gauges read straight into data points,
:mod:`ladder_process.telemetry.gauges`; the others through the SDK's observable instruments that
:func:`observe` makes), and :meth:`Metric.histogram` makes a local
histogram (:mod:`ladder_process.telemetry.histograms`) that the component's hooks record into.
The tables are what docs/observability.md lists (``tests/telemetry/test_metric_list.py``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from ladder_process.telemetry.histograms import LocalHistogram

Source = TypeVar("Source", contravariant=True)
"""What a table's readers read: the component object that keeps the counts."""

LabelValues = tuple[str | int, ...]
Reading = Iterable[tuple[float, LabelValues]]
"""A metric's values at one collection: each value with its label values, in the row's label order."""

CountKey = TypeVar("CountKey", bound=str | tuple[str | int, ...])
"""A count's label values in label order; a plain string stands for a one-label key."""


class Histograms(Protocol):
    """Where local histograms are made (:class:`ladder_process.telemetry.setup.Telemetry`)."""

    def histogram(
        self, name: str, *, description: str, unit: str, bounds: Sequence[float]
    ) -> LocalHistogram: ...


class Kind(enum.Enum):
    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


@dataclass(frozen=True, slots=True)
class Metric(Generic[Source]):
    """One metric: its name (as OpenTelemetry names it; Prometheus adds ``_total`` to a counter's),
    kind, unit, labels and meaning, and for counters and gauges the reader of its values."""

    name: str
    kind: Kind
    description: str
    labels: tuple[str, ...] = ()
    read: Callable[[Source], Reading] | None = None
    unit: str = ""
    bounds: tuple[float, ...] = ()
    """A histogram's bucket bounds."""

    @property
    def exposed(self) -> str:
        """The name a Prometheus scrape shows."""
        counter = self.kind is Kind.COUNTER and not self.name.endswith("_total")
        return f"{self.name}_total" if counter else self.name

    def histogram(self, telemetry: Histograms) -> LocalHistogram:
        assert self.kind is Kind.HISTOGRAM, self.name
        return telemetry.histogram(
            self.name, description=self.description, unit=self.unit, bounds=self.bounds
        )


def observe(meter: Meter, table: Iterable[Metric[Source]], source: Source) -> None:
    """An observable instrument for each counter and gauge of ``table``, reading ``source``."""
    for metric in table:
        if metric.kind is Kind.HISTOGRAM:
            continue
        create = (
            meter.create_observable_counter if metric.kind is Kind.COUNTER else meter.create_observable_gauge
        )
        create(metric.name, [_callback(metric, source)], unit=metric.unit, description=metric.description)


def _callback(metric: Metric[Source], source: Source) -> Callable[[CallbackOptions], Iterable[Observation]]:
    labels, read = metric.labels, metric.read
    assert read is not None, metric.name

    def callback(_options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(value, dict(zip(labels, values, strict=True))) for value, values in read(source)]

    return callback


def counts(kept: Mapping[CountKey, int] | Mapping[CountKey, float]) -> Reading:
    """The reading of counts kept in a dict: its keys are the label values."""
    return [(value, (key,) if isinstance(key, str) else key) for key, value in list(kept.items())]


def value(number: float) -> Reading:
    """The reading of one unlabelled number."""
    return [(number, ())]
