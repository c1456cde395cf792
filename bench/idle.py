"""``ladder bench idle``: what a node spends on books that do not change.

Theory of operation
-------------------
Most of an exchange's markets are quiet most of the time, so what a node spends per quiet book
bounds how many books one machine keeps. The benchmark starts a fake venue whose markets never
move (``--rate 0``) and one ingest node, measures the node's CPU for ``--seconds`` with no book
(its base cost: heartbeats, metrics, the event loop), assigns it ``--books`` spot books, waits
until all are synced, lets them settle, and measures again over the same time. The difference,
divided by the books and the seconds, is the CPU an idle book costs per second; the store's
command counters over the same window show what the node wrote for them.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import aiohttp
import redis.asyncio as redis

from bench.harness import Bench, Node, cpu_seconds, sync_timeout_s, trading_pairs, wait_synced
from bench.report import Report

_WRITES = ("hset", "publish", "evalsha", "set")


async def store_calls(client: redis.Redis) -> dict[str, int]:
    """How often the store has run each command that writes a snapshot or a heartbeat."""
    stats: dict[str, Any] = await client.info("commandstats")
    return {name: int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in _WRITES}


async def cpu_over(node: Node, seconds: float) -> float:
    """CPU seconds the node used per second over the next ``seconds``."""
    before = cpu_seconds(node.pid)
    await asyncio.sleep(seconds)
    return (cpu_seconds(node.pid) - before) / seconds


async def measure(args: argparse.Namespace, report: Report) -> None:
    with Bench() as bench:
        venue = bench.start_spot_venue(args.books, args.levels)
        node = bench.start_node("idle-1", capacity=str(args.books + 10), stats_interval_s="5")
        client = redis.Redis.from_url(bench.redis_url)
        async with aiohttp.ClientSession() as http:
            pairs = await trading_pairs(http, venue, args.books)
            await wait_synced(http, node, 0)
            base = await cpu_over(node, args.seconds)
            print(f"no book: {base * 100:.2f} % of a core", flush=True)
            await bench.assign(node, "binance.com", pairs, args.depth)
            synced = await wait_synced(
                http, node, args.books, sync_timeout_s("binance.com", args.books, args.depth)
            )
            print(
                f"{args.books} books synced in {synced['seconds']:.0f} s; settling {args.settle_s:.0f} s",
                flush=True,
            )
            await asyncio.sleep(args.settle_s)
            calls_before = await store_calls(client)
            loaded = await cpu_over(node, args.seconds)
            calls_after = await store_calls(client)
        await client.aclose()
    per_book_us = (loaded - base) / args.books * 1e6
    writes = {name: (calls_after[name] - calls_before[name]) / args.seconds for name in _WRITES}
    print(
        f"{args.books} idle books: {loaded * 100:.2f} % of a core, {per_book_us:.2f} us per book and second"
    )
    report.figure(f"node CPU with {args.books} idle books", loaded * 100, "% of a core")
    report.figure("node CPU with no book", base * 100, "% of a core")
    report.figure("CPU per idle book", per_book_us, "us per book per second")
    report.table(
        "store commands per second while the books were idle",
        ["command", "calls/s", "per book per second"],
        [[name, round(rate, 1), round(rate / args.books, 4)] for name, rate in writes.items()],
    )
    report.note(
        f"{args.books} spot books {args.depth} levels deep on one node, the venue not moving; CPU "
        f"measured over {args.seconds:.0f} s each, with no book and with the books synced and settled "
        f"for {args.settle_s:.0f} s."
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="ladder bench idle", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--books", type=int, default=2000, help="idle books on the node")
    parser.add_argument("--depth", type=int, default=20, help="levels per side the node publishes")
    parser.add_argument("--levels", type=int, default=100, help="venue book levels per side")
    parser.add_argument("--seconds", type=float, default=20.0, help="each CPU measurement")
    parser.add_argument("--settle-s", type=float, default=10.0, help="wait after the sync before measuring")
    args = parser.parse_args(argv)
    report = Report("idle", "What a node spends on books that do not change")
    asyncio.run(measure(args, report))
    print(f"report: {report.write()}")


if __name__ == "__main__":
    main()
