"""``ladder bench ingest``: diff events one ingest node applies and publishes per second of one core.

Theory of operation
-------------------
The fake venue cannot make updates as fast as a node applies them, so the benchmark records a
burst from it once (:mod:`bench.replay`: a snapshot of every book, then ``--frames`` updates per
book) and serves the recording to a real ingest node through the same protocol: the node
subscribes, fetches its snapshots, syncs every book on one primed frame, and then receives all
the other frames, books interleaved, as fast as the socket takes them. Every event goes the
whole way: parse, sync check, book update, per-loop-turn publish of the trimmed snapshot,
pipelined write and ``PUBLISH`` to Valkey.

The benchmark watches the node's own counters (its metrics endpoint) until every event is
applied and reads the node's CPU time from ``/proc``: *events per CPU-second* is the capacity of
one core, whatever else the machine was doing. At the end every book must be synced at the last
recorded update id, or the run does not count.

Side by side, in this process: how fast the same machine only *parses* the same frames (the
venue parser, nothing else), a ceiling no ingest path can pass.

Two cases, each on its own recording: *shallow*, ``--levels``-deep venue books published
``--depth`` levels a side (the figure with the 20 000 target), and *deep*, ``--deep-levels``-deep
venue books with a third of every update's changes at a random depth, published ``--deep-depth``
levels a side (a head of 100 levels on every update, the deep snapshot at its bounded rate). The
deep case must keep at least 0.7 of the shallow case's events per CPU-second; it also reports what
it cost the store, as the bytes the node sent it (its ``total_net_input_bytes``) per event and per
deep book per second of the blast.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from dataclasses import dataclass

import aiohttp
import redis.asyncio as redis

from bench import harness
from bench.harness import (
    Bench,
    Node,
    cpu_seconds,
    scrape,
    store_input_bytes,
    sync_timeout_s,
    total,
    trading_pairs,
    wait_synced,
)
from bench.replay import Recording, ReplayVenue, record
from bench.report import Report, at_least, median
from book_store.codec import BookStatus
from book_store.reader import BookReader
from book_store.schema import BookKey
from ingest_nodes.venues.binance.parse import parse_spot_frame
from ladder_cli.main import fake_venue_env
from ladder_process.cli import HelpFormatter

EXCHANGE = "binance.com"
TARGET = 20_000.0
DEEP_RATIO_TARGET = 0.7
DEEP_SHARE = 0.3
NODE_SETTINGS = {
    # The replay is silent between the priming frame and the blast, while 5000-level snapshots wait
    # minutes for their weight: no stale marks meanwhile.
    "stale_after_ms": "3600000",
    # The replay can only serve the snapshot it recorded, which a refresh of the trusted window (due
    # at blast speed far sooner than at the venue's) would refetch in vain: no weight for them.
    "background_weight_share": "0.0001",
}


@dataclass
class Run:
    events: int
    seconds: float
    cpu_seconds: float
    sender_seconds: float
    snapshots: float
    resyncs: float
    wrong_books: int
    timeline: list[tuple[float, float]]
    store_bytes: int = 0
    ceiling: float = 0.0
    """Frames per CPU-second this process parsed just before the run: the machine's speed then."""
    steal_s: float = 0.0
    """CPU time the hypervisor took from this machine's CPUs during the blast (``/proc/stat``)."""

    @property
    def per_core(self) -> float:
        return self.events / self.cpu_seconds if self.cpu_seconds else 0.0

    @property
    def per_second(self) -> float:
        return self.events / self.seconds

    @property
    def per_ceiling(self) -> float:
        return self.per_core / self.ceiling if self.ceiling else 0.0


def steal_seconds() -> float:
    """CPU seconds stolen by the hypervisor from all CPUs so far (the ``steal`` column of ``/proc/stat``)."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


async def blast(
    http: aiohttp.ClientSession, client: redis.Redis, node: Node, replay: ReplayVenue, expected: int
) -> Run:
    """Send the recording's remaining frames; watch the node until it has applied all of them."""
    before = await scrape(http, node.metrics_url)
    stored_before = await store_input_bytes(client)
    start_events = total(before, "ladder_ingest_events_total")
    cpu = cpu_seconds(node.pid)
    stolen = steal_seconds()
    started = time.monotonic()
    sender = asyncio.create_task(replay.blast())
    sender_seconds = 0.0
    timeline = [(0.0, 0.0)]
    while True:
        await asyncio.sleep(0.1)
        samples = await scrape(http, node.metrics_url)
        done = total(samples, "ladder_ingest_events_total") - start_events
        elapsed = time.monotonic() - started
        timeline.append((elapsed, done))
        if sender.done() and not sender_seconds:
            sender_seconds = elapsed
        if done >= expected:
            break
        if elapsed > 300:
            raise TimeoutError(f"the node applied {done:.0f} of {expected} events in 300 s")
    seconds = time.monotonic() - started
    used = cpu_seconds(node.pid) - cpu
    stolen = steal_seconds() - stolen
    stored = await store_input_bytes(client) - stored_before
    sent = await sender
    return Run(
        events=sent,
        seconds=seconds,
        cpu_seconds=used,
        sender_seconds=sender_seconds or seconds,
        snapshots=total(samples, "ladder_ingest_published_snapshots_total")
        - total(before, "ladder_ingest_published_snapshots_total"),
        resyncs=total(samples, "ladder_ingest_resyncs_total") - total(before, "ladder_ingest_resyncs_total"),
        wrong_books=0,
        timeline=timeline,
        store_bytes=stored,
        steal_s=stolen,
    )


async def wrong_books(redis_url: str, recording: Recording) -> int:
    """Books not stored as synced at the last recorded update id."""
    client = redis.Redis.from_url(redis_url)
    reader = BookReader(client)
    wrong = 0
    for symbol in recording.frames:
        for _ in range(50):  # the last write may still be on its way
            snap = (await reader.replicas(BookKey(EXCHANGE, symbol))).get(1)
            if (
                snap
                and snap.status is BookStatus.SYNCED
                and snap.update_id == recording.last_update_id(symbol)
            ):
                break
            await asyncio.sleep(0.02)
        else:
            wrong += 1
    await client.aclose()
    return wrong


def parse_ceiling(recording: Recording) -> float:
    """Frames per CPU-second this process parses with the venue parser alone."""
    frames = [f for fs in recording.frames.values() for f in fs]
    started = time.process_time()
    for frame in frames:
        parse_spot_frame(frame, 0)
    return len(frames) / (time.process_time() - started)


async def measure(args: argparse.Namespace, report: Report) -> None:
    venues = {  # recording: venue levels, share of changes at depth, snapshot limit recorded
        "shallow": (args.levels, 0.0, 1000),
        "deep": (args.deep_levels, DEEP_SHARE, 5000),
    }
    cases = {  # case: recording, levels a side published
        "shallow": ("shallow", args.depth),
        "deep books, shallow publish": ("deep", args.depth),
        "deep": ("deep", args.deep_depth),
    }
    runs: dict[str, list[Run]] = {}
    ceilings: dict[str, float] = {}
    levels: dict[str, float] = {}
    with Bench() as bench:
        client = redis.Redis.from_url(bench.redis_url)
        async with aiohttp.ClientSession() as http:
            replays: dict[str, tuple[ReplayVenue, str, Recording, list[str]]] = {}
            for name, (venue_levels, deep_share, limit) in venues.items():
                venue = bench.start_fake_venue(
                    *("--spot-symbols", str(args.pairs), "--futures-symbols", "0", "--alpaca-symbols", "0"),
                    *("--rate", "0", "--levels", str(venue_levels), "--deep-share", str(deep_share)),
                )
                pairs = await trading_pairs(http, venue, args.pairs)
                print(f"{name}: recording {args.frames} frames of {len(pairs)} books ...", flush=True)
                recording = await record(http, venue, pairs, args.frames, limit)
                ceilings[name] = parse_ceiling(recording)
                levels[name] = recording.levels_per_frame()
                replay = ReplayVenue(recording)
                replays[name] = (replay, await replay.start(), recording, pairs)
            for run in range(args.runs):  # the cases alternate, so that a slow spell hits them alike
                for case, (name, depth) in cases.items():
                    replay, url, recording, pairs = replays[name]
                    replay.reset()
                    bench.env.update(fake_venue_env(url))
                    node = bench.start_node("bench-ingest", exchanges=EXCHANGE, **NODE_SETTINGS)
                    await bench.assign(node, EXCHANGE, pairs, depth)
                    await replay.wait_subscribed(len(pairs))
                    await replay.prime()
                    await wait_synced(http, node, len(pairs), sync_timeout_s(EXCHANGE, len(pairs), depth))
                    ceiling = parse_ceiling(recording)  # how fast the machine is right now
                    result = await blast(http, client, node, replay, (args.frames - 1) * len(pairs))
                    result.ceiling = ceiling
                    result.wrong_books = await wrong_books(bench.redis_url, recording)
                    runs.setdefault(case, []).append(result)
                    cpu_pct = 100 * result.cpu_seconds / result.seconds
                    print(
                        f"{case} run {run + 1}: {result.per_core:,.0f} events per CPU-second, "
                        f"{result.per_second:,.0f} events/s, node CPU {cpu_pct:.0f} %, "
                        f"{result.store_bytes / result.events:,.0f} store bytes per event, "
                        f"{result.wrong_books} wrong books; parse-only {ceiling:,.0f} frames per CPU-second "
                        f"just before (ratio {result.per_ceiling:.3f}), {result.steal_s:.2f} s stolen",
                        flush=True,
                    )
                    bench.stop_node(node)
            for replay, *_ in replays.values():
                await replay.stop()
        await client.aclose()
    _write(report, runs, ceilings, levels, args)


def _valid(runs: list[Run]) -> list[Run]:
    return [r for r in runs if r.wrong_books == 0 and r.resyncs == 0]


def _write(
    report: Report,
    runs: dict[str, list[Run]],
    ceilings: dict[str, float],
    levels: dict[str, float],
    args: argparse.Namespace,
) -> None:
    per_core = {case: median([r.per_core for r in _valid(rs)]) for case, rs in runs.items()}
    report.figure(
        "applied and published events per CPU-second (one core)",
        per_core["shallow"],
        "events/s",
        at_least(TARGET, "events/s"),
    )
    report.figure("events/s, wall clock", median([r.per_second for r in _valid(runs["shallow"])]), "events/s")
    if per_core["shallow"] is not None:
        report.figure(
            "per core / parse-only ceiling of the same frames", per_core["shallow"] / ceilings["shallow"], "x"
        )
    report.figure(
        f"deep books ({args.deep_levels} levels, published {args.deep_depth} a side): events per CPU-second",
        per_core["deep"],
        "events/s",
    )
    if per_core["deep"] is not None and per_core["shallow"]:
        report.figure(
            "deep / shallow events per CPU-second",
            per_core["deep"] / per_core["shallow"],
            "x",
            at_least(DEEP_RATIO_TARGET, "x"),
        )
    shallow_publish = per_core["deep books, shallow publish"]
    if shallow_publish is not None and per_core["shallow"] and per_core["deep"] is not None:
        report.figure(
            f"of which the books themselves: deep books published {args.depth} a side / shallow",
            shallow_publish / per_core["shallow"],
            "x",
        )
        report.figure(
            f"and publishing {args.deep_depth} levels instead of {args.depth}: deep / deep books published "
            f"{args.depth} a side",
            per_core["deep"] / shallow_publish,
            "x",
        )
    for case, case_runs in runs.items():
        valid = _valid(case_runs)
        report.figure(
            f"{case}: store bytes written per event", median([r.store_bytes / r.events for r in valid]), "B"
        )
    deep_valid = _valid(runs["deep"])
    report.figure(
        "deep: store bytes written per deep book per second of the blast",
        median([r.store_bytes / r.seconds / args.pairs for r in deep_valid]),
        "B/s",
    )
    total_runs = sum(len(rs) for rs in runs.values())
    valid_runs = sum(len(_valid(rs)) for rs in runs.values())
    report.figure(
        "runs with every book synced at the last update id",
        valid_runs,
        f"of {total_runs}",
        at_least(total_runs, f"of {total_runs}"),
    )
    report.table(
        "Runs",
        [
            "case",
            "run",
            "events",
            "seconds",
            "node CPU s",
            "node CPU %",
            "events per CPU-s",
            "events/s",
            "snapshots written",
            "events per snapshot",
            "store MB",
            "sender done at s",
            "resyncs",
            "wrong books",
            "parse-only frames per CPU-s before",
            "per core / parse-only",
            "CPU s stolen",
        ],
        [
            [
                case,
                i + 1,
                r.events,
                r.seconds,
                r.cpu_seconds,
                100 * r.cpu_seconds / r.seconds,
                r.per_core,
                r.per_second,
                r.snapshots,
                r.events / max(r.snapshots, 1),
                r.store_bytes / 1e6,
                r.sender_seconds,
                r.resyncs,
                r.wrong_books,
                r.ceiling,
                r.per_ceiling,
                r.steal_s,
            ]
            for case, case_runs in runs.items()
            for i, r in enumerate(case_runs)
        ],
    )
    report.table(
        "Side by side",
        ["what", "frames per CPU-second"],
        [[f"venue parser only, this process ({case} frames)", ceiling] for case, ceiling in ceilings.items()],
    )
    report.data["levels_per_frame"] = levels
    series = {}
    for case, case_runs in runs.items():
        for i, run in enumerate(case_runs):
            xs = [t for t, _ in run.timeline[1:]]
            ys = [
                (b - a) / (tb - ta) for (ta, a), (tb, b) in zip(run.timeline, run.timeline[1:], strict=False)
            ]
            series[f"{case} run {i + 1}"] = (xs, ys)
    report.line_plot(
        "throughput_over_time.png",
        "Events applied per second during the blast",
        "seconds",
        "events/s",
        series,
        hlines={"target 20 000 events/s per core": TARGET},
    )
    report.note(
        f"{args.pairs} books, {args.frames} recorded frames each, one replica per book. Shallow: venue books "
        f"of {args.levels} levels per side, {levels['shallow']:.1f} price levels changed a frame, node "
        f"publishing {args.depth} per side. Deep: venue books of {args.deep_levels} levels per side, a "
        f"{DEEP_SHARE:.0%} share of changes at a random depth, {levels['deep']:.1f} price levels a frame, "
        f"node publishing {args.deep_depth} per side (a 100-level head every loop turn, the deep snapshot "
        "at most every depth / 2000 s). A snapshot is written per book per event-loop turn, so one snapshot "
        "carries every event of that book in the turn."
    )
    report.note("A run counts only if every book ends synced at the last recorded update id, with no resync.")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="ladder bench ingest", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=50, help="books fed to the node")
    parser.add_argument("--frames", type=int, default=1000, help="recorded frames per book")
    parser.add_argument("--levels", type=int, default=1000, help="venue book levels per side")
    parser.add_argument("--depth", type=int, default=20, help="levels per side the node publishes")
    parser.add_argument("--deep-levels", type=int, default=6000, help="venue book levels per side, deep case")
    parser.add_argument("--deep-depth", type=int, default=5000, help="levels per side published, deep case")
    parser.add_argument("--runs", type=int, default=3, help="runs of each case (the median is reported)")
    args = parser.parse_args(argv)
    report = Report("ingest", "Ingest capacity: applied and published diff events per second per core")
    harness.run(measure(args, report))
    print(f"report: {report.write()}")


if __name__ == "__main__":
    main()
