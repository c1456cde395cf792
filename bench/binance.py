"""``ladder bench binance``: all of Binance on one box, the way UBDCC users work, everything at once.

Theory of operation
-------------------
The fake venue lists 2013 spot and 2013 USD-M futures markets (``--markets``) busy after an
activity profile (``--profile``, see ``fake_venue/market/profiles.py``). ``skewed`` (the default)
makes the k-th market of each catalogue update ``--rate x k^-0.8`` times a second (``--rate-skew``),
so with the default ``--rate 10`` the busiest three make 10, 5.7 and 4.2 a second, the last one
every 44 s, and each venue ~185 a second (~370 in all). ``binance-real`` is Binance's own load:
every market on the 100 ms cadence of ``@depth@100ms``, sending in ``k^-0.15`` of its windows with
tens of levels an event (~15,100 events/s in all); ``venue-max`` sends every market in every window
(40,260 events/s). ``--activity`` scales every market's rate (the replayed profiles' windows).
``--share`` subscribes that share of the markets, spread evenly over the ranks (``stack.spread``),
so it asks about that share of the profile's events. Ladder runs whole: the control plane, two
ingest nodes, one read worker (``--workers``) and one Valkey. A tenant subscribes every market with
2 replicas in two calls (``POST /v1/subscriptions/bulk``, one per exchange), the control plane
places the 8052 replicas (one of every book per node), and the nodes sync them inside the venue's
weight budget (20 levels a side: spot snapshots of 100 levels and futures ones of 50 cost the least
weight).

Then, for ``--seconds`` (300, after ``WARM_UP_S`` uncounted at the same rate while the read
generator opens its connections), everything runs at once:

- random reads, ``GET /v1/books/{exchange}/{market}?depth=20`` of a book drawn at random among all
  4026 for every request, at a fixed arrival rate (``--read-rate``, 5000 req/s) from the open-loop
  generator of :mod:`bench.arrivals` (its own process);
- 50 WebSocket streams (``/v1/stream``) of the 25 busiest spot and 25 busiest futures books; for
  each message that carries a new ``update_id``, receive time minus its ``ingest_time`` (the
  moment the node read the frame) is the ingest -> subscriber latency. The streams are received
  in a process of their own (:func:`watch_streams`), so that this process's other work (starting
  generators, summing their outcomes, the truth checks) never delays a receive time;
- twice a second, a random book is read from Ladder and compared with the venue's truth at the
  same ``update_id`` (``/_fake/book``): every level served must be the venue's, and a side may
  be shorter than 20 levels only when the answer says ``truncated``;
- every second, the nodes' own counts of synced replicas.

Then the capacity: the same random reads, everything else still live, at rising rates (x1.2 a
step from ``--read-rate``, ``--step-seconds`` each, after ``WARM_UP_S`` at the step's rate that
are not counted: a new generator process opens its connections meanwhile) until p99 reaches 25 ms
or a request fails; the capacity is the highest rate that kept p99 under 25 ms with no failure.
(If ``--read-rate`` already fails, the steps go down instead.)

CPU seconds per second are per Ladder process kind (ingest nodes, read workers, the control plane,
the store) and, apart, the venue's own; the load generators (the arrivals process, this process's
streams and checks) are left out, but they share the two cores. The venue runs at a lower priority
(``--venue-nice``): it stands for Binance, whose machines are not this one. Beside them: the events
the venue really made against the profile's rate (a run counts only if it made nearly all of them),
how far behind the venue the streamed (busiest) books ran (a node reads a frame
``ingest_time - event_time`` after the venue made it, the venue's own wait for a core included), the
fewest replicas any node held and the oldest node heartbeat seen every second (the control plane
judges a node dead past ``LADDER_NODE_TIMEOUT_MS``), the CPU per 1000 books the profile costs, and
the CPU time the host took from the machine's cores (a VM's steal, in all and at most in one second:
while the host holds them every process waits, which shows as a window of late answers).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import os
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import aiohttp
import orjson

from bench import arrivals, forked, stack
from bench.arrivals import Outcome
from bench.harness import EXCHANGES, Bench, cpu_seconds, run, stolen_seconds
from bench.report import Report, at_least, below, percentiles
from bench.stack import VENUE_OF, Stack
from bench.sync import rss_kib, venue_stats
from book_store.schema import node_stats_key
from control_plane.stores.redis import RedisControlStore
from ladder_process.cli import HelpFormatter
from ladder_process.clock import now_ms
from ladder_process.tasks import cancel_and_wait

DEPTH = 20
STREAMS_PER_EXCHANGE = 25
READ_P99_MS = 25.0
STREAM_P99_MS = 10.0
CHECKS_PER_S = 2.0
STEP = 1.2
WARM_UP_S = 3.0
"""The sustained phase and each capacity step first run this long at their rate, uncounted (their
generator is a new process, opening its connections)."""
STREAMS_CLOSE_S = 15.0
"""How long the streams' receiver waits for its WebSockets to close before it sends what it got."""
RECEIVER_TICK_S = 0.01
"""The streams' receiver times its own lateness on a tick this often."""
TASKS_STOP_S = 10.0
"""How long the truth checks and the sync watch may take to stop once cancelled."""
READ_WORKERS = 1
"""Read workers by default, as ``ladder up`` and the chart run them. Every worker follows every
change of every book it caches, so on two cores shared with two ingest nodes a second worker costs
more in following than it gives in reads (one worker serving 5000 reads/s and following half of
Binance uses under half a core)."""
VENUE_NICE = 10
"""The fake venue's niceness. It stands for Binance, whose machines are not Ladder's: on this box it
takes the cores Ladder leaves, instead of holding a core a read worker or a node was woken to use.
What it makes is still measured against what its profile asks (``MADE_SHARE``)."""
MADE_SHARE = 0.98
"""A run counts only if the venue made at least this share of the events its profile asks: a venue
starved of cores would make a lighter load look held."""


StreamSample = tuple[float, float, float, float]
"""(receive time, ingest -> subscriber ms, of which ingest -> publish ms, venue -> ingest ms) of
one stream message."""


@dataclass
class Live:
    """What the streams, the truth checks and the sync watch saw, tagged by phase."""

    phases: list[tuple[str, float]] = field(default_factory=lambda: [("sync", 0.0)])
    """Each phase and the wall-clock time it began, to sort the stream samples into."""
    stream_ms: dict[str, list[float]] = field(default_factory=dict)
    node_ms: dict[str, list[float]] = field(default_factory=dict)
    """Per phase, the node's part of each stream latency: publish_time - ingest_time."""
    behind_ms: dict[str, list[float]] = field(default_factory=dict)
    """Per phase, how far behind the venue the node read each streamed event: ingest_time - event_time."""
    stream_times: list[tuple[float, float]] = field(default_factory=list)
    """(seconds since the sustained phase began, latency ms) of every stream message, for the plot."""
    receiver_late_ms: dict[str, list[float]] = field(default_factory=dict)
    """Per phase, how late the streams' receiver ran each tick of its own (``RECEIVER_TICK_S``): a
    stream message waits as long for that process to run, and counts it as latency."""
    checks: int = 0
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    check_errors: dict[str, int] = field(default_factory=dict)
    synced_min: dict[str, int] = field(default_factory=dict)
    """Per exchange, the fewest replicas any node reported synced during the sustained phase."""
    synced_times: list[float] = field(default_factory=list)
    synced_counts: dict[str, list[int]] = field(default_factory=dict)
    replicas_min: dict[str, int] = field(default_factory=dict)
    """Per exchange, the fewest replicas any node kept during the sustained phase (a node judged
    dead, or a replica moved off a node, shows here)."""
    heartbeat_age_max_ms: int = 0
    """The oldest node heartbeat the control plane's registry held at any look, sustained phase."""
    stolen_max_s: float = 0.0
    """The most CPU time the host took from the machine's cores in any second, sustained phase."""
    started: float = 0.0

    @property
    def phase(self) -> str:
        return self.phases[-1][0]

    def enter(self, phase: str) -> None:
        self.phases.append((phase, time.time()))

    def phase_at(self, at: float) -> str:
        """The phase that wall-clock time ``at`` falls in."""
        return self.phases[bisect.bisect_right([start for _, start in self.phases], at) - 1][0]

    def sort_streams(self, samples: list[StreamSample]) -> None:
        """File each sample under the phase it was received in."""
        sustained = dict(self.phases).get("sustained", 0.0)
        for received, latency, node, behind in samples:
            phase = self.phase_at(received)
            self.stream_ms.setdefault(phase, []).append(latency)
            self.node_ms.setdefault(phase, []).append(node)
            self.behind_ms.setdefault(phase, []).append(behind)
            if phase == "sustained":
                self.stream_times.append((received - sustained, latency))

    def sort_ticks(self, ticks: list[tuple[float, float]]) -> None:
        """File each of the receiver's ``(time, lateness ms)`` ticks under the phase it ran in."""
        for at, late in ticks:
            self.receiver_late_ms.setdefault(self.phase_at(at), []).append(late)


async def follow_stream(
    http: aiohttp.ClientSession, url: str, key: str, exchange: str, market: str,
    samples: list[StreamSample],
) -> None:  # fmt: skip
    url = url.replace("http://", "ws://") + f"/v1/stream?exchange={exchange}&market={market}&depth={DEPTH}"
    last = -1
    async with http.ws_connect(url, headers={"X-API-Key": key}, max_msg_size=0) as ws:
        async for message in ws:
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            received = time.time()
            book = orjson.loads(message.data)
            update_id = book.get("update_id", -1)
            if update_id == last or book.get("status") != "synced":
                continue  # a republish of a quiet book carries no new event
            last = update_id
            ingest_time = book["ingest_time"]
            behind = ingest_time - book["event_time"] if book.get("event_time") is not None else 0.0
            samples.append(
                (received, received * 1000 - ingest_time, book["publish_time"] - ingest_time, behind)
            )


async def _tick(ticks: list[tuple[float, float]]) -> None:
    """Every ``RECEIVER_TICK_S``, how late this process's loop woke: how long a message that
    arrived meanwhile waited for it, beside Ladder's part."""
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + RECEIVER_TICK_S
        await asyncio.sleep(RECEIVER_TICK_S)
        ticks.append((time.time(), max(0.0, (loop.time() - due) * 1000)))


def _receive_streams(url: str, key: str, books: list[tuple[str, str]], control: Connection) -> None:
    async def follow_all() -> None:
        samples: list[StreamSample] = []
        ticks: list[tuple[float, float]] = []
        async with aiohttp.ClientSession() as http:
            tasks = [asyncio.create_task(follow_stream(http, url, key, e, m, samples)) for e, m in books]
            tasks.append(asyncio.create_task(_tick(ticks)))
            await asyncio.to_thread(control.recv)  # the bench says stop
            for task in tasks:
                task.cancel()
            if tasks:  # a stream that does not close in time keeps what it received
                await asyncio.wait(tasks, timeout=STREAMS_CLOSE_S)
            control.send((samples, ticks))

    asyncio.run(follow_all())


@contextlib.asynccontextmanager
async def watch_streams(st: Stack, books: list[tuple[str, str]], live: Live) -> AsyncIterator[None]:
    """Follow ``books``' streams from a process of their own; on the way out, file what it
    received under ``live``'s phases (RuntimeError if that process died or does not answer)."""
    process, control = forked.start(_receive_streams, st.read_url, st.key, books)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):  # gone already: receive says how
            control.send("stop")
        # It closes its streams (STREAMS_CLOSE_S at most), then sends what it received.
        samples: list[StreamSample]
        ticks: list[tuple[float, float]]
        samples, ticks = await asyncio.to_thread(
            forked.receive, process, control, 2 * STREAMS_CLOSE_S, "the streams' receiver"
        )
        live.sort_streams(samples)
        live.sort_ticks(ticks)


async def check_once(http: aiohttp.ClientSession, st: Stack, live: Live, rng: random.Random) -> None:
    exchange = rng.choice(list(st.books))
    market = rng.choice(st.books[exchange])
    async with http.get(f"{st.read_url}/v1/books/{exchange}/{market}?depth={DEPTH}",
                        headers={"X-API-Key": st.key}) as r:  # fmt: skip
        if r.status != 200:
            live.check_errors[f"ladder {r.status}"] = live.check_errors.get(f"ladder {r.status}", 0) + 1
            return
        book = await r.json()
    truth_url = (f"{st.venue_url}/_fake/book?venue={VENUE_OF[exchange]}&symbol={market}"
                 f"&update_id={book['update_id']}&limit={DEPTH}")  # fmt: skip
    async with http.get(truth_url) as r:
        if r.status != 200:
            live.check_errors[f"venue {r.status}"] = live.check_errors.get(f"venue {r.status}", 0) + 1
            return
        truth = await r.json()
    live.checks += 1
    for side in ("bids", "asks"):
        ours, theirs = book[side], truth[side]
        short = len(ours) < min(DEPTH, len(theirs)) and not book["truncated"]
        if ours != theirs[: len(ours)] or short:
            live.mismatches.append({"exchange": exchange, "market": market, "update_id": book["update_id"],
                                    "side": side, "ladder": ours[:3], "venue": theirs[:3]})  # fmt: skip
            return


async def check_forever(st: Stack, live: Live) -> None:
    rng = random.Random(7)
    async with aiohttp.ClientSession() as http:
        while True:
            try:
                await check_once(http, st, live, rng)
            except aiohttp.ClientError as error:
                live.check_errors[type(error).__name__] = live.check_errors.get(type(error).__name__, 0) + 1
            await asyncio.sleep(1 / CHECKS_PER_S)


async def watch_synced(st: Stack, live: Live) -> None:
    registry = RedisControlStore(st.redis)
    stolen = stolen_seconds()
    while True:
        docs = [orjson.loads(await st.redis.get(node_stats_key(n.node_id)) or b"{}") for n in st.nodes]
        live.synced_times.append(time.monotonic() - live.started)
        for exchange in EXCHANGES:
            entries = [d.get("exchanges", {}).get(exchange, {}) for d in docs]
            counts = [int(e.get("synced", 0)) for e in entries]
            live.synced_counts.setdefault(exchange, []).append(sum(counts))
            if live.phase != "sync":
                live.synced_min[exchange] = min(live.synced_min.get(exchange, 1 << 30), *counts)
                kept = [int(e.get("replicas", 0)) for e in entries]
                live.replicas_min[exchange] = min(live.replicas_min.get(exchange, 1 << 30), *kept)
        if live.phase != "sync":
            now = now_ms()
            ages = [now - node.heartbeat_at for node in await registry.list_nodes()]
            live.heartbeat_age_max_ms = max(live.heartbeat_age_max_ms, *ages, 0)
        stolen, before = stolen_seconds(), stolen
        if live.phase == "sustained":
            live.stolen_max_s = max(live.stolen_max_s, stolen - before)
        await asyncio.sleep(1.0)


def read_requests(st: Stack) -> list[bytes]:
    return [
        arrivals.request_bytes(st.read_url, f"/v1/books/{exchange}/{market}?depth={DEPTH}", st.key)
        for exchange, names in st.books.items()
        for market in names
    ]


def cpu_by_kind(pids: dict[str, list[int]]) -> dict[str, float]:
    return {kind: sum(cpu_seconds(p) for p in ps) for kind, ps in pids.items()}


async def resyncs(st: Stack) -> int:
    docs = [orjson.loads(await st.redis.get(node_stats_key(n.node_id)) or b"{}") for n in st.nodes]
    return sum(sum(d.get("replica_totals", {}).get("resyncs", {}).values()) for d in docs)  # by reason


async def capacity(
    st: Stack, live: Live, requests: list[bytes], args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Random reads at rising (or, if the first fails, falling) rates; every step's summary."""
    steps: list[dict[str, Any]] = []
    rate, direction = args.read_rate, 0
    for _ in range(args.max_steps):
        live.enter(f"capacity warm-up {rate:.0f}")
        counted = asyncio.get_running_loop().call_later(WARM_UP_S, live.enter, f"capacity {rate:.0f}")
        stages = [arrivals.steady(rate, WARM_UP_S), arrivals.steady(rate, args.step_seconds)]
        outcome = await arrivals.run(st.read_url, requests, stages)
        counted.cancel()
        live.enter("between steps")
        got = outcome.select(stage=1)
        ok = got.p99_ms < READ_P99_MS and got.failed == 0
        steps.append({"rate": rate, "ok": ok, **got.row(), "phase": f"capacity {rate:.0f}",
                      "generator_cpu_s_per_s": outcome.generator_cpu_s / outcome.seconds})  # fmt: skip
        print(f"capacity step {rate:,.0f} req/s: p99 {got.p99_ms:.1f} ms, failed {got.failed}, "
              f"send delay p99 {got.send_delay_p99_ms:.1f} ms -> {'ok' if ok else 'over'}",
              flush=True)  # fmt: skip
        direction = direction or (1 if ok else -1)
        if (direction > 0 and not ok) or (direction < 0 and ok):
            break
        rate = rate * STEP if direction > 0 else rate / STEP
    return steps


async def measure(args: argparse.Namespace, report: Report) -> dict[str, Any]:
    venue_args = ["--profile", args.profile, "--rate", str(args.rate * args.activity),
                  "--rate-skew", str(args.rate_skew), "--levels", "200"]  # fmt: skip
    live = Live()
    with Bench() as bench:
        if args.node_timeout_ms:
            bench.env["LADDER_NODE_TIMEOUT_MS"] = str(args.node_timeout_ms)
        st = stack.start(bench, args.markets, 2, args.workers, venue_args)
        os.setpriority(os.PRIO_PROCESS, st.venue_pid(), args.venue_nice)
        async with aiohttp.ClientSession() as http:
            started = time.monotonic()
            await stack.subscribe(st, args.markets, 2, DEPTH, args.share)
            subscribed_s = time.monotonic() - started
            print(f"subscribed {' + '.join(str(len(n)) for n in st.books.values())} markets (spot + "
                  f"futures) x 2 replicas in {subscribed_s:.1f} s; syncing", flush=True)  # fmt: skip
            progress = await stack.wait_synced(st, args.sync_timeout_s)
            synced_s = time.monotonic() - started
            print(f"all synced {synced_s:.0f} s after the first subscribe", flush=True)
            requests = read_requests(st)
            pids = {**st.pids(), "venue": [st.venue_pid()]}
            await arrivals.run(st.read_url, requests, [arrivals.steady(1000, 5)])  # every book read once
            streams = [(e, m) for e, names in st.books.items() for m in names[:STREAMS_PER_EXCHANGE]]
            tasks = [
                asyncio.create_task(check_forever(st, live), name="the truth checks"),
                asyncio.create_task(watch_synced(st, live), name="the sync watch"),
            ]
            try:
                async with watch_streams(st, streams, live):
                    await asyncio.sleep(3)  # streams open, first messages in
                    stages = [
                        arrivals.steady(args.read_rate, WARM_UP_S),
                        arrivals.steady(args.read_rate, args.seconds),
                    ]
                    generator = arrivals.start(st.read_url, requests, stages)
                    live.enter("sustained warm-up")
                    await asyncio.sleep(WARM_UP_S)  # the generator's first stage: it opens its connections
                    live.enter("sustained")
                    live.started = time.monotonic()
                    cpu_before = cpu_by_kind(pids)
                    stolen_before = stolen_seconds()
                    venue_before = await venue_stats(http, st.venue_url)
                    resyncs_before = await resyncs(st)
                    net_before = await st.redis.info("stats")
                    outcome: Outcome = await arrivals.collect(generator)
                    elapsed = time.monotonic() - live.started
                    live.enter("after the sustained phase")
                    cpu = {k: (v - cpu_before[k]) / elapsed for k, v in cpu_by_kind(pids).items()}
                    stolen = (stolen_seconds() - stolen_before) / elapsed
                    rss = {kind: [rss_kib(p)[0] / 1024 for p in ps] for kind, ps in pids.items()}
                    memory = await st.redis.info("memory")
                    net_after = await st.redis.info("stats")
                    net = {way: (int(net_after[key]) - int(net_before[key])) / elapsed
                           for way in ("input", "output") if (key := f"total_net_{way}_bytes")}  # fmt: skip
                    venue_after = await venue_stats(http, st.venue_url)
                    resyncs_sustained = await resyncs(st) - resyncs_before
                    steps = await capacity(st, live, requests, args)
                for step in steps:
                    step["stream_p99_ms"] = percentiles(live.stream_ms.get(step.pop("phase"), []), (99,)).get(
                        "p99", 0.0
                    )
            finally:
                running = await cancel_and_wait(
                    tasks, TASKS_STOP_S
                )  # their store calls can lose one cancellation
                if running:
                    names = ", ".join(sorted(task.get_name() for task in running))
                    raise RuntimeError(f"{names} still running {TASKS_STOP_S:g} s after it was cancelled")
        await st.redis.aclose()
    return {
        "subscribed_s": subscribed_s, "synced_s": synced_s, "progress": progress, "outcome": outcome,
        "cpu": cpu, "stolen": stolen, "rss": rss, "store_memory": memory, "store_net": net,
        "venue_before": venue_before, "venue_after": venue_after,
        "resyncs": resyncs_sustained, "steps": steps, "live": live, "elapsed": elapsed, "books": st.books,
    }  # fmt: skip


def summarize(report: Report, m: dict[str, Any], args: argparse.Namespace) -> None:
    outcome: Outcome = m["outcome"]
    live: Live = m["live"]
    reads = outcome.select(stage=1)
    stream = percentiles(live.stream_ms.get("sustained", []), (50, 99))
    node_part = percentiles(live.node_ms.get("sustained", []), (50, 99))
    books = sum(len(names) for names in m["books"].values())
    venue_after, venue_before = m["venue_after"], m["venue_before"]
    refused = int(venue_after.get("http_429", 0)) + int(venue_after.get("http_418", 0))
    event_rate = sum(
        float(v.get("active_rate", 0)) for k, v in venue_after["venues"].items() if k in VENUE_OF.values()
    )
    events = int(venue_after["events_generated"]) - int(venue_before["events_generated"])
    report.figure(f"books x 2 replicas synced after the bulk subscribe ({books} books)", m["synced_s"], "s",
                  reference="UBDCC: 25 minutes for 4026 books")  # fmt: skip
    for exchange in EXCHANGES:
        held = len(m["books"][exchange])
        report.figure(f"{exchange}: fewest replicas a node held synced during the run",
                      live.synced_min.get(exchange, 0), "", at_least(held, ""))  # fmt: skip
        report.figure(f"{exchange}: fewest replicas a node kept (none moved off a node)",
                      live.replicas_min.get(exchange, 0), "", at_least(held, ""))  # fmt: skip
    report.figure("oldest node heartbeat in the registry at any look (judged dead past the node timeout)",
                  live.heartbeat_age_max_ms, "ms", below(args.node_timeout_ms or 3000, "ms"))  # fmt: skip
    report.figure("resyncs during the sustained phase", m["resyncs"], "")
    report.figure("HTTP 429 and 418 answers (whole run)", refused, "", below(1, ""))
    report.figure(f"mismatches against the venue's truth ({live.checks} checks)", len(live.mismatches), "",
                  below(1, ""))  # fmt: skip
    report.figure(f"random reads asked (a book of {books} at random)", args.read_rate, "req/s")
    report.figure("random reads p50", reads.p50_ms, "ms")
    report.figure("random reads p99", reads.p99_ms, "ms", below(READ_P99_MS, "ms"))
    report.figure("random reads failed (no answer, or status >= 400)", reads.failed, "", below(1, ""))
    report.figure("generator send delay p99 (its own lateness)", reads.send_delay_p99_ms, "ms")
    report.figure("stream ingest -> subscriber p50 (50 streams)", stream.get("p50", 0.0), "ms")
    report.figure("stream ingest -> subscriber p99 (50 streams)", stream.get("p99", 0.0), "ms",
                  below(STREAM_P99_MS, "ms"))  # fmt: skip
    report.figure("of which in the node, ingest -> publish_time p50", node_part.get("p50", 0.0), "ms")
    report.figure("of which in the node, ingest -> publish_time p99", node_part.get("p99", 0.0), "ms")
    late = percentiles(live.receiver_late_ms.get("sustained", []), (99,))
    report.figure(f"the streams' receiver's own lateness p99 (a tick every {RECEIVER_TICK_S * 1000:g} ms)",
                  late.get("p99", 0.0), "ms")  # fmt: skip
    ok_steps = [s["rate"] for s in m["steps"] if s["ok"]]
    report.figure(f"capacity: highest random-read rate with p99 < {READ_P99_MS:g} ms, everything live",
                  max(ok_steps) if ok_steps else None, "req/s")  # fmt: skip
    report.figure(f"venue events per second the profile asks ({args.profile}, subscribed markets)",
                  event_rate, "events/s")  # fmt: skip
    made = events / m["elapsed"]
    report.figure("venue events made during the sustained phase, per second", made, "events/s",
                  at_least(round(MADE_SHARE * event_rate), "events/s"))  # fmt: skip
    behind = percentiles(live.behind_ms.get("sustained", []), (50, 99))
    for p in ("p50", "p99"):
        report.figure(f"streamed (busiest) books: behind the venue when read, event -> ingest {p}",
                      behind.get(p, 0.0), "ms")  # fmt: skip
    report.figure("streamed (busiest) books: behind the venue at worst", behind.get("max", 0.0), "ms")
    cpu = dict(m["cpu"])
    venue_cpu = cpu.pop("venue", 0.0)
    for kind in ("ingest", "read", "control", "store"):
        report.figure(f"CPU s/s: {kind} ({len(m['rss'][kind])} processes)", cpu.get(kind, 0.0), "s/s")
    ladder = sum(cpu.values())
    report.figure("CPU s/s: Ladder in all", ladder, "s/s", reference="the machine has 2")
    report.figure("CPU s/s: the fake venue", venue_cpu, "s/s")
    report.figure("venue CPU per event made", 1e6 * venue_cpu / made if made else None, "us")
    per_1000 = ladder / (books / 1000) if books else 0.0
    report.figure("Ladder CPU per 1000 books (x 2 replicas) at this profile", per_1000, "cores")
    report.figure("cores the whole profile would need (4026 books, at this cost per book)", 4.026 * per_1000,
                  "cores")  # fmt: skip
    report.figure("CPU s/s: load generator (reads)", outcome.generator_cpu_s / outcome.seconds, "s/s")
    report.figure("CPU s/s the host took from the machine's cores (steal; every process waits)",
                  m["stolen"], "s/s")  # fmt: skip
    report.figure("the most the host took in any one second", live.stolen_max_s, "s")
    for kind, values in m["rss"].items():  # the venue's included
        report.figure(f"RSS: {kind} (MiB, all its processes)", sum(values), "MiB")
    report.figure("store used_memory", int(m["store_memory"]["used_memory"]) / 2**20, "MiB")
    net = m["store_net"]
    for way, what in (
        ("input", "store network in (writes)"),
        ("output", "store network out (change messages, reads)"),
    ):
        report.figure(f"{what}", net[way] / 1e6, "MB/s")
        report.figure(f"{what} per replica-event", net[way] / (2 * made) if made else None, "B")
    report.figure("store bytes per book replica", int(m["store_memory"]["used_memory"]) / (2 * books), "B")
    report.table("Sustained phase", ["figure", "value"], [
        ["reads sent", reads.sent], ["statuses", reads.statuses], ["timeouts", reads.timeouts],
        ["socket errors", reads.socket_errors], ["read p95 ms", reads.p95_ms], ["read max ms", reads.max_ms],
        ["stream messages with a new update", len(live.stream_ms.get("sustained", []))],
        ["truth checks", live.checks], ["check errors", live.check_errors],
        ["seconds", m["elapsed"]],
    ])  # fmt: skip
    report.table("Capacity steps (everything live)",
                 ["asked req/s", "sent", "p50 ms", "p99 ms", "failed", "send delay p99 ms", "stream p99 ms",
                  "generator CPU s/s", "p99 < 25 ms, no failure"],
                 [[s["rate"], s["sent"], s["p50_ms"], s["p99_ms"], s["failed"], s["send_delay_p99_ms"],
                   s["stream_p99_ms"], s["generator_cpu_s_per_s"], "yes" if s["ok"] else "no"]
                  for s in m["steps"]])  # fmt: skip
    report.table("Memory per process (MiB)", ["kind", "RSS per process"],
                 [[k, ", ".join(f"{v:.0f}" for v in vs)] for k, vs in m["rss"].items()])  # fmt: skip
    if live.mismatches:
        report.table("Mismatches (first 10)", ["exchange", "market", "update_id", "side", "ladder", "venue"],
                     [[x["exchange"], x["market"], x["update_id"], x["side"], x["ladder"], x["venue"]]
                      for x in live.mismatches[:10]])  # fmt: skip
    progress = m["progress"]
    report.line_plot("synced_over_time.png", "Synced replicas after the bulk subscribe",
                     "seconds since the books were assigned", "synced replicas",
                     {e: (progress.times, counts) for e, counts in progress.synced.items()})  # fmt: skip
    windows = outcome.windows(5.0)
    by_window: dict[int, list[float]] = {}
    for t, latency in live.stream_times:
        by_window.setdefault(int(t // 5), []).append(latency)
    stream_p99 = [percentiles(by_window[k], (99,))["p99"] for k in sorted(by_window)]
    report.line_plot(
        "latency_over_time.png",
        "Sustained phase: p99 per 5 s window",
        "seconds since the sustained phase began",
        "ms",
        {
            "random reads p99": ([w[0] - WARM_UP_S for w in windows], [w[2].p99_ms for w in windows]),
            "stream p99": ([5.0 * k for k in sorted(by_window)], stream_p99),
        },
        logy=True,
        hlines={"read target 25 ms": READ_P99_MS, "stream target 10 ms": STREAM_P99_MS},
    )
    rates = [s["rate"] for s in m["steps"]]
    report.line_plot(
        "capacity.png",
        "Random reads: p99 against the asked rate, everything live",
        "asked req/s",
        "ms",
        {"p99": (rates, [s["p99_ms"] for s in m["steps"]])},
        hlines={"25 ms": READ_P99_MS},
    )
    report.note(
        f"Venue: {args.markets} spot + {args.markets} futures markets, profile {args.profile}: "
        + (
            f"the k-th of each at {args.rate * args.activity:g} x k^-{args.rate_skew:g} updates/s "
            if args.profile == "skewed"
            else f"{args.rate * args.activity:g} windows/s, the k-th sending in its profile's share of them "
        )
        + f"(--rate {args.rate:g} x --activity {args.activity:g}), 200 levels a side; "
        f"{books} books subscribed (--share {args.share:g}, spread over the ranks). "
        f"Books kept {DEPTH} levels deep, 2 replicas, "
        f"{args.workers} read worker{'s' if args.workers != 1 else ''}; LADDER_NODE_TIMEOUT_MS "
        f"{args.node_timeout_ms or 'default (3000)'}."
    )
    report.note(
        f"Reads: GET /v1/books/{{exchange}}/{{market}}?depth={DEPTH}, a book drawn at random among all for "
        "each request, open-loop (bench/arrivals.py), latency from each request's due time. Streams: "
        f"/v1/stream of the {STREAMS_PER_EXCHANGE} busiest books of each exchange; the latency counts "
        "only messages with a new update_id (ingest_time is whole milliseconds: up to 1 ms high)."
    )
    report.note(
        "CPU is per Ladder process kind (ingest nodes, read workers with their parent, control plane, "
        "store); the venue, the read generator, the streams' receiver and this process (truth checks) "
        f"share the cores, the venue at nice {args.venue_nice} (--venue-nice): it stands for Binance's "
        "machines and takes the cores Ladder leaves, and what it made is held to "
        f"{MADE_SHARE:.0%} of what its profile asks."
    )
    report.data.update(
        reads=reads.row(), stream=stream, stream_node_part=node_part, steps=m["steps"], cpu=cpu, rss=m["rss"],
        store_memory={k: m["store_memory"][k] for k in ("used_memory", "used_memory_peak")},
        venue_before=venue_before, venue_after=venue_after, mismatches=live.mismatches,
        check_errors=live.check_errors, synced_min=live.synced_min,
        sync_timeline={"seconds": progress.times, **progress.synced},
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(prog="ladder bench binance", description=__doc__,
                                     formatter_class=HelpFormatter)  # fmt: skip
    parser.add_argument("--markets", type=int, default=2013, help="markets per exchange (spot and futures)")
    parser.add_argument("--seconds", type=float, default=300.0, help="length of the sustained phase")
    parser.add_argument("--read-rate", type=float, default=5000.0, help="random reads per second, sustained")
    parser.add_argument("--step-seconds", type=float, default=15.0, help="length of each capacity step")
    parser.add_argument("--max-steps", type=int, default=8, help="capacity steps at most")
    parser.add_argument(
        "--rate", type=float, default=10.0, help="updates/s of each exchange's busiest market"
    )
    parser.add_argument("--rate-skew", type=float, default=0.8, help="the k-th market runs at rate x k^-SKEW")
    parser.add_argument("--activity", type=float, default=1.0, help="scales every market's rate")
    parser.add_argument("--profile", choices=("skewed", "binance-real", "venue-max"), default="skewed",
                        help="the venue's activity profile (fake_venue/market/profiles.py)")  # fmt: skip
    parser.add_argument("--share", type=float, default=1.0,
                        help="share of the markets subscribed, spread evenly over the ranks")  # fmt: skip
    parser.add_argument("--workers", type=int, default=READ_WORKERS, help="read worker processes")
    parser.add_argument(
        "--venue-nice", type=int, default=VENUE_NICE, help="the fake venue's niceness (0: as Ladder's)"
    )
    parser.add_argument(
        "--sync-timeout-s", type=float, default=900.0, help="give up if not all synced by then"
    )
    parser.add_argument(
        "--node-timeout-ms",
        type=int,
        default=0,
        help="LADDER_NODE_TIMEOUT_MS for every process (0: the default, 3000)",
    )
    args = parser.parse_args()
    name = "binance" if args.profile == "skewed" else args.profile  # bench/results/<name>/
    report = Report(name, f"All of Binance on one box ({args.profile}, share {args.share:g}): "
                          "books x 2 replicas, read, streamed, checked")  # fmt: skip

    async def go() -> None:
        summarize(report, await measure(args, report), args)
        print(report.write().read_text())

    run(go())


if __name__ == "__main__":
    main()
