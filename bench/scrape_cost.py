"""``ladder bench scrape_cost``: what one scrape of an ingest node's metrics costs its event loop, the
per-book gauges read through the SDK (as before) and read locally (as now), in one run.

Theory of operation
-------------------
An ingest node's metrics are collected and rendered on its own event loop (a scrape of
``/metrics``), so a collection's cost is a stall of every book the node keeps. Most of that
collection is per-book gauges: ``ladder_book_*``, several points per replica. This benchmark
builds the node's real metric rows (:data:`ingest_nodes.ops.telemetry.INGEST_METRICS`) over a
node of ``--replicas`` synced replicas (plain objects standing in for the runtime's, read the same
way) and times one collection plus its Prometheus rendering two ways, in one process:

- *sdk*: every row an SDK observable instrument in a meter provider configured as Ladder's was
  before the per-book gauges left the SDK (the per-book cardinality view, no exemplars);
- *local*: :meth:`ladder_process.telemetry.setup.Telemetry.observe`, the per-book gauges read
  straight into data points (:mod:`ladder_process.telemetry.gauges`).

Both render the same text (checked). Times are the median of ``--rounds`` scrapes after one of
warm-up: run it on a quiet machine. ``--callgrind`` counts each scrape's instructions under
valgrind instead (:mod:`bench.callgrind`), figures a busy machine does not move.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.metrics.view import View

from bench import callgrind
from bench.report import Report
from book_store.codec import BookStatus
from book_store.schema import BookKey
from ingest_nodes.ops.stats import ReplicaStats
from ingest_nodes.ops.telemetry import INGEST_METRICS, IngestTelemetry, NodeFacts
from ladder_process.cli import HelpFormatter
from ladder_process.clock import now_ms
from ladder_process.telemetry.gauges import PER_BOOK_CARDINALITY, PER_BOOK_PREFIX
from ladder_process.telemetry.local import SCOPE
from ladder_process.telemetry.metrics import observe
from ladder_process.telemetry.prometheus import render_metrics
from ladder_process.telemetry.setup import Telemetry

WAYS = ("sdk", "local")


@dataclass
class Engine:
    update_id: int
    checksum: int | None = None
    checksum_matched: bool | None = None
    synced: bool = True


@dataclass
class Replica:
    book: BookKey
    replica: int
    engine: Engine
    last_event_ms: int
    stats: ReplicaStats = field(default_factory=ReplicaStats)
    snapshot_limit: int = 1000


@dataclass
class Node:
    """What the node's rows read of it: its replicas, all synced."""

    replicas: dict[tuple[BookKey, int], Replica]
    retired: Mapping[str, ReplicaStats] = field(default_factory=dict)
    exchanges: Mapping[str, Any] = field(default_factory=dict)

    def statuses(self, now_ms: int) -> Iterable[tuple[Replica, BookStatus]]:
        return [(replica, BookStatus.SYNCED) for replica in list(self.replicas.values())]


def node(replicas: int) -> Node:
    """``replicas`` replicas, two of each book; Kraken's books carry a checksum, as on a real node."""
    now = now_ms()
    kept: dict[tuple[BookKey, int], Replica] = {}
    for i in range(replicas):
        exchange = "kraken" if i % 4 == 0 else "binance.com"
        book = BookKey(exchange, f"M{i // 2}USDT")
        checksum = 1_000_000 + i if exchange == "kraken" else None
        engine = Engine(40_000_000_000 + i, checksum, None if checksum is None else True)
        stats = ReplicaStats(events=10_000 + i, snapshots=1)
        kept[(book, i % 2 + 1)] = Replica(book, i % 2 + 1, engine, now - i % 1000, stats)
    return Node(kept)


def scrapes(replicas: int) -> dict[str, Callable[[], bytes]]:
    """One scrape of each way, over one node of ``replicas`` replicas."""
    local = IngestTelemetry(Telemetry("ladder-bench-scrape"))
    local.watch(cast(NodeFacts, node(replicas)))
    reader = InMemoryMetricReader()
    per_book = View(instrument_name=PER_BOOK_PREFIX + "*", aggregation_cardinality_limit=PER_BOOK_CARDINALITY)
    provider = MeterProvider(
        metric_readers=[reader], views=[per_book], exemplar_filter=AlwaysOffExemplarFilter()
    )
    observe(provider.get_meter(SCOPE.name), INGEST_METRICS, local)  # the same rows, read as before
    return {
        "sdk": lambda: render_metrics(reader.get_metrics_data()),
        "local": local.telemetry.render_prometheus,
    }


def measure(cases: list[int], rounds: int) -> dict[str, dict[str, Any]]:
    """Per case and way: the scrape's median seconds (or, under callgrind, one scrape counted), its
    bytes and samples; the two ways' renderings must agree."""
    result: dict[str, dict[str, Any]] = {}
    for replicas in cases:
        ways = scrapes(replicas)
        bodies = {way: scrape() for way, scrape in ways.items()}  # warm-up, and the texts compared
        if _shape(bodies["sdk"]) != _shape(bodies["local"]):
            raise SystemExit(f"{replicas} replicas: the two ways render different texts")
        for way, scrape in ways.items():
            seconds = []
            for _ in range(1 if callgrind.running() else rounds):
                callgrind.begin()
                started = time.perf_counter()
                scrape()
                seconds.append(time.perf_counter() - started)
                callgrind.end(f"{way} {replicas}")
            samples = sum(not line.startswith(b"#") for line in bodies[way].splitlines())
            result[f"{way} {replicas}"] = {
                "seconds": statistics.median(seconds),
                "bytes": len(bodies[way]),
                "samples": samples,
            }
    return result


def _shape(body: bytes) -> list[bytes]:
    """A rendering's lines in order, the ages (read at different times) without their value."""
    age = b"ladder_book_age_seconds{"
    return sorted(line.rsplit(b" ", 1)[0] if line.startswith(age) else line for line in body.splitlines())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="ladder bench scrape_cost", description=__doc__.split("\n")[0], formatter_class=HelpFormatter
    )
    parser.add_argument("--replicas", default="500,4000", help="the node sizes, comma-separated")
    parser.add_argument("--rounds", type=int, default=21, help="scrapes timed per case and way")
    parser.add_argument("--callgrind", action="store_true", help="count instructions under valgrind")
    parser.add_argument("--json", default="", help=argparse.SUPPRESS)  # where a run under valgrind writes
    args = parser.parse_args(argv)
    cases = [int(n) for n in args.replicas.split(",")]
    if args.json:
        Path(args.json).write_text(json.dumps(measure(cases, args.rounds)))
        return
    name, measured = (
        ("scrape_cost_instructions", "instructions") if args.callgrind else ("scrape_cost", "time")
    )
    title = f"One scrape of an ingest node's metrics, per-book gauges via the SDK vs local: {measured}"
    report = Report(name, title)
    instructions: dict[str, int] = {}
    if args.callgrind:
        out = report.results_dir / "tmp" / "scrape_cost-callgrind"  # not kept in git
        inner = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--callgrind"]
        json_path = out / "run.json"
        status = callgrind.rerun_under_callgrind("bench.scrape_cost", [*inner, "--json", str(json_path)], out)
        if status:
            raise SystemExit(f"the run under valgrind failed ({status})")
        result = json.loads(json_path.read_text())
        instructions = dict(callgrind.instructions(out))
    else:
        result = measure(cases, args.rounds)
    rows = []
    for replicas in cases:
        for way in WAYS:
            case = result[f"{way} {replicas}"]
            counted = instructions.get(f"{way} {replicas}")
            rows.append([
                replicas, way, case["samples"], case["bytes"],
                "" if args.callgrind else round(case["seconds"] * 1000, 2),
                "" if counted is None else f"{counted / 1e6:.1f}",
            ])  # fmt: skip
        before, after = (result[f"{way} {replicas}"] for way in WAYS)
        if args.callgrind:
            ratio = instructions[f"sdk {replicas}"] / instructions[f"local {replicas}"]
            report.figure(f"{replicas} replicas: SDK / local instructions per scrape", round(ratio, 1), "x")
        else:
            report.figure(f"{replicas} replicas: one scrape, SDK", round(before["seconds"] * 1000, 2), "ms")
            report.figure(f"{replicas} replicas: one scrape, local", round(after["seconds"] * 1000, 2), "ms")
    report.table(
        "one collection + Prometheus rendering",
        ["replicas", "per-book gauges", "samples", "bytes", "ms (median)", "M instructions"],
        rows,
    )
    report.note(
        "The node's real rows (INGEST_METRICS) over plain replicas, all synced, a quarter Kraken's "
        "with a checksum; "
        + (
            "one scrape each under valgrind --tool=callgrind."
            if args.callgrind
            else f"the median of {args.rounds} scrapes after one of warm-up."
        )
    )
    report.note("The two renderings are checked equal but for the ages' values (read at different times).")
    print(report.write().read_text())


if __name__ == "__main__":
    main()
