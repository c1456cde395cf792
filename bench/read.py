"""``ladder bench read``: requests/s and latency of book reads, next to a static-body ceiling.

Theory of operation
-------------------
A private Valkey holds 2000 synthetic books (100 levels a side), all ``synced`` and kept fresh by
a writer process that republishes every book each second (the hot one 20 times a second), as
ingest nodes do, so every read worker also applies ~2000 change messages a second. The real
``python -m read_functions --workers 2`` serves them to one tenant subscribed to all 2000.
Four loads run side by side, ``--rounds`` times (5 by default; each round starts one load later,
so that no load always follows the same one), 50 connections each:

1. *ceiling*: plain aiohttp (its low-level server) + uvloop, two SO_REUSEPORT workers, answering
   every request with a precomputed body of the same size as the hot book's; the targets are
   set against it;
2. *ladder-static*: the same body through the read API's own HTTP/1.1 protocol
   (:mod:`read_functions.server.http1`), so the report also shows what the core costs on top of it;
3. *hot*: one market, ``depth=100``;
4. *random*: a market drawn at random among the 2000 for every request.

With ``--case consolidated`` the same server, writer and 2000 books serve two loads instead, side
by side in each round: *single*, one venue's BTC/USDT book at ``depth=100`` (a plain book read),
and *consolidated*, ``GET /v1/consolidated/BTC-USDT`` over five venues' books of the pair at
``depth=100`` (:mod:`read_functions.handlers.reads.consolidated`). The five books are republished
20 times a second each, as the hot book is, so a worker merges anew up to 100 times a second (a
consolidated answer is reused only while none of its books changed); the venues share a price
grid, every other one offset by half a tick, so the merge both sums and interleaves levels. The
target is the issue's: consolidated at least a third of single's rate, in the same round.

The load generator is ``wrk`` when it is on PATH (one thread, so that it takes as little as
possible of the two cores; a Lua script draws the random markets and reports exact
percentiles), else a built-in aiohttp client; the report says which. The machine
is small and shared, so the figures that carry targets are ratios measured in the same round,
reported as medians over the rounds, next to the absolute numbers and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import aiohttp
import redis.asyncio as redis
from aiohttp import web

from bench.harness import Bench, cpu_seconds, huge_page_mb
from bench.report import Report, at_least, below, median, percentiles
from book_store.catalog import MarketCatalog, MarketInfo
from book_store.codec import BookStatus, SnapshotMeta, encode_snapshot
from book_store.schema import BookKey
from book_store.writer import BookWriter
from ladder_cli.supervisor import Child, child_env
from ladder_process.cli import HelpFormatter
from read_functions.app.messages import Request, Response
from read_functions.server.http1 import Http1Server
from read_functions.server.workers import Listener, bind

EXCHANGE = "binance.com"
HOT = "HOTUSDT"
ADMIN_KEY = "ldr_admin_bench_0123456789abcdef"
PEPPER = "bench-pepper-0123456789abcdef0123"
DEPTH = 100
CONNECTIONS = 50
STATIC_LOADS = {"ceiling": "aiohttp", "ladder-static": "ladder"}  # load name -> protocol serving it
UBDCC = "UBDCC, same machine kind: 134 req/s hot (1.7 % of its ceiling), p99 ~530 ms"
PAIR = "BTC-USDT"
VENUE_BOOKS = (
    BookKey("binance.com", "BTCUSDT"),
    BookKey("okx", "BTC-USDT"),
    BookKey("bybit", "BTCUSDT"),
    BookKey("coinbase", "BTC-USDT"),
    BookKey("kraken", "BTC/USDT"),
)
"""The consolidated case's books: one pair on five venues, named as each venue names it."""
Levels = tuple[list[bytes], list[bytes]]
NO_BOOKS: Mapping[BookKey, Levels] = MappingProxyType({})


@dataclass
class Run:
    """One load run's result; ``cpu_s`` is the CPU time the serving processes used meanwhile."""

    name: str
    requests: int
    seconds: float
    errors: int
    p50_ms: float
    p99_ms: float
    cpu_s: float = 0.0

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    @property
    def cpu_us_per_request(self) -> float:
        return 1e6 * self.cpu_s / max(1, self.requests)


def children(pid: int) -> list[int]:
    """The direct children of a process (Linux ``/proc``; none elsewhere)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            return [int(child) for child in listing.read().split()]
    except OSError:
        return []


def market_names(count: int) -> list[str]:
    return [HOT] + [f"S{i:04d}USDT" for i in range(1, count)]


# -- the store side: catalog, and a writer that keeps every book fresh ----------------------------
def book_levels(market: str) -> Levels:
    """100 bids and 100 asks of one synthetic market, encoded once (the writer only restamps them)."""
    base = 1000 + (sum(map(ord, market)) % 500)
    bids = [f'["{base - i * 0.01:.8f}","{1 + i % 7}.25000000"]'.encode() for i in range(DEPTH)]
    asks = [f'["{base + 0.01 + i * 0.01:.8f}","{1 + i % 5}.50000000"]'.encode() for i in range(DEPTH)]
    return bids, asks


def venue_levels(index: int) -> Levels:
    """100 bids and 100 asks of the ``index``-th venue's BTC/USDT book: a 0.01 grid around one mid,
    every other venue's offset by half a tick, quantities of its own; the first venue writes its
    prices with 8 decimals as Binance does (the merge compares them as exact decimals)."""
    mid, offset = 97_000_000, 5 * (index % 2)  # thousandths
    decimals = 8 if index == 0 else 3

    def price(thousandths: int) -> str:
        return f"{thousandths // 1000}.{thousandths % 1000:03d}".ljust(
            len(str(mid // 1000)) + 1 + decimals, "0"
        )

    bids = [
        f'["{price(mid - 10 * (i + 1) - offset)}","{1 + (i * (index + 3)) % 9}.{index}25"]'
        for i in range(DEPTH)
    ]
    asks = [
        f'["{price(mid + 10 * i + offset)}","{1 + (i * (index + 2)) % 7}.{index}5"]' for i in range(DEPTH)
    ]
    return [b.encode() for b in bids], [a.encode() for a in asks]


def book_snapshot(levels: Levels, update_id: int) -> bytes:
    now = time.time_ns() // 1_000_000
    return encode_snapshot(SnapshotMeta(update_id, now - 3, now - 1, now, 0, BookStatus.SYNCED), *levels)


def write_forever(redis_url: str, markets: list[str], hot: Mapping[BookKey, Levels]) -> None:
    """A writer process: every book every second, the ``hot`` ones 20 times a second."""

    async def run() -> None:
        client = redis.Redis.from_url(redis_url)
        writer = BookWriter(client)
        levels = {market: book_levels(market) for market in markets}
        per_tick = max(1, len(markets) // 20)
        update_id = cursor = 0
        while True:
            update_id += 1
            for book, book_levels_ in hot.items():
                writer.put(book, 0, book_snapshot(book_levels_, update_id))
            for _ in range(per_tick):
                market = markets[cursor % len(markets)]
                writer.put(BookKey(EXCHANGE, market), 0, book_snapshot(levels[market], update_id))
                cursor += 1
            await writer.drain()
            await asyncio.sleep(0.05)

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    asyncio.run(run())


async def seed_catalog(redis_url: str, markets: list[str], hot: Mapping[BookKey, Levels] = NO_BOOKS) -> None:
    """The catalogues (``EXCHANGE``'s markets, and every venue of the ``hot`` books, each listing its
    book as BTC/USDT spot) and a first snapshot of every book."""
    client = redis.Redis.from_url(redis_url)
    infos = [MarketInfo(EXCHANGE, m, "TRADING", m.removesuffix("USDT"), "USDT") for m in markets]
    pair = [MarketInfo(b.exchange, b.market, "TRADING", "BTC", "USDT") for b in hot if b.market != HOT]
    for exchange in dict.fromkeys([EXCHANGE, *(info.exchange for info in pair)]):
        listed = [info for info in (*infos, *pair) if info.exchange == exchange]
        await MarketCatalog(client).replace(exchange, listed)
    writer = BookWriter(client)
    for market in markets:
        writer.put(BookKey(EXCHANGE, market), 0, book_snapshot(book_levels(market), 0))
    for book, levels in hot.items():
        writer.put(book, 0, book_snapshot(levels, 0))
    await writer.drain()
    await client.aclose()


async def tenant_key(base_url: str, markets: list[str], pair_books: Sequence[BookKey] = ()) -> str:
    """A tenant subscribed to every market (and to the pair on the venues of ``pair_books``, in one
    call), with a rate limit far above what one box can ask."""
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    fields = {"name": "bench", "max_markets": len(markets) + len(pair_books), "max_replicas": 1,
              "rate_limit_rps": 1_000_000, "burst": 10_000_000}  # fmt: skip
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{base_url}/v1/admin/tenants", json=fields, headers=admin) as r:
            tenant_id = (await r.json())["id"]
        async with http.post(f"{base_url}/v1/admin/tenants/{tenant_id}/keys", headers=admin) as r:
            key: str = (await r.json())["key"]
        # One bulk call (a key's subscription changes are rate-bounded: one call is one change).
        body = {"exchange": EXCHANGE, "markets": markets}
        async with http.post(f"{base_url}/v1/subscriptions/bulk", headers={"X-API-Key": key}, json=body) as r:
            answer = await r.json()
            if r.status != 200 or answer["failed"]:
                raise RuntimeError(f"subscribing {len(markets)} markets: {r.status} {str(answer)[:300]}")
        if pair_books:
            body = {"pair": PAIR, "venues": [b.exchange for b in pair_books]}
            async with http.post(f"{base_url}/v1/subscriptions/consolidated", headers={"X-API-Key": key},
                                 json=body) as r:  # fmt: skip
                answer = await r.json()
                if r.status != 200 or answer["failed"]:
                    raise RuntimeError(f"subscribing {PAIR}: {r.status} {answer}")
    return key


# -- the static-body servers: a precomputed body through aiohttp, and through Ladder's protocol ----
def serve_static(listener: Listener, worker: int, body: bytes, protocol: str) -> None:
    """One worker answering every request with ``body``: ``aiohttp`` (its low-level server, the
    ceiling the targets are set against) or ``ladder`` (the read API's own HTTP/1.1 protocol)."""

    async def handle(request: web.BaseRequest) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    async def answer(request: Request) -> Response:
        return Response(200, body)

    async def run() -> None:
        if protocol == "ladder":
            await Http1Server(answer, max_body_bytes=1024, secure=False).start(
                listener.socket_for(worker), None
            )
        else:
            runner = web.ServerRunner(web.Server(handle, access_log=None), handle_signals=False)
            await runner.setup()
            await web.SockSite(runner, listener.socket_for(worker)).start()
        await asyncio.Event().wait()

    import uvloop

    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(run())


# -- load generators --------------------------------------------------------------------------------
_WRK_SCRIPT = """
local paths = {%(paths)s}
local counter = 0
wrk.headers["X-API-Key"] = "%(key)s"
function setup(thread)
  counter = counter + 1
  thread:set("seed", counter)
end
function init(args)
  math.randomseed(seed * 7919)
end
function request()
  return wrk.format("GET", paths[math.random(#paths)])
end
function done(summary, latency, requests)
  local e = summary.errors
  local fmt = 'WRKJSON {"requests":%%d,"duration_us":%%d,"errors":%%d,"p50_us":%%d,"p99_us":%%d}\\n'
  local errors = e.connect + e.read + e.write + e.status + e.timeout
  io.write(string.format(fmt, summary.requests, summary.duration, errors,
    latency:percentile(50), latency:percentile(99)))
end
"""


def run_wrk(name: str, base_url: str, paths: Sequence[str], key: str, seconds: float, workdir: Path) -> Run:
    script = workdir / f"{name}.lua"
    script.write_text(_WRK_SCRIPT % {"paths": ",".join(json.dumps(p) for p in paths), "key": key})
    command = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds:.0f}s", "--timeout", "5s", "-s", str(script)]
    done = subprocess.run([*command, base_url], capture_output=True, text=True, check=True)
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("WRKJSON "))
    data = json.loads(line.removeprefix("WRKJSON "))
    return Run(name, data["requests"], data["duration_us"] / 1e6, data["errors"],
               data["p50_us"] / 1000, data["p99_us"] / 1000)  # fmt: skip


async def run_builtin(name: str, base_url: str, paths: Sequence[str], key: str, seconds: float) -> Run:
    """50 connections, each sending its next request as soon as the last answer arrived."""
    latencies: list[float] = []
    errors = 0
    stop_at = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=CONNECTIONS)
    async with aiohttp.ClientSession(base_url, connector=connector, headers={"X-API-Key": key},
                                     skip_auto_headers=("Accept-Encoding",)) as http:  # fmt: skip

        async def connection() -> None:
            nonlocal errors
            chooser = random.Random()
            while time.perf_counter() < stop_at:
                started = time.perf_counter()
                async with http.get(chooser.choice(paths)) as r:
                    await r.read()
                    errors += r.status >= 400
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(connection() for _ in range(CONNECTIONS)))
        elapsed = time.perf_counter() - started
    pct = percentiles([x * 1000 for x in latencies], (50, 99))
    return Run(name, len(latencies), elapsed, errors, pct.get("p50", 0.0), pct.get("p99", 0.0))


# -- the benchmark ---------------------------------------------------------------------------------
async def main(args: argparse.Namespace) -> None:
    markets = market_names(args.markets)
    consolidated = args.case == "consolidated"
    hot = {BookKey(EXCHANGE, HOT): book_levels(HOT)}
    if consolidated:
        hot = {book: venue_levels(i) for i, book in enumerate(VENUE_BOOKS)}
        report = Report("read-consolidated", "Read API: a consolidated book of five venues beside one book")
    else:
        report = Report("read", "Read API: requests/s and latency against a static-body ceiling")
    has_wrk = shutil.which("wrk") is not None
    generator = "wrk" if has_wrk and not args.builtin else "built-in aiohttp client"
    if not has_wrk and not args.builtin:
        print("wrk is not on PATH (make bench-tools installs it): the built-in client takes much of")
        print("the CPU it measures, so every figure, random/hot included, reads low")
    report.environment["tools"] = (
        f"load generator: {generator}; {CONNECTIONS} connections; {args.seconds:.0f} s runs"
    )
    context = multiprocessing.get_context("fork")
    static_processes: dict[str, list[multiprocessing.context.ForkProcess]] = {}
    with Bench() as bench, tempfile.TemporaryDirectory(prefix="ladder-bench-read-") as tmp:
        await seed_catalog(bench.redis_url, markets, hot)
        writer = context.Process(target=write_forever, args=(bench.redis_url, markets, hot), daemon=True)
        writer.start()
        # A round runs the other loads between two random ones, up to a minute with no random read:
        # the read server would unsubscribe the idle books in between (LADDER_BOOK_IDLE_S, 60 s),
        # which a steady random load never lets happen, and the next random round would measure
        # re-loading them. So books stay subscribed for the whole benchmark.
        keys = {"LADDER_ADMIN_KEY": ADMIN_KEY, "LADDER_PEPPER": PEPPER}
        env = child_env(**bench.env, **keys, LADDER_BOOK_IDLE_S="3600")
        read_args = ["read_functions", "--host", "127.0.0.1", "--port", "0", "--workers", str(args.workers),
                     "--log-level", "WARNING"]  # fmt: skip
        read_url = bench.supervisor.start(Child("read", read_args, env, "LADDER_READ_URL"))
        key = await tenant_key(read_url, markets, VENUE_BOOKS if consolidated else ())
        read_parent = bench.supervisor.children[-1].proc
        assert read_parent is not None
        servers = {"read": children(read_parent.pid)}

        async def load(name: str, base: str, paths: Sequence[str], seconds: float) -> Run:
            pids = servers.get(name, servers["read"])
            cpu_before = sum(cpu_seconds(pid) for pid in pids)
            if generator == "wrk":
                run = await asyncio.to_thread(run_wrk, name, base, paths, key, seconds, Path(tmp))
            else:
                run = await run_builtin(name, base, paths, key, seconds)
            run.cpu_s = sum(cpu_seconds(pid) for pid in pids) - cpu_before
            return run

        try:
            if consolidated:
                single = f"/v1/books/{VENUE_BOOKS[0].exchange}/{VENUE_BOOKS[0].market}?depth={DEPTH}"
                venues = ",".join(book.exchange for book in VENUE_BOOKS)
                merged = f"/v1/consolidated/{PAIR}?venues={venues}&depth={DEPTH}"
                body = await fetch(read_url + merged, key)
                await load("warm-up", read_url, [single, merged], 3)
                loads = {"single": (read_url, [single]), "consolidated": (read_url, [merged])}
            else:
                hot_path = f"/v1/books/{EXCHANGE}/{HOT}?depth={DEPTH}"
                random_paths = [f"/v1/books/{EXCHANGE}/{m}?depth={DEPTH}" for m in markets]
                body = await fetch(read_url + hot_path, key)
                statics = {name: bind(name, "127.0.0.1", 0, args.workers, None) for name in STATIC_LOADS}
                static_processes = {
                    name: [context.Process(target=serve_static, args=(statics[name], w, body, protocol),
                                           daemon=True) for w in range(args.workers)]
                    for name, protocol in STATIC_LOADS.items()
                }  # fmt: skip
                for process in itertools.chain(*static_processes.values()):
                    process.start()
                await asyncio.sleep(1.0)
                servers |= {
                    name: [p.pid for p in ps if p.pid is not None] for name, ps in static_processes.items()
                }
                await load("warm-up random", read_url, random_paths, 3)  # every worker loads every book once
                await load("warm-up hot", read_url, [hot_path], 2)
                loads = {
                    "ceiling": (statics["ceiling"].url, [hot_path]),
                    "ladder-static": (statics["ladder-static"].url, [hot_path]),
                    "hot": (read_url, [hot_path]),
                    "random": (read_url, random_paths),
                }
            rounds: list[dict[str, Run]] = []
            for number in range(args.rounds):
                # Each round starts one load later, so that none always follows the same one.
                names = list(loads)[number % len(loads) :] + list(loads)[: number % len(loads)]
                runs = {name: await load(name, *loads[name], args.seconds) for name in names}
                rounds.append(runs)
                print(f"round {number + 1}: " + ", ".join(
                    f"{n} {r.rps:,.0f} req/s p99 {r.p99_ms:.1f} ms {r.cpu_us_per_request:.0f} us CPU/req"
                    for n, r in runs.items()), flush=True)  # fmt: skip
            huge = sum(huge_page_mb(pid) for pid in servers["read"])  # read_functions/server/huge_pages.py
            report.environment["read workers' memory on huge pages"] = f"{huge:.0f} MB"
        finally:
            for process in (*itertools.chain(*static_processes.values()), writer):
                process.terminate()
                process.join(5)
    if consolidated:
        summarize_consolidated(report, rounds, body, generator, len(markets))
    else:
        summarize(report, rounds, body, generator)
    path = report.write()
    print(path.read_text())


async def fetch(url: str, key: str) -> bytes:
    """One answer's body, to size the static one by (and to fail early on a refused request)."""
    async with (
        aiohttp.ClientSession(skip_auto_headers=("Accept-Encoding",)) as http,
        http.get(url, headers={"X-API-Key": key}) as r,
    ):
        if r.status != 200:
            raise RuntimeError(f"{url}: {r.status} {await r.text()}")
        return await r.read()


def summarize_consolidated(
    report: Report, rounds: list[dict[str, Run]], body: bytes, generator: str, background: int
) -> None:
    def med(name: str, attr: str) -> float:
        return median([getattr(r[name], attr) for r in rounds]) or 0.0

    share = median([100 * r["consolidated"].rps / r["single"].rps for r in rounds]) or 0.0
    answer = json.loads(body)
    report.figure(
        "single book, depth 100", med("single", "rps"), "req/s", reference="GET /v1/books/binance.com/BTCUSDT"
    )
    report.figure("single p99", med("single", "p99_ms"), "ms", below(25, "ms"))
    report.figure("consolidated, 5 venues, depth 100", med("consolidated", "rps"), "req/s",
                  reference="GET /v1/consolidated/BTC-USDT?venues=5 venues")  # fmt: skip
    report.figure(
        "consolidated / single (same round)", share, "%", at_least(100 / 3, "%"), "issue 42: a third"
    )
    report.figure("consolidated p50", med("consolidated", "p50_ms"), "ms")
    report.figure("consolidated p99", med("consolidated", "p99_ms"), "ms", below(25, "ms"))
    errors = sum(r[n].errors for r in rounds for n in ("single", "consolidated"))
    report.figure("errors (non-2xx, socket)", errors, "", below(1, ""))
    report.figure("server CPU per request: single", med("single", "cpu_us_per_request"), "us")
    report.figure("server CPU per request: consolidated", med("consolidated", "cpu_us_per_request"), "us")
    rounds_and_generator(report, rounds, generator)
    report.note(
        f"The consolidated answer: {len(answer['books'])} books merged, {len(answer['bids'])} bids and "
        f"{len(answer['asks'])} asks, {len(body)} bytes. Each of the five books is republished 20 times a "
        "second, so a worker merges anew up to 100 times a second; between changes it reuses the "
        f"rendered merge and formats each book's age_ms. {background} other books are republished every "
        "second in the background, as in the books case."
    )
    report.data["rounds"] = [{n: vars(r) for n, r in rs.items()} for rs in rounds]


def summarize(report: Report, rounds: list[dict[str, Run]], body: bytes, generator: str) -> None:
    def med(name: str, attr: str) -> float:
        return median([getattr(r[name], attr) for r in rounds]) or 0.0

    hot_share = median([100 * r["hot"].rps / r["ceiling"].rps for r in rounds]) or 0.0
    random_share = median([100 * r["random"].rps / r["hot"].rps for r in rounds]) or 0.0
    errors = sum(r[n].errors for r in rounds for n in ("hot", "random"))
    report.figure(
        "static-body ceiling", med("ceiling", "rps"), "req/s", reference="aiohttp + uvloop, same body"
    )
    report.figure("hot market, depth 100", med("hot", "rps"), "req/s", reference=UBDCC)
    report.figure("hot / ceiling (same round)", hot_share, "%", at_least(80, "%"), "UBDCC: 1.7 %")
    report.figure("hot p50", med("hot", "p50_ms"), "ms", reference="UBDCC: ~360 ms")
    report.figure("hot p99", med("hot", "p99_ms"), "ms", below(25, "ms"), "UBDCC: ~530 ms")
    report.figure(
        "random market of 2000, depth 100", med("random", "rps"), "req/s", reference="UBDCC: 135 req/s"
    )
    report.figure("random / hot (same round)", random_share, "%", at_least(90, "%"))
    report.figure("random p50", med("random", "p50_ms"), "ms")
    report.figure("random p99", med("random", "p99_ms"), "ms", below(25, "ms"))
    report.figure("errors (non-2xx, socket)", errors, "", below(1, ""))
    own_share = median([100 * r["hot"].rps / r["ladder-static"].rps for r in rounds]) or 0.0
    report.figure(
        "static body through Ladder's own protocol", med("ladder-static", "rps"), "req/s",
        reference="what the read path's HTTP layer alone can do",
    )  # fmt: skip
    report.figure("hot / static through Ladder's protocol (same round)", own_share, "%",
                  reference="the share of the HTTP layer's capacity left after the core")  # fmt: skip
    cpu = {name: med(name, "cpu_us_per_request") for name in ("ceiling", "ladder-static", "hot", "random")}
    report.figure("server CPU per request: ceiling", cpu["ceiling"], "us")
    report.figure("server CPU per request: static through Ladder's protocol", cpu["ladder-static"], "us")
    report.figure("server CPU per request: hot", cpu["hot"], "us")
    report.figure("server CPU per request: random", cpu["random"], "us")
    report.figure("ceiling CPU / hot CPU per request", 100 * cpu["ceiling"] / max(cpu["hot"], 1e-9), "%",
                  reference="what hot / ceiling would be with the CPU to ourselves")  # fmt: skip
    rounds_and_generator(report, rounds, generator)
    report.note(
        f"Body: {len(body)} bytes (depth {DEPTH} a side). The ceiling serves the same bytes from memory."
    )
    report.note(
        "The ceiling is plain aiohttp, as the targets define it. The read API no longer runs on aiohttp's "
        "request machinery but on its own HTTP/1.1 protocol (read_functions/server/http1.py), "
        "so the same body "
        "through that protocol is reported too: the gap between it and the hot market is what the core costs."
    )
    report.data["rounds"] = [{n: vars(r) for n, r in rs.items()} for rs in rounds]


def rounds_and_generator(report: Report, rounds: list[dict[str, Run]], generator: str) -> None:
    """Every round's runs as a table, and what generated the load."""
    report.table("Rounds", ["round", "load", "req/s", "p50 ms", "p99 ms", "errors", "server CPU us/req"],
                 [[i + 1, n, r.rps, r.p50_ms, r.p99_ms, r.errors, r.cpu_us_per_request]
                  for i, rs in enumerate(rounds) for n, r in rs.items()])  # fmt: skip
    report.note(
        f"Load generator: {generator}, {CONNECTIONS} connections, on the same 2-core machine as the servers, "
        "so every figure includes its CPU share; ratios come from one round."
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ladder bench read", description=__doc__.split("\n")[0], formatter_class=HelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5, help="a round runs every load once")
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each load run")
    parser.add_argument(
        "--markets", type=int, default=2000, help="books seeded (the random-market load reads them all)"
    )
    parser.add_argument("--workers", type=int, default=2, help="read (and ceiling) worker processes")
    parser.add_argument(
        "--builtin", action="store_true", help="use the built-in load generator even with wrk"
    )
    parser.add_argument(
        "--case",
        choices=("books", "consolidated"),
        default="books",
        help="books: hot and random reads beside the ceilings; consolidated: one pair on five venues "
        "merged, beside one of its books (writes results/read-consolidated)",
    )
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
