"""``ladder bench overload``: a read worker asked twice what it can serve answers fast, never late.

Theory of operation
-------------------
The seed's load tests ramped a fixed arrival rate (25 -> 500 -> 1100 req/s) past what UBDCC
could serve, and its clients timed out after 5 s. This benchmark runs the same shape scaled to
this machine: one read worker (``python -m read_functions --workers 1``) over a private Valkey,
its capacity ``C`` measured first with a closed-loop client (``wrk``, 50 connections), then a
fixed arrival rate of ``0.05 C``, ``C`` and ``2.2 C`` (the seed's 25 : 500 : 1100) for
``--seconds`` each, from a generator that never waits for an answer before sending the next
request: each request leaves at its scheduled time on an idle connection, or a new one (up to
``--connections``), so a slow server meets a growing crowd, as it does in production. Latency is
measured from the scheduled time (no coordinated omission); a request unanswered 5 s after it was
due is a timeout.

The load is ``GET /v1/subscriptions`` of a tenant with 20 books: every request reads the control
store, so requests wait in the worker for the store and can pile up there, which is where a
worker without a bound queues into its clients' timeouts. (A cached book read waits for nothing:
it finishes within its event-loop turn and costs ~45 us, so its twice, 50k+ req/s, is more than a
generator sharing the machine's two cores can offer; ``--path`` runs it, or any route, and the
report shows the rate the generator reached.) The ramp runs twice, against two workers: one with
the default bound on held requests (``LADDER_MAX_IN_FLIGHT``), one with the bound lifted, so the
report shows what shedding (``LADDER_MAX_IN_FLIGHT``, ``LADDER_MAX_QUEUE_MS``) changes.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench import arrivals
from bench.harness import Bench
from bench.read import ADMIN_KEY, PEPPER, Run, market_names, run_builtin, run_wrk, seed_catalog, tenant_key
from bench.report import Report, below
from ladder_cli.supervisor import Child, child_env
from ladder_process.cli import HelpFormatter

SHAPE = (0.05, 1.0, 2.2)
"""The seed's ramp, 25 : 500 : 1100 req/s, as fractions of the measured capacity."""
TIMEOUT_S = 5.0
MARKETS = 20
SUBSCRIPTIONS = "/v1/subscriptions"
SEED = "UBDCC, one hot market, ramp 25 -> 500 req/s: p95 5006 ms, 19 % failed (timeouts)"


async def ramp(
    url: str, path: str, key: str, rates: list[float], seconds: float, connections: int
) -> list[dict[str, Any]]:
    """Each rate for ``seconds``, from the open-loop generator; one summary per step."""
    stages = [arrivals.steady(rate, seconds) for rate in rates]
    request = arrivals.request_bytes(url, path, key)
    outcome = await arrivals.run(url, [request], stages, connections=connections, timeout_s=TIMEOUT_S)
    steps = []
    for number, stage in enumerate(stages):
        got = outcome.select(stage=number)
        steps.append({"rate": stage.start_rate, "seconds": stage.seconds, "sent": got.sent,
                      "statuses": got.statuses, "timeouts": got.timeouts, "errors": got.socket_errors,
                      "p50_ms": got.p50_ms, "p99_ms": got.p99_ms,
                      "send_delay_p99_ms": got.send_delay_p99_ms})  # fmt: skip
    return steps


# -- the benchmark ---------------------------------------------------------------------------------
async def main(args: argparse.Namespace) -> None:
    report = Report("overload", "Read API under twice the load a worker can serve")
    markets = market_names(MARKETS)
    path = args.path or SUBSCRIPTIONS
    has_wrk = shutil.which("wrk") is not None
    report.environment["tools"] = (
        f"capacity: {'wrk' if has_wrk else 'built-in aiohttp client'}, 50 connections; ramp: a "
        f"fixed-arrival-rate generator (own process, uvloop), up to {args.connections} connections, "
        f"{TIMEOUT_S:g} s timeout"
    )
    lifted = {"LADDER_MAX_IN_FLIGHT": "1000000000", "LADDER_MAX_QUEUE_MS": "1000000000"}
    configurations: dict[str, dict[str, str]] = {"bounded (default)": {}, "unbounded": lifted}
    results: dict[str, list[dict[str, Any]]] = {}
    with Bench() as bench, tempfile.TemporaryDirectory(prefix="ladder-bench-overload-") as tmp:
        await seed_catalog(bench.redis_url, markets)
        keys = {"LADDER_ADMIN_KEY": ADMIN_KEY, "LADDER_PEPPER": PEPPER}
        urls: dict[str, str] = {}
        for name, extra in configurations.items():
            env = child_env(**bench.env, **keys, **extra)
            read_args = ["read_functions", "--host", "127.0.0.1", "--port", "0", "--workers", "1",
                         "--log-level", "ERROR"]  # fmt: skip
            urls[name] = bench.supervisor.start(Child(f"read {name}", read_args, env, "LADDER_READ_URL"))
        key = await tenant_key(urls["bounded (default)"], markets)
        if has_wrk:
            measured = run_wrk(
                "capacity", urls["bounded (default)"], [path], key, args.capacity_seconds, Path(tmp)
            )
        else:
            measured = await run_builtin(
                "capacity", urls["bounded (default)"], [path], key, args.capacity_seconds
            )
        rates = [max(1.0, fraction * measured.rps) for fraction in SHAPE]
        print(f"capacity {measured.rps:,.0f} req/s (p99 {measured.p99_ms:.1f} ms); ramp "
              + " -> ".join(f"{r:,.0f}" for r in rates) + " req/s", flush=True)  # fmt: skip
        for name, url in urls.items():
            # The bench's own loop has nothing to do meanwhile: the generator runs in its own process.
            results[name] = await ramp(url, path, key, rates, args.seconds, args.connections)
            peak = results[name][-1]
            print(f"{name}: at {peak['rate']:,.0f} req/s p99 {peak['p99_ms']:.0f} ms, {peak['timeouts']} "
                  f"timeouts of {peak['sent']}, statuses {peak['statuses']}", flush=True)  # fmt: skip
    summarize(report, measured, results, path)
    written = report.write()
    print(written.read_text())


def _share(phase: dict[str, Any], *, of: str) -> float:
    sent = max(1, int(phase["sent"]))
    if of == "timeouts":
        return 100.0 * (int(phase["timeouts"]) + int(phase["errors"])) / sent
    statuses = {int(k): int(v) for k, v in phase["statuses"].items()}
    return 100.0 * sum(v for k, v in statuses.items() if k in (429, 503)) / sent


def summarize(report: Report, measured: Run, results: dict[str, list[dict[str, Any]]], path: str) -> None:
    bounded, unbounded = results["bounded (default)"][-1], results["unbounded"][-1]
    report.figure("capacity of one worker (closed loop, 50 connections)", measured.rps, "req/s")
    report.figure("peak arrival rate asked (2.2 x capacity)", bounded["rate"], "req/s")
    report.figure("peak: p99 (bounded)", bounded["p99_ms"], "ms", below(1000, "ms"), SEED)
    report.figure("peak: timeouts and socket errors (bounded)", _share(bounded, of="timeouts"), "%",
                  below(0.01, "%"), "UBDCC: 19 % at 1.3 x its capacity")  # fmt: skip
    report.figure("peak: answered 429/503 with Retry-After (bounded)", _share(bounded, of="refused"), "%")
    report.figure("peak: p99 (unbounded)", unbounded["p99_ms"], "ms")
    report.figure("peak: timeouts and socket errors (unbounded)", _share(unbounded, of="timeouts"), "%")
    rows = []
    for name, phases in results.items():
        for fraction, phase in zip(SHAPE, phases, strict=True):
            statuses = {int(k): v for k, v in phase["statuses"].items()}
            other = sum(v for k, v in statuses.items() if k not in (200, 429, 503))
            counts = [statuses.get(200, 0), statuses.get(429, 0), statuses.get(503, 0), other]
            latency = [phase["p50_ms"], phase["p99_ms"], phase["send_delay_p99_ms"]]
            rows.append([name, f"{fraction:g} x", phase["rate"], phase["sent"], *counts, phase["timeouts"],
                         phase["errors"], *latency])  # fmt: skip
    report.table("Ramp", ["worker", "step", "asked req/s", "sent", "200", "429", "503", "other", "timeouts",
                          "socket errors", "p50 ms", "p99 ms", "send delay p99 ms"], rows)  # fmt: skip
    report.note(f"Load: GET {path} with one tenant's key; one read worker per configuration, both over "
                "one private Valkey; generator and worker share the machine's two cores.")  # fmt: skip
    report.note("Latency counts from each request's scheduled time; 'send delay' is how late the generator "
                "sent (high: the generator, not the worker, fell behind).")  # fmt: skip
    report.note("The unbounded worker is the same build with LADDER_MAX_IN_FLIGHT and LADDER_MAX_QUEUE_MS "
                "lifted: what shedding changes. Its 503s are store calls that found no free connection "
                "within LADDER_STORE_WAIT_MS.")  # fmt: skip
    report.data["capacity"] = vars(measured)
    report.data["ramps"] = results


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ladder bench overload", description=__doc__.split("\n")[0], formatter_class=HelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each step of the ramp")
    parser.add_argument("--capacity-seconds", type=float, default=6.0, help="length of the capacity run")
    parser.add_argument("--connections", type=int, default=2000, help="the generator's connections at most")
    parser.add_argument(
        "--path", help=f"the request (default {SUBSCRIPTIONS} of a tenant with {MARKETS} books)"
    )
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
