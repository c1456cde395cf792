"""``ladder bench load``: the seed's four k6 load tests, as fixed-arrival-rate shapes, with its thresholds.

Theory of operation
-------------------
UBDCC's users judged it with four Grafana k6 tests against its REST API (``/get_asks`` and
``/get_bids``, ``limit_count=100``) with 2013 markets x 2 replicas live, on six 2-vCPU nodes (12
vCPU) and an external load generator. Each test has thresholds: failed requests (no answer within
the 5 s timeout, or a status >= 400) under 1 % and p95 under 1 s. This benchmark runs the same four
shapes against Ladder's UBDCC routes (the tenant's key in a header), open-loop from
:mod:`bench.arrivals`:

1. *smoke*: one hot market (ETHBTC), 10 req/s for 60 s;
2. *distributed plateau*: a random market of all subscribed for every request, ramping into a
   plateau: 0 -> 100 req/s over 3 min, 100 for 3 min, -> 370 over 2 min, 370 for 1 min, -> 0 over
   3 min. The seed's stages are not published beside its figures; these give its 12 minutes, its
   370 req/s peak and about its 144 req/s average (154);
3. *hot-market ramp*: ETHBTC from 25 req/s, ramping to 50, 100, 250 and 500 req/s, 66 s each;
4. *fast limit finder*: random markets from 300 req/s, ramping to 500, 700, 900 and 1100 req/s,
   66 s each, every rate multiplied by ``--limit-factor`` (5 by default: 1500 -> 5500 req/s),
   because the seed's rates do not reach what this machine can serve; the report gives the rate
   at which the thresholds first break, judged over windows of ``--window-s``.

Scaling to this 2-core machine: the seed's rates are kept as they are for shapes 1-3, on a sixth
of its hardware, with the load generator on the same two cores (the seed's ran elsewhere), so they
compare figure for figure; the books are scaled by the same sixth (``--markets`` 336 spot + 336
futures x 2 replicas, 1344 replicas instead of 8052, from the fake venue with its activity skew);
durations are the seed's times ``--time-scale`` (0.25: the plateau runs 3 min, each ramp 82 s;
the smoke test keeps its minute). Only the limit finder's rates are scaled up, to find the break.

The generator is the open-loop one (its own process, uvloop, a minimal HTTP/1.1 client): wrk, which
Debian packages, is closed-loop and so cannot hold an arrival rate; wrk2, which can, has no Debian
package. The report gives the CPU it took, and how late it sent (if it fell behind, a rate was not
really asked).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

from bench import arrivals, stack
from bench.arrivals import Outcome, Stage, Summary
from bench.harness import Bench, cpu_seconds, run
from bench.report import Report, below
from bench.stack import Stack
from ladder_process.cli import HelpFormatter

HOT = "ETHBTC"
LIMIT = 100
FAILED_PCT = 1.0
P95_MS = 1000.0
TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Shape:
    name: str
    hot: bool
    """One market (ETHBTC) or a random one of all for each request."""
    stages: list[Stage]
    seed: str
    """What UBDCC's run of the same test gave."""


def shapes(args: argparse.Namespace) -> list[Shape]:
    t, f = args.time_scale, args.limit_factor
    step = 66 * t
    return [
        Shape("smoke", True, [arrivals.steady(10, 60, "10 req/s")],
              "10 req/s, p95 44 ms, 0 failed: passed"),
        Shape("distributed plateau", False,
              arrivals.ramp([100, 100, 370, 370, 0], [180 * t, 180 * t, 120 * t, 60 * t, 180 * t], 0),
              "peak 370 req/s, p95 274 ms, 0 failed: passed"),
        Shape("hot-market ramp", True, arrivals.ramp([25, 50, 100, 250, 500], [step] * 5, 25),
              "peak 300 req/s, p95 5006 ms, 19 % failed: failed"),
        Shape("fast limit finder", False,
              arrivals.ramp([300 * f, 500 * f, 700 * f, 900 * f, 1100 * f], [step] * 5, 300 * f),
              "peak 547 req/s, p95 5014 ms, 52 % failed: failed (broke at ~547 req/s)"),
    ]  # fmt: skip


def requests(st: Stack, hot: bool) -> list[bytes]:
    """The UBDCC reads a shape sends: asks and bids, depth 100, of ETHBTC or of every book."""
    books = [("binance.com", HOT)] if hot else [(e, m) for e, names in st.books.items() for m in names]
    return [
        arrivals.request_bytes(st.read_url, f"/{side}?exchange={e}&market={m}&limit_count={LIMIT}", st.key)
        for e, m in books
        for side in ("get_asks", "get_bids")
    ]


def passed(summary: Summary) -> bool:
    return summary.failed_pct < FAILED_PCT and summary.p95_with_failures_ms(TIMEOUT_S) < P95_MS


def first_break(outcome: Outcome, window_s: float) -> tuple[float | None, float]:
    """(asked rate of the first window that broke a threshold, or None; the highest asked rate of
    a window before it)."""
    held = 0.0
    for _start, rate, summary in outcome.windows(window_s):
        if summary.sent and not passed(summary):
            return rate, held
        held = max(held, rate)
    return None, held


async def run_shape(st: Stack, shape: Shape, args: argparse.Namespace) -> dict[str, Any]:
    pids = st.pids()
    before = {kind: sum(cpu_seconds(p) for p in ps) for kind, ps in pids.items()}
    started = time.monotonic()
    outcome = await arrivals.run(
        st.read_url, requests(st, shape.hot), shape.stages, connections=args.connections, timeout_s=TIMEOUT_S
    )
    elapsed = time.monotonic() - started
    cpu = {kind: (sum(cpu_seconds(p) for p in ps) - before[kind]) / elapsed for kind, ps in pids.items()}
    whole = outcome.select()
    broke_at, held = first_break(outcome, args.window_s)
    windows = outcome.windows(args.window_s)
    print(f"{shape.name}: {whole.sent} requests, failed {whole.failed_pct:.2f} %, p95 {whole.p95_ms:.1f} ms, "
          f"p99 {whole.p99_ms:.1f} ms; " + (f"broke at {broke_at:,.0f} req/s" if broke_at else "held") +
          f"; generator CPU {outcome.generator_cpu_s / outcome.seconds:.2f} s/s", flush=True)  # fmt: skip
    return {
        "shape": shape.name,
        "whole": whole.row(),
        "peak_asked": max(max(s.start_rate, s.end_rate) for s in shape.stages),
        "passed": passed(whole),
        "broke_at": broke_at,
        "held_up_to": held,
        "stages": [{"stage": s.name, **outcome.select(stage=i).row()} for i, s in enumerate(shape.stages)],
        "windows": [{"start_s": start, "asked": rate, **summary.row()} for start, rate, summary in windows],
        "cpu_s_per_s": cpu,
        "generator_cpu_s_per_s": outcome.generator_cpu_s / outcome.seconds,
        "seed": shape.seed,
    }


async def main(args: argparse.Namespace) -> None:
    report = Report("load", "The seed's four k6 load tests as fixed-arrival-rate shapes")
    report.environment["tools"] = (
        f"open-loop generator (bench/arrivals.py: own process, uvloop), up to {args.connections} "
        f"connections, {TIMEOUT_S:g} s timeout"
    )
    results: list[dict[str, Any]] = []
    venue_args = ["--rate", str(args.venue_rate), "--rate-skew", str(args.rate_skew), "--levels", "200"]
    with Bench() as bench:
        st = stack.start(bench, args.markets, 2, args.workers, venue_args)
        await stack.subscribe(st, args.markets, 2, LIMIT)
        progress = await stack.wait_synced(st, 600)
        synced_s = max(progress.done_at.values())
        print(f"{2 * args.markets} books x 2 replicas synced in {synced_s:.0f} s", flush=True)
        warm_up = [arrivals.steady(500, 4)]  # every book read once
        await arrivals.run(st.read_url, requests(st, False), warm_up)
        for shape in shapes(args):
            if args.only and shape.name not in args.only:
                continue
            results.append(await run_shape(st, shape, args))
        await st.redis.aclose()
    summarize(report, results, args)
    print(report.write().read_text())


def summarize(report: Report, results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    rows = []
    for r in results:
        w = r["whole"]
        p95 = w["p95_ms"] if w["timeouts"] + w["socket_errors"] <= 0.05 * w["sent"] else TIMEOUT_S * 1000
        verdict = "passed" if r["passed"] else "failed"
        if r["shape"] == "fast limit finder":
            broke = r["broke_at"]
            verdict = f"broke at {broke:,.0f} req/s" if broke else f"held up to {r['held_up_to']:,.0f} req/s"
            report.figure("fast limit finder: asked rate where a threshold first broke", broke, "req/s",
                          reference="UBDCC: 547 req/s on 12 vCPU")  # fmt: skip
            report.figure("fast limit finder: highest window rate before it", r["held_up_to"], "req/s")
        else:
            report.figure(f"{r['shape']}: failed", w["failed_pct"], "%", below(FAILED_PCT, "%"), r["seed"])
            report.figure(f"{r['shape']}: p95", p95, "ms", below(P95_MS, "ms"))
        cpu = r["cpu_s_per_s"]
        rows.append([r["shape"], f"{r['peak_asked']:,.0f}", w["sent"], w["failed_pct"], w["p50_ms"], p95,
                     w["p99_ms"], verdict, r["seed"], sum(cpu.values()), r["generator_cpu_s_per_s"],
                     w["send_delay_p99_ms"]])  # fmt: skip
    report.table(
        "Shapes",
        ["shape", "peak asked req/s", "requests", "failed %", "p50 ms", "p95 ms", "p99 ms", "Ladder", "UBDCC",
         "Ladder CPU s/s", "generator CPU s/s", "send delay p99 ms"],
        rows,
    )  # fmt: skip
    for r in results:
        report.table(f"{r['shape']}: stages",
                     ["stage", "requests", "failed %", "p50 ms", "p95 ms", "p99 ms", "timeouts", "statuses"],
                     [[s["stage"], s["sent"], s["failed_pct"], s["p50_ms"], s["p95_ms"], s["p99_ms"],
                       s["timeouts"], s["statuses"]] for s in r["stages"]])  # fmt: skip
        starts = [w["start_s"] for w in r["windows"]]
        report.line_plot(
            f"{r['shape'].replace(' ', '_')}.png",
            f"{r['shape']}: p95 and p99 per {args.window_s:g} s window against the asked rate",
            "seconds since the shape began",
            "ms",
            {
                "p95": (starts, [w["p95_ms"] for w in r["windows"]]),
                "p99": (starts, [w["p99_ms"] for w in r["windows"]]),
                "asked req/s / 100": (starts, [w["asked"] / 100 for w in r["windows"]]),
            },
            logy=True,
            hlines={"p95 threshold 1 s": P95_MS},
        )  # fmt: skip
    cpu_rows = [[r["shape"], *(r["cpu_s_per_s"].get(k, 0.0) for k in ("ingest", "read", "control", "store")),
                 r["generator_cpu_s_per_s"]] for r in results]  # fmt: skip
    cpu_header = ["shape", "ingest nodes", "read workers", "control", "store", "load generator"]
    report.table("CPU seconds per second during each shape", cpu_header, cpu_rows)
    report.note(
        f"Stack: fake venue ({args.markets} spot + {args.markets} futures markets, the k-th of each "
        f"running at {args.venue_rate:g} x k^-{args.rate_skew:g} updates/s), control plane, 2 ingest nodes, "
        f"{args.workers} read workers, one Valkey; a tenant bulk-subscribed every market with 2 replicas, "
        f"depth {LIMIT}. Requests: GET /get_asks or /get_bids (at random), limit_count={LIMIT}, "
        "X-API-Key header."
    )
    report.note(
        f"Durations are the seed's times {args.time_scale:g} (the smoke test keeps its 60 s); the limit "
        f"finder's rates are the seed's times {args.limit_factor:g}. Thresholds: failed (timeout after "
        f"{TIMEOUT_S:g} s, socket error, or status >= 400) < {FAILED_PCT:g} %, p95 < {P95_MS:g} ms; p95 is "
        "over the answered requests, and read as the timeout when more than 5 % got none, as k6 counts it."
    )
    report.note(
        "Latency counts from each request's due time (no coordinated omission). 'send delay' is how late "
        "the generator sent: high means the generator, sharing the two cores, fell behind."
    )
    report.data["shapes"] = results


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ladder bench load", description=__doc__.split("\n")[0], formatter_class=HelpFormatter
    )
    parser.add_argument("--markets", type=int, default=336, help="markets per exchange (spot and futures)")
    parser.add_argument("--workers", type=int, default=2, help="read worker processes")
    parser.add_argument("--time-scale", type=float, default=0.25, help="the seed's durations times this")
    parser.add_argument("--limit-factor", type=float, default=5.0, help="limit finder's rates x this")
    parser.add_argument("--window-s", type=float, default=2.0, help="window over which a break is judged")
    parser.add_argument("--connections", type=int, default=2000, help="the generator's connections at most")
    parser.add_argument("--venue-rate", type=float, default=10.0, help="updates/s of the busiest market")
    parser.add_argument("--rate-skew", type=float, default=0.8, help="the k-th market runs at rate x k^-SKEW")
    parser.add_argument("--only", nargs="*", help="run only these shapes (by name)")
    return parser.parse_args()


if __name__ == "__main__":
    run(main(parse_args()))
