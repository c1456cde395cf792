"""``ladder bench coldstart``: every USDT market of OKX or Bybit, from nothing, inside the venue's limits.

Theory of operation
-------------------
OKX and Bybit send a book over the WebSocket when it is subscribed, so a cold start costs no REST
weight; what it spends is connections and subscribe requests, and the venues limit both per IP:
OKX 3 connection requests a second and 480 subscribe requests an hour per connection (and advises
under 30 books of 400 levels per connection), Bybit 500 connections in 5 minutes and 10 topics a
spot request. The fake venue enforces those limits as the venues state them (a refused connection
attempt is an HTTP 429, counted). The benchmark lists ``--markets`` markets per exchange, starts
``--replicas`` ingest nodes on one loopback IP, gives every node one replica of every book whose
quote is USDT (written straight into the assignment sets, as ``ladder bench sync`` does), and
watches the store until every replica is ``synced``.

It reports the time to sync them all beside the least time the connection limit allows (the
connections one node needs, at the pace a node keeps, times the nodes), the connections and
subscribe requests the venue saw, the most requests any connection sent, and the connection
attempts it refused (target: none).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from typing import Any

import aiohttp
import redis.asyncio as redis

from bench.harness import Bench, run
from bench.report import Report, below
from bench.sync import assign, watch_exchanges
from book_store.catalog import MarketCatalog
from ingest_nodes.venues.bybit import limits as bybit_limits
from ingest_nodes.venues.okx import limits as okx_limits
from ladder_process.cli import HelpFormatter

VENUES: dict[str, tuple[tuple[str, ...], int, float]] = {
    "okx": (("okx",), okx_limits.STREAMS_PER_CONNECTION, okx_limits.CONNECTS_PER_S),
    "bybit": (("bybit", "bybit-linear"), bybit_limits.STREAMS_PER_CONNECTION, bybit_limits.CONNECTS_PER_S),
}
"""``--venue``: its exchanges, the books a connection carries, and a node's connection attempts a second."""


async def usdt_markets(client: redis.Redis, exchanges: tuple[str, ...]) -> dict[str, list[str]]:
    """Every trading market quoted in USDT, per exchange, from the catalog the nodes publish."""
    catalog = MarketCatalog(client)
    found: dict[str, list[str]] = {}
    deadline = time.monotonic() + 120
    for exchange in exchanges:
        while not (
            markets := [m.market for m in await catalog.markets(exchange) if m.tradable and m.quote == "USDT"]
        ):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{exchange}: no catalog")
            await asyncio.sleep(0.5)
        found[exchange] = markets
    return found


async def measure(args: argparse.Namespace, report: Report) -> None:
    exchanges, per_connection, connects_per_s = VENUES[args.venue]
    with Bench() as bench:
        counts = (
            ("--okx-symbols", str(args.markets))
            if args.venue == "okx"
            else ("--bybit-symbols", str(args.markets))
        )
        url = bench.start_fake_venue(
            *("--spot-symbols", "0", "--futures-symbols", "0", "--alpaca-symbols", "0", "--okx-symbols", "0"),
            *("--bybit-symbols", "0", *counts, "--rate", str(args.rate), "--levels", str(args.levels)),
        )
        nodes = [
            bench.start_node(f"coldstart-{i + 1}", exchanges=",".join(exchanges), stats_interval_s="0.5")
            for i in range(args.replicas)
        ]
        client = redis.Redis.from_url(bench.redis_url)
        books = await usdt_markets(client, exchanges)
        total = sum(len(names) for names in books.values())
        # Each node paces its own attempts, per exchange; its first one goes at once.
        least_s = max(
            (math.ceil(len(names) / per_connection) - 1) / connects_per_s for names in books.values()
        )
        started = time.monotonic()
        await assign(client, nodes, books, args.depth)
        done_at = await watch_exchanges(client, nodes, books, timeout_s=args.timeout_s or 60 + 10 * least_s)
        seconds = max(done_at.values())
        async with aiohttp.ClientSession() as http, http.get(f"{url}/_fake/stats") as response:
            stats: dict[str, Any] = await response.json()
        await client.aclose()
    venues = {name: stats["venues"][name] for name in exchanges}
    refused = sum(v.get("refused_connects", 0) for v in venues.values())
    report.data.update(books=total, seconds=seconds, started=started, venues=venues)
    report.figure(f"replicas synced ({total} USDT books x {args.replicas})", total * args.replicas, "")
    report.figure("time to sync every replica", seconds, "s")
    report.figure(
        "least time the connection pace allows (a node's connections of one exchange / its pace)",
        least_s,
        "s",
    )
    report.figure("connection attempts the venue refused", refused, "", below(1, ""))
    report.figure("connections the venue saw at the end", sum(v["connections"] for v in venues.values()), "")
    report.figure(
        "most subscribe requests one connection sent",
        max(v.get("max_requests_per_connection", 0) for v in venues.values()),
        "",
        below(okx_limits.REQUESTS_PER_HOUR + 1, "") if args.venue == "okx" else None,
    )
    report.table(
        "Per exchange",
        ["exchange", "USDT books", "synced after s", "connections", "refused connects"],
        [
            [
                name,
                len(books[name]),
                done_at[name],
                venues[name]["connections"],
                venues[name].get("refused_connects", 0),
            ]
            for name in exchanges
        ],
    )
    report.note(
        f"{args.replicas} nodes on one IP, {per_connection} books a connection, a node opening "
        f"{connects_per_s:g} connections a second; venue books {args.levels} levels a side moving "
        f"{args.rate:g} times a second; the nodes publish {args.depth} levels."
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="ladder bench coldstart",
        description=__doc__,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--venue", choices=sorted(VENUES), default="okx", help="which venue's markets")
    parser.add_argument(
        "--markets",
        type=int,
        default=400,
        help="markets the fake venue lists per kind (OKX: SPOT and as many SWAP; Bybit: per category)",
    )
    parser.add_argument("--replicas", type=int, default=2, help="replicas per book = ingest nodes")
    parser.add_argument("--depth", type=int, default=20, help="levels per side each book is kept at")
    parser.add_argument("--rate", type=float, default=0.2, help="venue updates/s per market")
    parser.add_argument("--levels", type=int, default=200, help="venue book levels per side")
    parser.add_argument(
        "--timeout-s",
        type=float,
        default=0.0,
        help="give up after this long (0: a minute plus 10x the least time)",
    )
    args = parser.parse_args(argv)
    report = Report(
        f"coldstart-{args.venue}", f"A cold start of every USDT market of {args.venue}, within its limits"
    )
    run(measure(args, report))
    print(f"report: {report.write()}")


if __name__ == "__main__":
    main()
