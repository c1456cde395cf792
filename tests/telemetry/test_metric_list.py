"""docs/observability.md lists exactly the metrics the components' tables make, with their labels."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from control_plane.scheduling.telemetry import CONTROL_METRICS, ROUND_SECONDS
from ingest_nodes.ops.telemetry import HISTOGRAMS, INGEST_METRICS
from ladder_process.telemetry.metrics import Metric
from ladder_process.telemetry.setup import SPAN_METRICS
from read_functions.deps import WORKER_METRICS
from read_functions.telemetry import REQUEST_METRICS, REQUEST_SECONDS

DOC = Path(__file__).resolve().parents[2] / "docs" / "observability.md"

TABLES: dict[str, tuple[Metric[Any], ...]] = {
    "ingest": (*INGEST_METRICS, *HISTOGRAMS),
    "read": (*REQUEST_METRICS, REQUEST_SECONDS, *WORKER_METRICS),
    "control": (*CONTROL_METRICS, ROUND_SECONDS),
    "all": SPAN_METRICS,
}

ROW = re.compile(r"^\| `(ladder_\w+)(?:\{([\w,]+)\})?` \| (\w+) \|")


def documented() -> dict[str, tuple[tuple[str, ...], str]]:
    listed: dict[str, tuple[tuple[str, ...], str]] = {}
    for line in DOC.read_text().splitlines():
        match = ROW.match(line)
        if match:
            name, labels, component = match.groups()
            assert name not in listed, f"{name} is listed twice"
            listed[name] = (tuple(labels.split(",")) if labels else (), component)
    return listed


def test_the_documented_metrics_are_the_tables_metrics_with_their_labels() -> None:
    made = {
        metric.exposed: (metric.labels, component) for component, table in TABLES.items() for metric in table
    }
    listed = documented()
    assert sorted(set(made) - set(listed)) == [], "made but not documented"
    assert sorted(set(listed) - set(made)) == [], "documented but not made"
    assert {name: made[name] for name in listed} == listed


def test_every_metric_of_a_table_has_a_reader_or_is_a_histogram() -> None:
    for table in TABLES.values():
        for metric in table:
            assert (metric.read is None) == (metric.kind.value == "histogram"), metric.name
            assert metric.description, metric.name
