"""The Prometheus text format (version 0.0.4) of OpenTelemetry metrics, without a client library.

A monotonic sum becomes a ``counter`` (named ``..._total``), any other sum or gauge a ``gauge``, an
explicit-bucket histogram a ``histogram`` with cumulative ``_bucket{le=...}`` samples. Attribute
keys become label names (``.`` and other characters Prometheus refuses become ``_``). Samples of
one name are grouped under one ``# TYPE`` line even when two meters report them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from opentelemetry.sdk.metrics.export import Gauge, Histogram, Metric, MetricsData, Sum
from opentelemetry.util.types import Attributes

_NAME_INVALID = re.compile(r"[^a-zA-Z0-9_:]")
_LABEL_INVALID = re.compile(r"[^a-zA-Z0-9_]")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Families = dict[str, tuple[str, str, list[str]]]
"""Prometheus name -> (type, help, sample lines)."""


def render_metrics(data: MetricsData | None, extra_labels: Mapping[str, str] | None = None) -> bytes:
    """Every metric of ``data`` as Prometheus text; ``extra_labels`` go on every sample."""
    families: Families = {}
    labels = _Labels(extra_labels or {})
    if data is not None:
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    _add_family(families, metric, labels)
    out: list[str] = []
    for name, (kind, help_text, samples) in families.items():
        out.append(f"# HELP {name} {_escape_help(help_text)}")
        out.append(f"# TYPE {name} {kind}")
        out.extend(samples)
    return ("\n".join(out) + "\n").encode() if out else b""


class _Labels:
    """The label text of each attribute set, made once a rendering: the same attribute dict is often
    on several points (the per-book gauges of a book share one), and while the data is held, an
    object's id names it."""

    def __init__(self, extra: Mapping[str, str]) -> None:
        self._extra = extra
        self._made: dict[int, str] = {}

    def __call__(self, attributes: Attributes) -> str:
        made = self._made.get(id(attributes))
        if made is None:
            made = self._made[id(attributes)] = _labels(attributes, self._extra)
        return made


def _add_family(families: Families, metric: Metric, labels_of: _Labels) -> None:
    base = _NAME_INVALID.sub("_", metric.name)
    data = metric.data
    if isinstance(data, Sum) and data.is_monotonic:
        name = base if base.endswith("_total") else base + "_total"
        kind = "counter"
    elif isinstance(data, Sum | Gauge):
        name, kind = base, "gauge"
    elif isinstance(data, Histogram):
        name, kind = base, "histogram"
    else:  # exponential histograms: Ladder does not make any
        return
    samples = families.setdefault(name, (kind, metric.description or "", []))[2]
    if isinstance(data, Histogram):
        for point in data.data_points:
            labels = labels_of(point.attributes)
            cumulative = 0
            bounds = [*point.explicit_bounds, math.inf]
            for bound, count in zip(bounds, point.bucket_counts, strict=True):
                cumulative += count
                le = f'le="{_number(bound)}"'
                samples.append(f"{name}_bucket{{{labels + ',' if labels else ''}{le}}} {cumulative}")
            suffix = f"{{{labels}}}" if labels else ""
            samples.append(f"{name}_sum{suffix} {_number(point.sum)}")
            samples.append(f"{name}_count{suffix} {point.count}")
    else:
        for number_point in data.data_points:
            labels = labels_of(number_point.attributes)
            suffix = f"{{{labels}}}" if labels else ""
            samples.append(f"{name}{suffix} {_number(number_point.value)}")


def _labels(attributes: Attributes, extra: Mapping[str, str]) -> str:
    pairs: Iterable[tuple[str, object]] = [*extra.items(), *(attributes or {}).items()]
    return ",".join(f'{_LABEL_INVALID.sub("_", str(key))}="{_escape_value(value)}"' for key, value in pairs)


def _escape_value(value: object) -> str:
    text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    return repr(value)
