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

The benchmark watches the node's own counters (its metrics endpoint, once a second) until every
event is applied and reads the node's CPU time from ``/proc``: *events per CPU-second* is the capacity of
one core, whatever else the machine was doing. At the end every book must be synced at the last
recorded update id, or the run does not count.

Side by side, in this process: how fast the same machine only *parses* the same frames (the
venue parser, nothing else), a ceiling no ingest path can pass.

*realistic* is the shape of a real venue (issue 36): ``--real-pairs`` books whose frames each carry
``--window`` of the fake venue's updates merged as Binance's 100 ms diff stream merges them (~15
levels a frame), published ``--real-depth`` (100) levels a side, books interleaved so that one
loop turn holds at most one event of a book: every event costs a snapshot written, which is what a
book gets at the venue's 100 ms cadence. Beside the node, a read worker's book cache follows every
book in a process of its own (:mod:`bench.follower`, each book read between two changes): its CPU
per change message and the bytes each message carries are what every read worker that caches a
book pays for it. ``--profile DIR`` samples the node and the follower with py-spy during the first
run of each case and sums the samples into the stages of an event (:mod:`bench.profile`).

The older cases replay bursts: many events of a book per loop turn, so one snapshot carries ~100
of them. Two cases, each on its own recording: *shallow*, ``--levels``-deep venue books published
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
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import redis.asyncio as redis

from bench import follower as follower_process
from bench import harness
from bench import profile as profiling
from bench.follower import Followed, Follower
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
from bench.replay import Recording, ReplayVenue, conflate, record
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
PROGRESS_EVERY_S = 1.0
"""How often the node's metrics are scraped for progress. A scrape renders every replica's metrics
(milliseconds for hundreds of books, on the node's event loop): scraped ten times a second it
took a quarter of the node's CPU in the realistic case, charged to ingest. Once a second is what a
busy Prometheus does; production scrapes every 15-60 s."""
NODE_SETTINGS = {
    # The replay is silent between the priming frame and the blast, while 5000-level snapshots wait
    # minutes for their weight: no stale marks meanwhile.
    "stale_after_ms": "3600000",
    # The replay can only serve the snapshot it recorded, which a refresh of the trusted window (due
    # at blast speed far sooner than at the venue's) would refetch in vain: no weight for them.
    "background_weight_share": "0.0001",
    # The recording's event times are the venue's of when it was made, not of the replay: no node
    # can judge its lag by them.
    "lag_stale_ms": str(10**12),
    "shed_lag_ms": str(10**12),
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
    followed: Followed | None = None
    """What a read worker's cache following every book paid meanwhile (the realistic case)."""
    profiles: dict[str, Counter[str]] = field(default_factory=dict)
    """py-spy samples per stage, of the node and of the follower (``--profile``)."""

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
    http: aiohttp.ClientSession,
    client: redis.Redis,
    node: Node,
    replay: ReplayVenue,
    expected: int,
    follower: Follower | None = None,
    profile_dir: Path | None = None,
    rounds_per_s: float | None = None,
) -> Run:
    """Send the recording's remaining frames; watch the node until it has applied all of them (and
    the follower, if any, has received what the node wrote). With ``profile_dir``, py-spy samples
    the node and the follower meanwhile."""
    samplers = {}
    if profile_dir is not None:
        pids = {"node": node.pid, **({} if follower is None else {"follower": follower.pid})}
        for name, pid in pids.items():
            sampler = profiling.record(pid, 300, profile_dir / f"{name}.txt")
            if sampler is not None:
                samplers[name] = sampler
        await asyncio.sleep(1)  # py-spy attaches
    if follower is not None:
        follower.begin()
    before = await scrape(http, node.metrics_url)
    stored_before = await store_input_bytes(client)
    start_events = total(before, "ladder_ingest_events_total")
    cpu = cpu_seconds(node.pid)
    stolen = steal_seconds()
    started = time.monotonic()
    sender = asyncio.create_task(replay.blast(rounds_per_s))
    sender_seconds = 0.0
    timeline = [(0.0, 0.0)]
    while True:
        await asyncio.sleep(PROGRESS_EVERY_S)
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
    followed = None
    if follower is not None:
        await asyncio.sleep(0.5)  # the last messages on their way
        followed = follower.end()
    profiles = {}
    for name, sampler in samplers.items():
        sampler.send_signal(signal.SIGINT)
        sampler.wait(30)
        rules = profiling.INGEST_STAGES if name == "node" else profiling.READ_STAGES
        assert profile_dir is not None
        profiles[name] = profiling.stages(profile_dir / f"{name}.txt", rules)
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
        followed=followed,
        profiles=profiles,
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


@dataclass(frozen=True)
class Venue:
    """How one recording is made: the fake venue's books and frames."""

    pairs: int
    levels: int
    deep_share: float
    limit: int
    """Levels a side of the recorded REST snapshots."""
    frames: int
    window: int = 1
    """Fake-venue updates merged into each frame (:func:`bench.replay.conflate`)."""

    def path(self, directory: Path, name: str) -> Path:
        return directory / (
            f"{name}-{self.pairs}x{self.frames}w{self.window}-l{self.levels}-d{self.deep_share}-s{self.limit}.json"
        )


@dataclass(frozen=True)
class Case:
    recording: str
    depth: int
    """Levels a side published."""
    follow: bool = False
    """A follower (a read worker's cache) follows every book."""
    rounds_per_s: float | None = None
    """Frames of each book a second (None: every frame at once)."""


async def recording_of(
    bench: Bench, http: aiohttp.ClientSession, name: str, venue: Venue, keep: Path
) -> Recording:
    """The recording ``venue`` describes, from ``keep`` if it was made before (the same frames for
    every run compared), else from a fake venue started for it."""
    path = venue.path(keep, name)
    if path.exists():
        print(f"{name}: replaying {path}", flush=True)
        return Recording.load(path)
    url = bench.start_fake_venue(
        *("--spot-symbols", str(venue.pairs), "--futures-symbols", "0", "--alpaca-symbols", "0"),
        *("--rate", "0", "--levels", str(venue.levels), "--deep-share", str(venue.deep_share)),
    )
    pairs = await trading_pairs(http, url, venue.pairs)
    updates = 1 + (venue.frames - 1) * venue.window
    print(f"{name}: recording {updates} updates of {len(pairs)} books ...", flush=True)
    recording = conflate(await record(http, url, pairs, updates, venue.limit), venue.window)
    recording.save(path)
    return recording


async def measure(args: argparse.Namespace, report: Report) -> None:
    venues = {
        "realistic": Venue(args.real_pairs, args.levels, 0.0, 1000, args.real_frames, args.window),
        "shallow": Venue(args.pairs, args.levels, 0.0, 1000, args.frames),
        "deep": Venue(args.pairs, args.deep_levels, DEEP_SHARE, 5000, args.frames),
    }
    all_cases = {
        "realistic": Case("realistic", args.real_depth, follow=True, rounds_per_s=args.real_rate),
        "shallow": Case("shallow", args.depth),
        "deep books, shallow publish": Case("deep", args.depth),
        "deep": Case("deep", args.deep_depth),
    }
    wanted = set(args.cases.split(","))
    cases = {name: case for name, case in all_cases.items() if name in wanted or (
        "burst" in wanted and name != "realistic")}  # fmt: skip
    runs: dict[str, list[Run]] = {}
    ceilings: dict[str, float] = {}
    levels: dict[str, float] = {}
    with Bench() as bench:
        client = redis.Redis.from_url(bench.redis_url)
        async with aiohttp.ClientSession() as http:
            replays: dict[str, tuple[ReplayVenue, str, Recording, list[str]]] = {}
            for name in {case.recording for case in cases.values()}:
                recording = await recording_of(bench, http, name, venues[name], Path(args.recordings))
                ceilings[name] = parse_ceiling(recording)
                levels[name] = recording.levels_per_frame()
                replay = ReplayVenue(recording)
                replays[name] = (replay, await replay.start(), recording, sorted(recording.frames))
            for run in range(args.runs):  # the cases alternate, so that a slow spell hits them alike
                for case_name, case in cases.items():
                    replay, url, recording, pairs = replays[case.recording]
                    replay.reset()
                    bench.env.update(fake_venue_env(url))
                    node = bench.start_node("bench-ingest", exchanges=EXCHANGE, **NODE_SETTINGS)
                    await bench.assign(node, EXCHANGE, pairs, case.depth)
                    await replay.wait_subscribed(len(pairs))
                    await replay.prime()
                    await wait_synced(
                        http, node, len(pairs), sync_timeout_s(EXCHANGE, len(pairs), case.depth)
                    )
                    follower = None
                    if case.follow:
                        books = [BookKey(EXCHANGE, pair) for pair in pairs]
                        follower = follower_process.start(bench.redis_url, books, case.depth)
                    ceiling = parse_ceiling(recording)  # how fast the machine is right now
                    frames = min(len(f) for f in recording.frames.values())
                    profile_dir = None
                    if args.profile and run == 0:
                        profile_dir = Path(args.profile) / case_name.replace(" ", "-").replace(",", "")
                    try:
                        result = await blast(
                            http,
                            client,
                            node,
                            replay,
                            (frames - 1) * len(pairs),
                            follower,
                            profile_dir,
                            case.rounds_per_s,
                        )
                    finally:
                        if follower is not None:
                            follower.stop()
                    result.ceiling = ceiling
                    result.wrong_books = await wrong_books(bench.redis_url, recording)
                    runs.setdefault(case_name, []).append(result)
                    cpu_pct = 100 * result.cpu_seconds / result.seconds
                    print(
                        f"{case_name} run {run + 1}: {result.per_core:,.0f} events per CPU-second, "
                        f"{result.per_second:,.0f} events/s, node CPU {cpu_pct:.0f} %, "
                        f"{result.events / max(result.snapshots, 1):.2f} events per snapshot, "
                        f"{result.store_bytes / result.events:,.0f} store bytes per event, "
                        f"{result.wrong_books} wrong books; parse-only {ceiling:,.0f} frames per CPU-second "
                        f"just before (ratio {result.per_ceiling:.3f}), {result.steal_s:.2f} s stolen",
                        flush=True,
                    )
                    if result.followed is not None:
                        f = result.followed
                        print(
                            f"  follower: {f.messages} change messages, {f.bytes_per_message:,.0f} bytes and "
                            f"{f.cpu_us_per_message:.1f} us of CPU per message",
                            flush=True,
                        )
                    for who, counts in result.profiles.items():
                        table = ", ".join(f"{stage} {share:.0%}" for stage, share in profiling.shares(counts))
                        print(f"  py-spy {who}: {table}", flush=True)
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
    if "realistic" in runs:
        _write_realistic(report, runs["realistic"], per_core["realistic"], ceilings["realistic"], args)
    if "shallow" in runs:
        _write_bursts(report, runs, per_core, ceilings, args)
    for case, case_runs in runs.items():
        valid = _valid(case_runs)
        report.figure(
            f"{case}: store bytes written per event", median([r.store_bytes / r.events for r in valid]), "B"
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
            "follower: change bytes per message",
            "follower: CPU us per message",
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
                "" if r.followed is None else r.followed.bytes_per_message,
                "" if r.followed is None else r.followed.cpu_us_per_message,
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
    for case, case_runs in runs.items():
        for who, counts in case_runs[0].profiles.items():
            report.table(
                f"{case}: where the {who}'s CPU went (py-spy samples, run 1)",
                ["stage", "share of samples"],
                [[stage, f"{share:.1%}"] for stage, share in profiling.shares(counts)],
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
    if "realistic" in runs:
        report.note(
            f"Realistic: {args.real_pairs} books, {args.real_frames} frames each, every frame {args.window} "
            f"fake-venue updates merged ({levels['realistic']:.1f} price levels a frame), published "
            f"{args.real_depth} levels a side, books interleaved (one event of a book per loop turn); a "
            "read worker's cache follows every book, each read between two changes."
        )
    if "shallow" in runs:
        report.note(
            f"{args.pairs} books, {args.frames} recorded frames each, one replica per book. Shallow: venue "
            f"books of {args.levels} levels per side, {levels['shallow']:.1f} price levels changed a frame, "
            f"node publishing {args.depth} per side. Deep: venue books of {args.deep_levels} levels a side, "
            f"a {DEEP_SHARE:.0%} share of changes at a random depth, {levels['deep']:.1f} price levels a "
            f"frame, node publishing {args.deep_depth} per side (a 100-level head every loop turn, the deep "
            "snapshot at most every depth / 2000 s). A snapshot is written per book per event-loop turn, so "
            "one snapshot carries every event of that book in the turn."
        )
    report.note("A run counts only if every book ends synced at the last recorded update id, with no resync.")


def _write_realistic(
    report: Report, runs: list[Run], per_core: float | None, ceiling: float, args: argparse.Namespace
) -> None:
    valid = _valid(runs)
    report.figure(
        "realistic: applied and published events per CPU-second (one event of a book per loop turn, "
        f"~15 levels a frame, {args.real_depth} levels published)",
        per_core,
        "events/s",
    )
    report.figure(
        "realistic: CPU per event",
        None if not per_core else 1e6 / per_core,
        "us",
    )
    report.figure(
        "realistic: events per snapshot written", median([r.events / max(r.snapshots, 1) for r in valid]), "x"
    )
    if per_core is not None:
        report.figure("realistic: per core / parse-only ceiling", per_core / ceiling, "x")
    followed = [r.followed for r in valid if r.followed is not None]
    report.figure(
        "realistic: bytes on the change channel per change message",
        median([f.bytes_per_message for f in followed]),
        "B",
    )
    report.figure(
        "realistic: read worker CPU per change message (its cache following the book, the book read)",
        median([f.cpu_us_per_message for f in followed]),
        "us",
    )


def _write_bursts(
    report: Report,
    runs: dict[str, list[Run]],
    per_core: dict[str, float | None],
    ceilings: dict[str, float],
    args: argparse.Namespace,
) -> None:
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
    if "deep" not in runs:
        return
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
    shallow_publish = per_core.get("deep books, shallow publish")
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
    report.figure(
        "deep: store bytes written per deep book per second of the blast",
        median([r.store_bytes / r.seconds / args.pairs for r in _valid(runs["deep"])]),
        "B/s",
    )


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
    parser.add_argument("--real-pairs", type=int, default=500, help="books of the realistic case")
    parser.add_argument("--real-frames", type=int, default=60, help="frames per book, realistic case")
    parser.add_argument(
        "--real-rate",
        type=float,
        default=10.0,
        help="frames a book gets a second (the venue's 10)",
    )
    parser.add_argument("--window", type=int, default=5, help="venue updates merged into a frame")
    parser.add_argument("--real-depth", type=int, default=100, help="levels a side published, realistic")
    parser.add_argument(
        "--cases",
        default="realistic,burst",
        help="comma-separated: realistic, burst (= shallow, 'deep books, shallow publish', deep), or those",
    )
    parser.add_argument(
        "--recordings",
        default="/tmp/ladder-bench-recordings",
        help="where recordings are kept between runs (the same frames for runs compared)",
    )
    parser.add_argument("--profile", default="", help="a directory: py-spy profiles of each case's first run")
    parser.add_argument("--runs", type=int, default=3, help="runs of each case (the median is reported)")
    args = parser.parse_args(argv)
    report = Report("ingest", "Ingest capacity: applied and published diff events per second per core")
    harness.run(measure(args, report))
    print(f"report: {report.write()}")


if __name__ == "__main__":
    main()
