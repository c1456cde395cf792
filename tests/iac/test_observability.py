"""The Prometheus alert rules and the Grafana dashboard under iac/observability/ name real metrics.

promtool is not installed here, so the files are checked the way it would be least forgiving
about what can drift: each expression's brackets balance, every range function has a range, and
every ``ladder_*`` name is one a component registers, in the form the Prometheus endpoint serves
it (a counter as ``_total``, a histogram as ``_bucket``/``_sum``/``_count``, a gauge as is). The
registered names come from the components' own telemetry classes, built on a real meter whose
``create_*`` calls are recorded, and from the metric tables they hand to ``Telemetry.observe``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from opentelemetry.metrics import Meter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from control_plane.scheduling.telemetry import ControlTelemetry
from ingest_nodes.ops.telemetry import IngestTelemetry
from ladder_process.telemetry.histograms import LocalHistogram
from ladder_process.telemetry.metrics import Kind, Metric
from ladder_process.telemetry.setup import Telemetry
from ladder_process.telemetry.span_queue import BoundedSpanProcessor
from read_functions.telemetry import ReadTelemetry

OBSERVABILITY = Path(__file__).resolve().parents[2] / "iac" / "observability"
RULES = OBSERVABILITY / "ladder-alerts.yaml"
DASHBOARD = OBSERVABILITY / "ladder-dashboard.json"
METRIC = re.compile(r"\b(ladder_[a-z0-9_]+)\b")
RANGE_FUNCTIONS = re.compile(r"\b(rate|increase|changes|delta|irate)\(([^()]*)\)")
DURATION = re.compile(r"^\d+[smh]$")
# The meter's methods by the kind of Prometheus family their instruments become.
COUNTERS = ("create_counter", "create_observable_counter")
GAUGES = (
    "create_observable_gauge",
    "create_gauge",
    "create_up_down_counter",
    "create_observable_up_down_counter",
)


class RecordingMeter:
    """A real meter whose instrument names are noted, with the kind of each."""

    def __init__(self, meter: Meter, seen: dict[str, str]) -> None:
        self._meter = meter
        self._seen = seen

    def __getattr__(self, attribute: str) -> Callable[..., Any]:
        create = getattr(self._meter, attribute)

        def recorded(name: str, *args: Any, **kwargs: Any) -> Any:
            self._seen[name] = attribute
            return create(name, *args, **kwargs)

        return recorded


def rendered_names(text: str) -> set[str]:
    """The sample names of a Prometheus exposition, from its ``# TYPE`` lines."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            names |= {name + s for s in ("_bucket", "_sum", "_count")} if kind == "histogram" else {name}
    return names


def served_names() -> set[str]:
    """Every metric name the components' Prometheus endpoints can serve."""
    seen: dict[str, str] = {}
    histograms: list[str] = []
    telemetry = Telemetry("ladder-test", span_processors=[BoundedSpanProcessor(InMemorySpanExporter())])
    own = rendered_names(telemetry.render_prometheus().decode())  # made before a recorder could see them
    telemetry.meter = RecordingMeter(telemetry.meter, seen)  # type: ignore[assignment]
    make_histogram = telemetry.histogram

    def histogram(name: str, **kwargs: Any) -> LocalHistogram:
        histograms.append(name)
        return make_histogram(name, **kwargs)

    telemetry.histogram = histogram  # type: ignore[method-assign]
    make_observed = telemetry.observe
    observed: set[str] = set()

    def observe(table: Iterable[Metric[Any]], source: Any) -> None:
        table = list(table)
        observed.update(row.exposed for row in table if row.kind is not Kind.HISTOGRAM)
        make_observed(table, source)

    telemetry.observe = observe  # type: ignore[method-assign]
    IngestTelemetry(telemetry)
    ControlTelemetry(telemetry)
    ReadTelemetry(telemetry)
    telemetry.shutdown()
    names = {name.removesuffix("_total") + "_total" for name, kind in seen.items() if kind in COUNTERS}
    names |= {name for name, kind in seen.items() if kind in GAUGES}
    names |= {name + suffix for name in histograms for suffix in ("_bucket", "_sum", "_count")}
    return names | observed | own


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def dashboard_targets() -> Iterator[tuple[str, str]]:
    document = json.loads(DASHBOARD.read_text())
    for panel in document["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]


def check_expression(expr: str, served: set[str]) -> list[str]:
    """What is wrong with one PromQL expression, as far as can be told without promtool."""
    problems = []
    for opening, closing in ("()", "[]", "{}"):
        depth = 0
        for char in expr:
            depth += (char == opening) - (char == closing)
            if depth < 0:
                break
        if depth != 0:
            problems.append(f"unbalanced {opening}{closing}")
    for function, argument in RANGE_FUNCTIONS.findall(expr):
        if not re.search(r"\[(\d+[smh]|\$__rate_interval)\]$", argument.strip()):
            problems.append(f"{function}() without a range")
    if "histogram_quantile" in expr and "_bucket" not in expr:
        problems.append("histogram_quantile of no _bucket series")
    names = METRIC.findall(expr)
    if not names:
        problems.append("names no Ladder metric")
    problems += [f"{name} is not a served metric" for name in names if name not in served]
    return problems


@pytest.fixture(scope="module")
def served() -> set[str]:
    return served_names()


def test_the_served_names_are_what_the_endpoint_renders(served: set[str]) -> None:
    assert {
        "ladder_read_requests_total",
        "ladder_read_request_seconds_bucket",
        "ladder_book_synced",
    } <= served
    assert {"ladder_telemetry_spans_dropped_total", "ladder_telemetry_span_queue"} <= served
    assert "ladder_book_synced_total" not in served and "ladder_read_requests" not in served


def test_every_alert_is_well_formed_and_names_served_metrics(served: set[str]) -> None:
    found = rules()
    alerts = [rule["alert"] for rule in found]
    assert len(alerts) == len(set(alerts)), "alert names repeat"
    for wanted in ("LadderBookNotSynced", "LadderWeightBudgetNearLimit", "LadderReplicasDisagree",
                   "LadderReadLatencyHigh"):  # fmt: skip
        assert wanted in alerts
    problems = {}
    for rule in found:
        issues = check_expression(rule["expr"], served)
        if "for" in rule and not DURATION.match(rule["for"]):
            issues.append(f"bad for: {rule['for']}")
        if not rule.get("annotations", {}).get("summary") or rule.get("labels", {}).get("severity") is None:
            issues.append("no summary or severity")
        if issues:
            problems[rule["alert"]] = issues
    assert problems == {}


def test_every_dashboard_panel_queries_served_metrics(served: set[str]) -> None:
    document = json.loads(DASHBOARD.read_text())
    ids = [panel["id"] for panel in document["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    assert document["templating"]["list"][0]["type"] == "datasource"
    targets = list(dashboard_targets())
    assert len(targets) >= 15
    problems = {
        f"{title}: {expr}": issues for title, expr in targets if (issues := check_expression(expr, served))
    }
    assert problems == {}


@pytest.mark.parametrize(
    ("expr", "problem"),
    [
        ("rate(ladder_read_requests_total)", "rate() without a range"),
        ("sum(rate(ladder_read_requests_total[5m])", "unbalanced ()"),
        ("ladder_read_requests > 1", "ladder_read_requests is not a served metric"),
        (
            "histogram_quantile(0.99, ladder_read_request_seconds_sum)",
            "histogram_quantile of no _bucket series",
        ),
    ],
)
def test_the_checker_finds_what_promtool_would(served: set[str], expr: str, problem: str) -> None:
    assert problem in check_expression(expr, served)
