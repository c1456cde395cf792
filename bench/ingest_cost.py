"""``ladder bench ingest_cost``: what one book event costs, stage by stage, from the venue frame to a
read worker's cache, with the sockets to the venue taken out.

Theory of operation
-------------------
``ladder bench ingest`` measures a whole node by its CPU time, which on a shared 2-core machine
moves with everything else that runs. This benchmark answers where an event's cost goes, in a form
that does not move: the ingest node's own objects (the venue's stream parser, the replicas with
their lanes, engines, books and checkpoints, the publisher, the writer) and a read worker's book
cache run in this one process against a real Valkey, and one loop turn at a time is driven through
them in stages, as the node runs it:

1. *parse*: one frame of every book read by the venue's stream protocol (``VenueStream.read``);
2. *apply*: each event handed to its replica (sync check, book update, replica bookkeeping);
3. *encode*: the end of the loop turn, when the publisher encodes every changed replica and hands
   it to the writer;
4. *write*: the writer's pipeline to the store, sent and answered;
5. *follow*: a read worker's cache receiving every change message (parsing the RESP stream,
   decoding and applying the change, rendering the views read of the book again);
6. *read*: a read of every book at ``--depth`` (the view the change rendered).

Each turn carries one event of every book (``--books``), the frames of ``bench ingest``'s
realistic recording (~15 levels each, published ``--depth`` levels a side), so each event costs a
snapshot. Every stage's process CPU time is summed; under ``--callgrind`` the benchmark runs itself
under valgrind and counts each stage's instructions instead (:mod:`bench.callgrind`), figures that
two runs on a busy machine repeat to within a percent: the measure of a hot-path change. The
store's own CPU (``/proc``) is reported beside them; it runs natively either way.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, cast

import aiohttp
import redis.asyncio as redis

from bench import callgrind
from bench.harness import Bench, cpu_seconds, run
from bench.ingest import Venue, recording_of
from bench.replay import Recording, ReplayVenue
from bench.report import Report
from book_store.schema import BookKey
from book_store.writer import BookWriter
from ingest_nodes.core.engine import BookEngine
from ingest_nodes.ops.checkpoints import CheckpointLog
from ingest_nodes.ops.telemetry import IngestTelemetry
from ingest_nodes.runtime.connection import StreamConnection
from ingest_nodes.runtime.exchange import build_exchange
from ingest_nodes.runtime.publisher import Publisher
from ingest_nodes.runtime.replica import BookReplica
from ingest_nodes.settings import IngestSettings
from ingest_nodes.venues.registry import exchange_specs
from ladder_cli.main import fake_venue_env
from ladder_process.cli import HelpFormatter
from ladder_process.clock import now_ms
from ladder_process.telemetry.setup import Telemetry
from read_functions.books.cache import BookCache
from read_functions.books.change_feed import ChangeFeed
from read_functions.books.entry import Entry
from read_functions.books.render import Side

EXCHANGE = "binance.com"
STAGES = ("parse", "apply", "encode", "write", "follow", "read")
MAX_SILENCE_MS = 3_600_000


class Pipeline:
    """One ingest node's event path and one read worker's cache, in this process."""

    def __init__(self, recording: Recording, redis_url: str, venue_url: str, depth: int) -> None:
        os.environ.update(fake_venue_env(venue_url), LADDER_REDIS_URL=redis_url, LADDER_EXCHANGES=EXCHANGE)
        # The recording's event times are the venue's of when it was made: no lag judged by them.
        self.settings = IngestSettings(
            redis_url=redis_url,
            node_id="ingest-cost",
            background_weight_share=0.0001,
            lag_stale_ms=10**12,
            shed_lag_ms=10**12,
        )
        self.recording = recording
        self.symbols = sorted(recording.frames)
        self.depth = depth
        self.redis_url = redis_url
        self.client = redis.Redis.from_url(redis_url)
        self.telemetry = IngestTelemetry(Telemetry.from_env("ladder-ingest"))
        self.writer = BookWriter(self.client, node_id="ingest-cost", node=1)
        self.change_bytes = 0
        """Bytes of the change messages the writer was handed (what the change channel carries)."""
        self._count_changes()
        s = self.settings
        self.publisher = Publisher.from_settings(self.writer, telemetry=self.telemetry, settings=s, node=1)
        self.spec = exchange_specs(s)[EXCHANGE]
        self.venue = self.spec.stream(None)
        self.checkpoints = CheckpointLog(self.client, every=s.checkpoint_every, levels=s.checkpoint_levels)
        # Events are handed to the replicas directly: this stands in for the connection they ride on.
        self.source = cast(StreamConnection, object())
        self.replicas: dict[str, BookReplica] = {}
        self.cache: BookCache | None = None
        self.entries: list[Entry] = []
        self._tasks: list[asyncio.Task[Any]] = []

    def _count_changes(self) -> None:
        put, put_delta = self.writer.put, self.writer.put_delta

        def counted_put(book: BookKey, replica: int, snapshot: bytes, *, deep: bool = False) -> None:
            self.change_bytes += 2 + len(snapshot)  # a message is the replica (2 bytes) and the payload
            put(book, replica, snapshot, deep=deep)

        def counted_delta(book: BookKey, replica: int, delta: bytes, *, base: bytes | None = None) -> None:
            self.change_bytes += 2 + len(delta)
            put_delta(book, replica, delta, base=base)

        self.writer.put = counted_put  # type: ignore[method-assign]
        self.writer.put_delta = counted_delta  # type: ignore[method-assign]

    def framed(self, symbol: str, frame: str) -> str:
        """A frame as the node's combined-stream connection receives it."""
        return f'{{"stream":"{symbol.lower()}@depth@100ms","data":{frame}}}'

    async def start(self, session: aiohttp.ClientSession) -> None:
        exchange = build_exchange(self.spec, self.settings, self.client, session)
        self._tasks.append(asyncio.create_task(exchange.scheduler.run()))
        max_buffer = self.settings.max_buffer
        for symbol in self.symbols:
            replica = BookReplica(
                BookKey(EXCHANGE, symbol),
                1,
                lambda: BookEngine(self.spec.new_machine(max_buffer)),
                exchange.scheduler,
                self.publisher,
                depth=self.depth,
                depth_tiers=self.spec.depth_tiers,
                checkpoints=self.checkpoints,
                stall_policy=self.settings.stall_policy,
                telemetry=self.telemetry,
            )
            replica.start()
            replica.source = self.source
            self.replicas[symbol] = replica
        for symbol, replica in self.replicas.items():
            raw = self.framed(symbol, self.recording.frames[symbol][0])
            for event in self.venue.read(raw, now_ms()):
                replica.on_update(event, self.source)  # type: ignore[arg-type]  # a depth update
        async with asyncio.timeout(300):
            while not all(r.engine.synced for r in self.replicas.values()):  # noqa: ASYNC110
                await asyncio.sleep(0.1)
        await asyncio.sleep(0.2)
        await self.writer.drain()
        cache = self.cache = BookCache(
            self.client,
            self.redis_url,
            idle_s=1e9,  # under valgrind a turn can outlast the idle sweep; every book is read anyway
        )
        assert isinstance(cache.feed, ChangeFeed)
        # The feed's socket is paused between follow stages, pongs with it: no ping may judge it dead.
        cache.feed._ping_interval_s = 1e6
        await cache.start()
        self.entries = await cache.entries([BookKey(EXCHANGE, s) for s in self.symbols])
        self.read_all()

    def read_all(self) -> None:
        """A read of every book at the depth published (what makes the cache render it again)."""
        now = now_ms()
        for entry in self.entries:
            served = entry.served(now, MAX_SILENCE_MS)
            if served is not None:
                entry.view(served, self.depth, Side.BOTH)

    async def turn(self, index: int, cpu: Counter[str], *, measured: bool = True, read: bool = True) -> None:
        """One loop turn: frame ``index`` of every book, through every stage (counted only when
        ``measured``: a warm-up turn marks no stage); ``read``: every book is read after it."""
        frames = [self.framed(s, self.recording.frames[s][index]) for s in self.symbols]
        assert self.cache is not None and isinstance(self.cache.feed, ChangeFeed)
        # The read worker's change-feed socket (a read transport too).
        transport = cast(asyncio.Transport, self.cache.feed._transport)
        transport.pause_reading()  # the changes wait until the follow stage
        received, resets = self.cache.messages, self.cache.resets

        stage = _Stages(cpu, measured)
        stage.begin()
        now = now_ms()
        events = [event for raw in frames for event in self.venue.read(raw, now)]
        stage.end("parse")

        stage.begin()
        for symbol, event in zip(self.symbols, events, strict=True):
            self.replicas[symbol].on_update(event, self.source)  # type: ignore[arg-type]
        stage.end("apply")

        stage.begin()
        await asyncio.sleep(0)  # the end of the loop turn: the publisher's callback runs
        stage.end("encode")

        stage.begin()
        await self.writer.drain()
        stage.end("write")

        stage.begin()
        transport.resume_reading()
        while self.cache.messages < received + len(self.symbols):
            if self.cache.resets != resets:
                raise RuntimeError("the read worker's change feed dropped: the count is void")
            await asyncio.sleep(0)
        stage.end("follow")

        if read:
            stage.begin()
            self.read_all()
            stage.end("read")

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for replica in self.replicas.values():
            await replica.stop()
        await self.writer.close()
        if self.cache is not None:
            await self.cache.close()
        await self.client.aclose()


class _Stages:
    """Marks the stages of one turn: CPU time into ``cpu`` and, under callgrind, a dump per stage."""

    def __init__(self, cpu: Counter[str], measured: bool) -> None:
        self._cpu = cpu
        self._measured = measured
        self._started = 0.0

    def begin(self) -> None:
        if self._measured:
            callgrind.begin()
        self._started = time.process_time()

    def end(self, stage: str) -> None:
        self._cpu[stage] += time.process_time() - self._started  # type: ignore[assignment]  # seconds
        if self._measured:
            callgrind.end(stage)


async def realistic_recording(args: argparse.Namespace, bench: Bench) -> Recording:
    """The realistic recording of ``args`` (made once, then replayed from its file)."""
    async with aiohttp.ClientSession() as http:
        venue = Venue(args.books, args.levels, 0.0, 1000, args.frames, args.window)
        return await recording_of(bench, http, "realistic", venue, Path(args.recordings))


async def record_only(args: argparse.Namespace) -> None:
    with Bench() as bench:
        await realistic_recording(args, bench)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    with Bench() as bench:
        recording = await realistic_recording(args, bench)
        frames = min(len(f) for f in recording.frames.values())
        turns = min(args.turns, frames - 1 - args.warmup)
        replay = ReplayVenue(recording)
        url = await replay.start()
        pipeline = Pipeline(recording, bench.redis_url, url, args.depth)
        cpu: Counter[str] = Counter()
        store_pid = bench.store.pid
        assert store_pid is not None
        async with aiohttp.ClientSession() as session:
            await pipeline.start(session)
            for index in range(1, 1 + args.warmup):
                await pipeline.turn(index, Counter(), measured=False)
            # As an ingest node and a read worker do (ladder_process.heap): what lives on is frozen,
            # and the automatic collector is off (their heap rounds are the only collections), so
            # no collection lands in a stage by chance.
            gc.collect()
            gc.freeze()
            gc.disable()
            store_cpu = cpu_seconds(store_pid)
            change_bytes = pipeline.change_bytes
            try:
                for index in range(1 + args.warmup, 1 + args.warmup + turns):
                    await pipeline.turn(index, cpu, read=(index - args.warmup) % args.read_every == 0)
            finally:
                gc.enable()
            store_cpu = cpu_seconds(store_pid) - store_cpu
            change_bytes = pipeline.change_bytes - change_bytes
            await pipeline.close()
        await replay.stop()
    return {
        "events": turns * len(pipeline.symbols),
        "books": len(pipeline.symbols),
        "turns": turns,
        "cpu_s": dict(cpu),
        "store_cpu_s": store_cpu,
        "change_bytes": change_bytes,
        "levels_per_frame": recording.levels_per_frame(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="ladder bench ingest_cost",
        description=__doc__,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--books", type=int, default=500, help="books, each one event a loop turn")
    parser.add_argument("--frames", type=int, default=60, help="frames per book in the recording")
    parser.add_argument("--turns", type=int, default=20, help="loop turns measured (one event of each book)")
    parser.add_argument("--warmup", type=int, default=3, help="loop turns run first, not measured")
    parser.add_argument("--window", type=int, default=5, help="venue updates merged into a frame")
    parser.add_argument("--levels", type=int, default=1000, help="venue book levels a side")
    parser.add_argument("--depth", type=int, default=100, help="levels a side published and read")
    parser.add_argument(
        "--read-every",
        type=int,
        default=1,
        help="loop turns per read of every book (1: every change is read; 10: a book read once a second)",
    )
    parser.add_argument(
        "--recordings",
        default="/tmp/ladder-bench-recordings",
        help="where recordings are kept between runs (the same frames for runs compared)",
    )
    parser.add_argument("--callgrind", action="store_true", help="count instructions under valgrind")
    parser.add_argument("--label", default="", help="a name for this run in the report (e.g. a commit)")
    parser.add_argument("--json", default="", help=argparse.SUPPRESS)  # where a run under valgrind writes
    args = parser.parse_args(argv)
    report = Report(
        "ingest_cost", "One book event's cost, stage by stage, from the venue frame to a read worker"
    )
    if args.callgrind:
        out = report.results_dir / "tmp" / "ingest_cost-callgrind"  # not kept in git
        inner = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--callgrind"]
        json_path = out / "run.json"
        run(record_only(args))  # natively: the run under valgrind only replays
        status = callgrind.rerun_under_callgrind("bench.ingest_cost", [*inner, "--json", str(json_path)], out)
        if status:
            raise SystemExit(f"the run under valgrind failed ({status})")
        import json

        result = json.loads(json_path.read_text())
        result["instructions"] = dict(callgrind.instructions(out))
    else:
        result = {}
        run(_measure_into(args, result))
        if args.json:
            import json

            Path(args.json).write_text(json.dumps(result))
            return
    _write(report, result, args)
    print(report.write().read_text())


async def _measure_into(args: argparse.Namespace, result: dict[str, Any]) -> None:
    result.update(await measure(args))


def _write(report: Report, result: dict[str, Any], args: argparse.Namespace) -> None:
    events = result["events"]
    counted = result.get("instructions", {})
    rows = []
    for stage in STAGES:
        cpu_us = result["cpu_s"].get(stage, 0.0) / events * 1e6
        instr = counted.get(stage)
        rows.append([stage, cpu_us, "" if instr is None else instr / events])
    total_cpu = sum(result["cpu_s"].values()) / events * 1e6
    total_instr = sum(counted.get(stage, 0) for stage in STAGES) / events if counted else None
    rows.append(["total", total_cpu, "" if total_instr is None else total_instr])
    under = " (under valgrind: CPU times are valgrind's)" if counted else ""
    report.table(f"Per event{under}", ["stage", "CPU us", "instructions"], rows)
    ingest = ("parse", "apply", "encode", "write")
    if counted:
        report.figure(
            "ingest node: instructions per event (parse, apply, encode, write)",
            sum(counted.get(s, 0) for s in ingest) / events,
            "instructions",
        )
        report.figure(
            "read worker: instructions per change followed", counted.get("follow", 0) / events, "instructions"
        )
        report.figure(
            "read worker: instructions per change, followed and read",
            (counted.get("follow", 0) + counted.get("read", 0)) / events,
            "instructions",
        )
    report.figure(
        "ingest node: CPU per event (parse, apply, encode, write)",
        sum(result["cpu_s"].get(s, 0.0) for s in ingest) / events * 1e6,
        "us",
    )
    report.figure(
        "read worker: CPU per change followed", result["cpu_s"].get("follow", 0.0) / events * 1e6, "us"
    )
    report.figure("bytes on the change channel per event", result["change_bytes"] / events, "B")
    report.figure(
        "store: CPU per event (write and deliver to one subscriber)",
        result["store_cpu_s"] / events * 1e6,
        "us",
    )
    report.note(
        f"{result['books']} books, {result['turns']} loop turns of one event each "
        f"({result['levels_per_frame']:.1f} price levels a frame), published and read {args.depth} levels a "
        f"side; one read worker follows every book and reads each once every {args.read_every} change(s)."
    )
    if args.label:
        report.note(f"Run: {args.label}.")
    report.data.update(result)


if __name__ == "__main__":
    main()
