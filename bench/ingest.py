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
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass

import aiohttp
import redis.asyncio as redis

from bench import harness
from bench.harness import Bench, Node, cpu_seconds, scrape, total, trading_pairs, wait_synced
from bench.replay import Recording, ReplayVenue, record
from bench.report import Report, at_least, median
from book_store.codec import BookStatus
from book_store.keys import BookKey
from book_store.reader import BookReader
from control_plane.cli import fake_venue_env
from ingest_nodes.venues.binance.parse import parse_spot_frame

EXCHANGE = "binance.com"
TARGET = 20_000.0


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

    @property
    def per_core(self) -> float:
        return self.events / self.cpu_seconds if self.cpu_seconds else 0.0

    @property
    def per_second(self) -> float:
        return self.events / self.seconds


async def blast(http: aiohttp.ClientSession, node: Node, replay: ReplayVenue, expected: int) -> Run:
    """Send the recording's remaining frames; watch the node until it has applied all of them."""
    before = await scrape(http, node.metrics_url)
    start_events = total(before, "ladder_ingest_events_total")
    cpu = cpu_seconds(node.pid)
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
    runs: list[Run] = []
    with Bench() as bench:
        venue = bench.start_spot_venue(args.pairs, args.levels)
        async with aiohttp.ClientSession() as http:
            pairs = await trading_pairs(http, venue, args.pairs)
            print(f"recording {args.frames} frames of {len(pairs)} books ...", flush=True)
            recording = await record(http, venue, pairs, args.frames)
            ceiling = parse_ceiling(recording)
            replay = ReplayVenue(recording)
            bench.env.update(fake_venue_env(await replay.start()))
            for run in range(args.runs):
                replay.reset()
                node = bench.start_node("bench-ingest", depth_levels=str(args.depth), exchanges=EXCHANGE)
                await bench.assign(node, EXCHANGE, pairs)
                await replay.wait_subscribed(len(pairs))
                await replay.prime()
                await wait_synced(http, node, len(pairs))
                result = await blast(http, node, replay, (args.frames - 1) * len(pairs))
                result.wrong_books = await wrong_books(bench.redis_url, recording)
                runs.append(result)
                print(
                    f"run {run + 1}: {result.per_core:,.0f} events per CPU-second, {result.per_second:,.0f} "
                    f"events/s, node CPU {100 * result.cpu_seconds / result.seconds:.0f} %, "
                    f"{result.wrong_books} wrong books",
                    flush=True,
                )
                bench.stop_node(node)
            await replay.stop()
    _write(report, runs, ceiling, recording.levels_per_frame(), args)


def _write(report: Report, runs: list[Run], ceiling: float, levels: float, args: argparse.Namespace) -> None:
    valid = [r for r in runs if r.wrong_books == 0 and r.resyncs == 0]
    per_core = median([r.per_core for r in valid])
    report.figure(
        "applied and published events per CPU-second (one core)",
        per_core,
        "events/s",
        at_least(TARGET, "events/s"),
    )
    report.figure("events/s, wall clock", median([r.per_second for r in valid]), "events/s")
    if per_core is not None:
        report.figure("per core / parse-only ceiling of the same frames", per_core / ceiling, "x")
    report.figure(
        "runs with every book synced at the last update id",
        len(valid),
        f"of {len(runs)}",
        at_least(len(runs), f"of {len(runs)}"),
    )
    report.table(
        "Runs",
        [
            "run",
            "events",
            "seconds",
            "node CPU s",
            "node CPU %",
            "events per CPU-s",
            "events/s",
            "snapshots written",
            "events per snapshot",
            "sender done at s",
            "resyncs",
            "wrong books",
        ],
        [
            [
                i + 1,
                r.events,
                r.seconds,
                r.cpu_seconds,
                100 * r.cpu_seconds / r.seconds,
                r.per_core,
                r.per_second,
                r.snapshots,
                r.events / max(r.snapshots, 1),
                r.sender_seconds,
                r.resyncs,
                r.wrong_books,
            ]
            for i, r in enumerate(runs)
        ],
    )
    report.table(
        "Side by side", ["what", "frames per CPU-second"], [["venue parser only, this process", ceiling]]
    )
    report.data["levels_per_frame"] = levels
    series = {}
    for i, run in enumerate(runs):
        xs = [t for t, _ in run.timeline[1:]]
        ys = [(b - a) / (tb - ta) for (ta, a), (tb, b) in zip(run.timeline, run.timeline[1:], strict=False)]
        series[f"run {i + 1}"] = (xs, ys)
    report.line_plot(
        "throughput_over_time.png",
        "Events applied per second during the blast",
        "seconds",
        "events/s",
        series,
        hlines={"target 20 000 events/s per core": TARGET},
    )
    report.note(
        f"{args.pairs} books, {args.frames} recorded frames each, changing {levels:.1f} price levels a frame "
        f"on average; venue books of {args.levels} levels per side, node publishing {args.depth} per side; "
        "one replica per book. A snapshot is written per book per event-loop turn, so one snapshot carries "
        "every event of that book in the turn."
    )
    report.note("A run counts only if every book ends synced at the last recorded update id, with no resync.")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="ladder bench ingest", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--frames", type=int, default=1000, help="recorded frames per book")
    parser.add_argument("--levels", type=int, default=1000, help="venue book levels per side")
    parser.add_argument("--depth", type=int, default=20, help="levels per side the node publishes")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    report = Report("ingest", "Ingest capacity: applied and published diff events per second per core")
    harness.run(measure(args, report))
    print(f"report: {report.write()}")


if __name__ == "__main__":
    main()
