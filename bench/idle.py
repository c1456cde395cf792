"""``ladder bench idle``: what a node spends on books that do not change.

Theory of operation
-------------------
Most of an exchange's markets are quiet most of the time, so what a node spends per quiet book
bounds how many books one machine keeps. The benchmark starts a fake venue and, one after the
other, two ingest nodes that differ only in how readers
learn that their quiet books are still kept: one republishes every quiet book every
``LADDER_KEEPALIVE_MS`` (``LADDER_QUIET_KEEPALIVE_MS`` set to the same 1 s: the way it used to
be), the other vouches for them with one node heartbeat a second and republishes a quiet book
only every ``LADDER_QUIET_KEEPALIVE_MS`` (30 s, the default). For each it measures the node's CPU
for ``--seconds`` with no book (its base cost: heartbeats, metrics, the event loop), assigns it
``--books`` spot books, moves the venue's markets at ``--sync-rate`` until all are synced (a spot
book syncs on its first event), stops them (rate 0), lets them settle, and measures again over
the same time. The difference, divided by the books and the seconds, is the CPU an idle book
costs per second; the store's command counters over the same window show what the node wrote
for them. Both nodes see the same books at the same age, so the stall checks that confirm quiet
books (the first after 10 s of quiet, then 20 s, 40 s ...) cost both the same.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any, NamedTuple

import aiohttp
import redis.asyncio as redis

from bench.harness import Bench, Node, cpu_seconds, sync_timeout_s, trading_pairs, wait_synced
from bench.report import Report, below
from ladder_process.cli import HelpFormatter

_WRITES = ("hset", "publish", "evalsha", "set")


class Mode(NamedTuple):
    name: str
    quiet_keepalive_ms: int


MODES = (Mode("republish every quiet book every second", 1000), Mode("node heartbeat", 30_000))


class Measured(NamedTuple):
    base: float
    loaded: float
    writes: dict[str, float]


async def store_calls(client: redis.Redis) -> dict[str, int]:
    """How often the store has run each command that writes a snapshot or a heartbeat."""
    stats: dict[str, Any] = await client.info("commandstats")
    return {name: int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in _WRITES}


async def cpu_over(node: Node, seconds: float) -> float:
    """CPU seconds the node used per second over the next ``seconds``."""
    before = cpu_seconds(node.pid)
    await asyncio.sleep(seconds)
    return (cpu_seconds(node.pid) - before) / seconds


async def venue_rate(http: aiohttp.ClientSession, venue: str, rate: float) -> None:
    """Set the rate of every spot market of the fake venue."""
    action = {"venue": "spot", "action": "rate", "rate": rate}
    async with http.post(f"{venue}/_fake/control", json=action) as response:
        if response.status != 200:
            raise RuntimeError(f"venue rate {rate}: {response.status} {await response.text()}")


async def measure_node(
    args: argparse.Namespace,
    bench: Bench,
    http: aiohttp.ClientSession,
    venue: str,
    pairs: list[str],
    mode: Mode,
    index: int,
) -> Measured:
    node = bench.start_node(
        f"idle-{index}",
        capacity=str(args.books + 10),
        stats_interval_s="5",
        keepalive_ms="1000",
        quiet_keepalive_ms=str(mode.quiet_keepalive_ms),
    )
    client = redis.Redis.from_url(bench.redis_url)
    try:
        await wait_synced(http, node, 0)
        base = await cpu_over(node, args.seconds)
        print(f"[{mode.name}] no book: {base * 100:.2f} % of a core", flush=True)
        await bench.assign(node, "binance.com", pairs, args.depth)
        await venue_rate(http, venue, args.sync_rate)
        synced = await wait_synced(
            http, node, args.books, sync_timeout_s("binance.com", args.books, args.depth)
        )
        await venue_rate(http, venue, 0)
        print(
            f"[{mode.name}] {args.books} books synced in {synced['seconds']:.0f} s; "
            f"settling {args.settle_s:.0f} s",
            flush=True,
        )
        await asyncio.sleep(args.settle_s)
        calls_before = await store_calls(client)
        loaded = await cpu_over(node, args.seconds)
        calls_after = await store_calls(client)
    finally:
        await client.aclose()
        bench.stop_node(node)
    writes = {name: (calls_after[name] - calls_before[name]) / args.seconds for name in _WRITES}
    per_book_us = (loaded - base) / args.books * 1e6
    print(
        f"[{mode.name}] {loaded * 100:.2f} % of a core, {per_book_us:.2f} us per book and second", flush=True
    )
    return Measured(base, loaded, writes)


async def measure(args: argparse.Namespace, report: Report) -> None:
    results: dict[Mode, Measured] = {}
    with Bench() as bench:
        venue = bench.start_spot_venue(args.books, args.levels)
        async with aiohttp.ClientSession() as http:
            pairs = await trading_pairs(http, venue, args.books)
            for index, mode in enumerate(MODES, 1):
                results[mode] = await measure_node(args, bench, http, venue, pairs, mode, index)
    per_book = {mode: (m.loaded - m.base) / args.books * 1e6 for mode, m in results.items()}
    before, after = MODES
    report.figure(
        "CPU per idle book, node heartbeat",
        per_book[after],
        "us per book per second",
        below(per_book[before] / 10, "us per book per second"),
        f"{per_book[before]:.1f} when every quiet book is republished every second",
    )
    report.figure(
        "idle-book CPU, heartbeat / republishing (same run)", per_book[after] / per_book[before], "ratio"
    )
    for mode, m in results.items():
        report.figure(f"node CPU with {args.books} idle books, {mode.name}", m.loaded * 100, "% of a core")
        report.figure(f"node CPU with no book, {mode.name}", m.base * 100, "% of a core")
    report.table(
        "store commands per second while the books were idle",
        [
            "command",
            *(f"calls/s, {mode.name}" for mode in MODES),
            *(f"per book/s, {mode.name}" for mode in MODES),
        ],
        [
            [
                name,
                *(round(results[mode].writes[name], 1) for mode in MODES),
                *(round(results[mode].writes[name] / args.books, 4) for mode in MODES),
            ]
            for name in _WRITES
        ],
    )
    report.note(
        f"{args.books} spot books {args.depth} levels deep on one node, the venue not moving; CPU "
        f"measured over {args.seconds:.0f} s each, with no book and with the books synced and settled "
        f"for {args.settle_s:.0f} s; one node per mode, one after the other, against the same venue."
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="ladder bench idle", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument("--books", type=int, default=2000, help="idle books on the node")
    parser.add_argument("--depth", type=int, default=20, help="levels per side the node publishes")
    parser.add_argument("--levels", type=int, default=100, help="venue book levels per side")
    parser.add_argument("--sync-rate", type=float, default=1.0, help="events/s a market while syncing")
    parser.add_argument("--seconds", type=float, default=20.0, help="each CPU measurement")
    parser.add_argument("--settle-s", type=float, default=10.0, help="wait after the sync before measuring")
    args = parser.parse_args(argv)
    report = Report("idle", "What a node spends on books that do not change")
    asyncio.run(measure(args, report))
    print(f"report: {report.write()}")


if __name__ == "__main__":
    main()
