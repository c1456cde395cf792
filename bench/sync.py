"""``ladder bench sync``: sync thousands of Binance books inside the venue's request-weight budget.

Theory of operation
-------------------
The fake venue enforces Binance's weights (spot 6000, USD-M futures 2400 per minute and IP, in
calendar-minute windows) and answers 429, then 418, to a client that goes over. The benchmark
starts ``--replicas`` ingest nodes on one loopback IP (so they share one budget through the store,
as nodes behind one NAT do), lists ``--markets`` spot and ``--markets`` futures markets from the
catalog the nodes publish, and gives every node one replica of every book (replica i on node i,
written straight into the nodes' assignment sets, so the control plane's scheduler is not part of
what is measured). It then watches the store until every replica of every book is ``synced``.

Each replica needs one REST snapshot, of the cheapest depth covering ``--depth``. So the least time
any client could take is set by the weight: with ``W`` the weight all snapshots of a venue cost and
``L`` the budget per window, ``n = ceil(W / L)`` windows are needed; the first is the rest of the
current minute, and the last may be spent the moment it opens. The minimum is therefore the time
to the start of window ``n`` (0 when one window suffices); the venue that needs longer sets it.
The run is judged against that minimum (target: within 1.2x), with zero 429/418 answers, and
reports the nodes' CPU time and memory. By default the books are assigned just after a window
opens (``--no-align`` starts at once), so the first window is a whole one and runs are comparable.

The venue moves each market 0.2 times a second by default: one fake-venue process streaming 4026
markets to two nodes already needs most of a core at that rate, and a starved venue answers
snapshots late. A book completes its sync on the first event after its snapshot, so the run ends
at most ``1 / rate`` after the last snapshot of the last window.

Then every book stays live for ``--live-s`` (60 s) and the run reports the weight the nodes' stall
checks (``ingest_nodes/runtime/stall_checks.py``) spent meanwhile, as a share of the budget (target: at
most 10 %).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import redis.asyncio as redis

from bench.harness import EXCHANGES, Bench, Node, cpu_seconds
from bench.report import Report, below
from book_store.catalog import MarketCatalog
from book_store.codec import BookStatus
from book_store.reader import BookReader
from book_store.schema import BookKey, node_stats_key
from control_plane.models import ReplicaAssignment
from control_plane.stores.redis import RedisControlStore
from ingest_nodes.core.trusted_window import snapshot_limit
from ingest_nodes.venues.binance.limits import depth_weight
from ladder_process.cli import HelpFormatter

WINDOW_S = 60.0
TARGET_RATIO = 1.2
CHECK_TARGET_PCT = 10
"""Stall checks may spend at most this share of the weight budget with every book live."""


@dataclass(frozen=True)
class Budget:
    """One venue's weight arithmetic for this run."""

    exchange: str
    books: int
    replicas: int
    limit: int
    """Snapshot depth asked for."""
    weight: int
    """Weight of one snapshot."""
    per_window: int
    """The nodes' shared budget per window (the venue's limit times the budget share)."""
    venue_limit: int

    @property
    def total_weight(self) -> int:
        return self.books * self.replicas * self.weight

    def minimum_s(self, start_s: float, per_window: int | None = None) -> float:
        """Least time from ``start_s`` (wall clock) to spend the total weight in fixed windows."""
        windows = math.ceil(self.total_weight / (per_window or self.per_window))
        if windows <= 1:
            return 0.0
        rest_of_first = WINDOW_S - start_s % WINDOW_S
        return rest_of_first + (windows - 2) * WINDOW_S


@dataclass
class Progress:
    """Synced replicas per exchange over time."""

    started: float
    times: list[float] = field(default_factory=list)
    synced: dict[str, list[int]] = field(default_factory=dict)
    done_at: dict[str, float] = field(default_factory=dict)


def budgets(args: argparse.Namespace) -> dict[str, Budget]:
    out = {}
    for exchange, spec in EXCHANGES.items():
        limit = snapshot_limit(spec.depth_tiers, args.depth)
        out[exchange] = Budget(
            exchange=exchange,
            books=args.markets,
            replicas=args.replicas,
            limit=limit,
            weight=depth_weight(spec.depth_tiers, limit),
            per_window=int(spec.weight_per_minute * args.share),
            venue_limit=spec.weight_per_minute,
        )
    return out


async def markets(client: redis.Redis, count: int) -> dict[str, list[str]]:
    """``count`` trading markets per exchange, from the catalog the nodes publish."""
    catalog = MarketCatalog(client)
    found: dict[str, list[str]] = {}
    deadline = time.monotonic() + 60
    for exchange in EXCHANGES:
        while True:
            trading = [m.market for m in await catalog.markets(exchange) if m.tradable]
            if len(trading) >= count:
                found[exchange] = trading[:count]
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{exchange}: the catalog lists {len(trading)} trading markets")
            await asyncio.sleep(0.5)
    return found


async def assign(client: redis.Redis, nodes: Sequence[Node], books: dict[str, list[str]], depth: int) -> None:
    """Replica i of every book on node i, ``depth`` levels deep."""
    store = RedisControlStore(client)
    for index, node in enumerate(nodes, start=1):
        replicas = [
            ReplicaAssignment(exchange, market, index, node.node_id, depth)
            for exchange, names in books.items()
            for market in names
        ]
        await store.replace_assignments(node.node_id, replicas)


async def watch(
    client: redis.Redis, nodes: Sequence[Node], wanted: int, progress: Progress, timeout_s: float
) -> None:
    """Until every node reports ``wanted`` synced books of each exchange (the counters it writes)."""
    last_print = 0.0
    docs: list[dict[str, Any]] = [{} for _ in nodes]
    while True:
        for i, node in enumerate(nodes):
            raw = await client.get(node_stats_key(node.node_id))
            if raw is not None:  # else keep the last one: a busy node may be late to rewrite it
                docs[i] = orjson.loads(raw)
        now = time.monotonic() - progress.started  # after the reads: never earlier than what they saw
        progress.times.append(now)
        for exchange in EXCHANGES:
            counts = [int(doc.get("exchanges", {}).get(exchange, {}).get("synced", 0)) for doc in docs]
            progress.synced.setdefault(exchange, []).append(sum(counts))
            if min(counts) >= wanted and exchange not in progress.done_at:
                progress.done_at[exchange] = now
        if len(progress.done_at) == len(EXCHANGES):
            return
        if now - last_print >= 10:
            last_print = now
            counts_text = ", ".join(f"{e}: {v[-1]}" for e, v in progress.synced.items())
            print(f"{now:6.0f} s  synced replicas  {counts_text}", flush=True)
        if now > timeout_s:
            raise TimeoutError(f"not every replica synced within {timeout_s:.0f} s")
        await asyncio.sleep(0.2)


async def watch_exchanges(
    client: redis.Redis, nodes: Sequence[Node], books: dict[str, list[str]], timeout_s: float
) -> dict[str, float]:
    """Seconds until every node reports all of an exchange's ``books`` synced, per exchange."""
    started = time.monotonic()
    done_at: dict[str, float] = {}
    while len(done_at) < len(books):
        docs = [
            orjson.loads(raw) for node in nodes if (raw := await client.get(node_stats_key(node.node_id)))
        ]
        now = time.monotonic() - started
        for exchange, names in books.items():
            counts = [int(doc.get("exchanges", {}).get(exchange, {}).get("synced", 0)) for doc in docs]
            if len(counts) == len(nodes) and min(counts) >= len(names):
                done_at.setdefault(exchange, now)
        if now > timeout_s:
            raise TimeoutError(f"not every replica synced within {timeout_s:.0f} s: {docs and counts}")
        await asyncio.sleep(0.2)
    return done_at


async def stored_unsynced(client: redis.Redis, books: dict[str, list[str]], replicas: int) -> int:
    """Replicas the store does not hold as synced once the nodes say all are (last writes may lag)."""
    reader = BookReader(client)
    keys = [BookKey(exchange, market) for exchange, names in books.items() for market in names]
    for _attempt in range(10):
        missing = 0
        for start in range(0, len(keys), 500):
            stored = await reader.many(keys[start : start + 500])
            for snaps in stored.values():
                missing += replicas - sum(s.status is BookStatus.SYNCED for s in snaps.values())
        if not missing:
            break
        await asyncio.sleep(0.5)
    return missing


def rss_kib(pid: int) -> tuple[int, int]:
    """(current, peak) resident memory of a process, KiB (Linux ``/proc``)."""
    values = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                values[name] = int(rest.split()[0])
    return values.get("VmRSS", 0), values.get("VmHWM", 0)


async def venue_stats(http: aiohttp.ClientSession, venue: str) -> dict[str, object]:
    async with http.get(f"{venue}/_fake/stats") as response:
        body: dict[str, object] = await response.json()
        return body


async def measure(args: argparse.Namespace, report: Report) -> None:
    plan = budgets(args)
    with Bench() as bench:
        venue = bench.start_fake_venue(
            "--spot-symbols", str(args.markets), "--futures-symbols", str(args.markets),
            "--alpaca-symbols", "1", "--rate", str(args.rate), "--levels", str(args.levels),
        )  # fmt: skip
        nodes = [
            bench.start_node(
                f"sync-{i + 1}",
                weight_budget_share=str(args.share),
                streams_per_connection=str(args.streams_per_connection),
                capacity=str(4 * args.markets),
                exchanges=",".join(EXCHANGES),
                stats_interval_s="0.5",
            )
            for i in range(args.replicas)
        ]
        client = redis.Redis.from_url(bench.redis_url)
        async with aiohttp.ClientSession() as http:
            books = await markets(client, args.markets)
            if args.align:
                wait_s = WINDOW_S - time.time() % WINDOW_S + 0.5
                print(f"starting with the next weight window, in {wait_s:.0f} s", flush=True)
                await asyncio.sleep(wait_s)
            cpu_before = {n.node_id: cpu_seconds(n.pid) for n in nodes}
            started_wall = time.time()
            progress = Progress(time.monotonic())
            await assign(client, nodes, books, args.depth)
            print(f"assigned {args.markets} spot + {args.markets} futures books x {args.replicas} replicas",
                  flush=True)  # fmt: skip
            minimum = max(b.minimum_s(started_wall) for b in plan.values())
            await watch(client, nodes, args.markets, progress, args.timeout_s or 3 * minimum + 180)
            elapsed = max(progress.done_at.values())
            unsynced = await stored_unsynced(client, books, args.replicas)
            cpu = {n.node_id: cpu_seconds(n.pid) - cpu_before[n.node_id] for n in nodes}
            memory = {n.node_id: rss_kib(n.pid) for n in nodes}
            stats = await venue_stats(http, venue)
            node_docs = [orjson.loads(await client.get(node_stats_key(n.node_id)) or b"{}") for n in nodes]
            if args.live_s:
                print(f"every book live for {args.live_s:g} s: what stall checks cost", flush=True)
                await asyncio.sleep(args.live_s)
                live_docs = [
                    orjson.loads(await client.get(node_stats_key(n.node_id)) or b"{}") for n in nodes
                ]
        await client.aclose()
    _write(report, args, plan, started_wall, elapsed, progress, cpu, memory, stats, node_docs)
    report.figure("replicas not stored as synced at the end", unsynced, "", below(1, ""))
    if args.live_s:
        _write_checks(report, args, plan, node_docs, live_docs)


def _check_weight(docs: list[dict[str, Any]], exchange: str) -> int:
    return sum(int(doc.get("exchanges", {}).get(exchange, {}).get("snapshots", {}).get("check_weight", 0))
               for doc in docs)  # fmt: skip


def _write_checks(
    report: Report,
    args: argparse.Namespace,
    plan: dict[str, Budget],
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
) -> None:
    """What the stall checks (see ingest_nodes/runtime/stall_checks.py) spent while every book was live."""
    for budget in plan.values():
        spent = _check_weight(after, budget.exchange) - _check_weight(before, budget.exchange)
        allowed = budget.per_window * args.live_s / WINDOW_S
        share = 100 * spent / allowed if allowed else float("nan")
        report.figure(
            f"{budget.exchange}: stall checks' weight with every book live for {args.live_s:g} s",
            share,
            "% of the budget",
            below(CHECK_TARGET_PCT + 1e-9, "% of the budget"),
        )
        print(f"{budget.exchange}: stall checks spent {spent} weight in {args.live_s:g} s, {share:.2f} % of "
              f"the budget (target <= {CHECK_TARGET_PCT} %)", flush=True)  # fmt: skip


def _write(
    report: Report,
    args: argparse.Namespace,
    plan: dict[str, Budget],
    started_wall: float,
    elapsed: float,
    progress: Progress,
    cpu: dict[str, float],
    memory: dict[str, tuple[int, int]],
    venue: dict[str, object],
    node_docs: list[dict[str, object]],
) -> None:
    minimum = max(b.minimum_s(started_wall) for b in plan.values())
    at_venue_limit = max(b.minimum_s(started_wall, b.venue_limit) for b in plan.values())
    refused = int(venue["http_429"]) + int(venue["http_418"])  # type: ignore[call-overload]
    books_per_node = 2 * args.markets
    report.figure(
        f"time to sync {args.markets} spot + {args.markets} futures books x {args.replicas} replicas",
        elapsed,
        "s",
    )
    report.figure("least time the weight budget allows", minimum, "s")
    report.figure(
        "time / least time", elapsed / minimum if minimum else None, "x", below(TARGET_RATIO + 1e-9, "x")
    )
    report.figure("least time at the venue's whole limit (budget share 1.0)", at_venue_limit, "s")
    report.figure("HTTP 429 and 418 answers", refused, "", below(1, ""))
    ubdcc = "UBDCC: 25 minutes for 4026 books (2013 x 2)"
    report.figure("creating and syncing the books", elapsed, "s", reference=ubdcc)
    rows = []
    for node_id, (rss, peak) in memory.items():
        rows.append([node_id, books_per_node, cpu[node_id], 100 * cpu[node_id] / elapsed, rss / 1024,
                     peak / 1024, rss / 1024 / (books_per_node / 1000)])  # fmt: skip
    report.table(
        "Ingest nodes while syncing",
        ["node", "books", "CPU s", "CPU %", "RSS MiB", "peak RSS MiB", "RSS MiB per 1000 books"],
        rows,
    )
    weight_header = ["exchange", "snapshots", "depth", "weight each", "weight total", "budget per minute",
                     "venue limit", "least time s", "synced at s"]  # fmt: skip
    weight_rows = [
        [b.exchange, b.books * b.replicas, b.limit, b.weight, b.total_weight, b.per_window, b.venue_limit,
         b.minimum_s(started_wall), progress.done_at.get(b.exchange, float("nan"))]
        for b in plan.values()
    ]  # fmt: skip
    report.table("Weight arithmetic per venue", weight_header, weight_rows)
    nodes_header = ["node", "exchange", "snapshots fetched", "weight spent", "non-200 answers",
                    "budget waits", "resyncs"]  # fmt: skip
    nodes_rows = [
        [doc.get("node_id"), exchange, x["snapshots"]["fetched"], x["snapshots"]["weight_spent"],
         x["snapshots"]["http_status"], x["snapshots"]["waits"], doc["replica_totals"]["resyncs"]]  # type: ignore[index]
        for doc in node_docs
        for exchange, x in doc.get("exchanges", {}).items()  # type: ignore[attr-defined]
    ]  # fmt: skip
    report.table("What the nodes report", nodes_header, nodes_rows)
    report.data.update(
        venue=venue,
        nodes=node_docs,
        started_wall=started_wall,
        into_minute_s=started_wall % WINDOW_S,
        timeline={"seconds": progress.times, **progress.synced},
    )
    report.line_plot(
        "synced_over_time.png",
        "Synced replicas over time",
        "seconds since the books were assigned",
        "synced replicas",
        {exchange: (progress.times, counts) for exchange, counts in progress.synced.items()},
    )
    report.note(
        f"Venue: {args.markets} spot and {args.markets} futures markets at {args.rate:g} updates/s each, "
        f"{args.levels} levels a side; nodes publish {args.depth} levels, spend {args.share:g} of the "
        f"venue's weight, carry up to {args.streams_per_connection} streams per connection. The run started "
        f"{started_wall % WINDOW_S:.1f} s into a weight window."
    )
    report.note(
        "Least time: the weight of one snapshot per replica, spent in calendar-minute windows of the budget "
        "(the venue's limit times the budget share), the first window being the rest of the current minute; "
        "see the module docstring of bench/sync.py."
    )
    ratio = elapsed / minimum if minimum else float("nan")
    print(f"synced in {elapsed:.1f} s; least time the budget allows {minimum:.1f} s ({ratio:.2f}x, "
          f"target <= {TARGET_RATIO}x); at the venue's whole limit {at_venue_limit:.1f} s")  # fmt: skip
    print(f"429/418 answers: {refused}", flush=True)
    for r in rows:
        print(f"{r[0]}: CPU {r[2]:.1f} s ({r[3]:.0f} %), RSS {r[4]:.0f} MiB (peak {r[5]:.0f}), "
              f"{r[6]:.1f} MiB per 1000 books", flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="ladder bench sync", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument("--markets", type=int, default=2013, help="markets per venue (spot and futures)")
    parser.add_argument("--replicas", type=int, default=2, help="replicas per book = ingest nodes")
    parser.add_argument("--depth", type=int, default=20, help="levels per side the nodes publish")
    parser.add_argument("--share", type=float, default=0.95, help="share of the venue's weight to use")
    parser.add_argument(
        "--rate",
        type=float,
        default=0.2,
        help="venue updates/s per market (4026 markets at 0.2/s already keep one fake-venue core busy)",
    )
    parser.add_argument("--levels", type=int, default=200, help="venue book levels per side")
    parser.add_argument(
        "--streams-per-connection", type=int, default=1024, help="venue streams one connection carries"
    )
    parser.add_argument(
        "--no-align", dest="align", action="store_false", help="start at once, not as a weight window opens"
    )
    parser.add_argument(
        "--live-s",
        type=float,
        default=60.0,
        help="after the sync, keep every book live this long and report what stall checks spend",
    )
    parser.add_argument("--timeout-s", type=float, default=0.0, help="0: three times the least time + 3 min")
    args = parser.parse_args(argv)
    report = Report("sync", "Syncing thousands of books inside the venue's weight budget")
    asyncio.run(measure(args, report))
    print(f"report: {report.write()}")


if __name__ == "__main__":
    main()
