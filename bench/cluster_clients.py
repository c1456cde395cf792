"""``ladder bench cluster_clients``: redis-py's asyncio cluster client next to valkey-glide.

Theory of operation
-------------------
Issue 22 needs a cluster-aware client; the two candidates are redis-py's ``redis.asyncio.
RedisCluster`` (already a dependency) and valkey-glide (Valkey's own client: a Rust core behind a
Python FFI). On a real 3-primary cluster (``tests/valkey_cluster.py``, one replica each) this
measures, one client after the other in the same run, the three store paths Ladder runs hot:

- **write**: what :class:`book_store.writer.BookWriter` sends per event-loop turn, one
  non-transactional pipeline of ``HSET`` + ``SPUBLISH`` per book for ``--books`` books (split per
  shard by the client), back to back for ``--seconds``: snapshots/s and the client's CPU per
  snapshot;
- **read**: one ``HGET`` of a random book's snapshot at a time, as a reader's cold look-up does:
  latency percentiles and CPU per read;
- **change feed**: a subscriber process ``SSUBSCRIBE``s every book's channel and counts
  ``--messages`` sharded messages that this process publishes: the subscriber's CPU per message
  (what a read worker would spend to keep its cache true), for redis-py's ``ClusterPubSub``, for
  glide's callback, and for the raw RESP socket per shard that Ladder's change feed speaks
  (``read_functions.resp``), the baseline.

The glide rows need ``pip install valkey-glide``; without it they are skipped and say so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from bench.report import Report, percentiles
from book_store.keys import BookKey
from ladder_process.embedded_valkey import EmbeddedValkey
from tests.valkey_cluster import HOST, ValkeyCluster

PAYLOAD = 2_000
"""Bytes per snapshot: about a 20-level head (a 100-level one is ~6 KB)."""


def books(count: int) -> list[BookKey]:
    return [BookKey("binance.com", f"PAIR{i}USDT") for i in range(count)]


def glide_available() -> bool:
    try:
        import glide  # noqa: F401
    except ImportError:
        return False
    return True


async def glide_client(port: int) -> Any:
    from glide import GlideClusterClient, GlideClusterClientConfiguration, NodeAddress

    return await GlideClusterClient.create(GlideClusterClientConfiguration([NodeAddress(HOST, port)]))


async def timed(seconds: float, turn: Callable[[], Awaitable[int]]) -> tuple[float, float]:
    """Run ``turn`` back to back for ``seconds``: (units/s, CPU us per unit)."""
    done = 0
    cpu, wall = time.process_time(), time.perf_counter()
    while time.perf_counter() - wall < seconds:
        done += await turn()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return done / wall, cpu / done * 1e6


async def write_redis_py(url: str, keys: list[BookKey], seconds: float) -> tuple[float, float]:
    client = RedisCluster.from_url(url)
    payload = os.urandom(PAYLOAD)

    async def turn() -> int:
        pipe = client.pipeline(transaction=False)
        for book in keys:
            pipe.hset(book.snapshots, "0", payload)
            pipe.spublish(book.channel, b"\x00\x00" + payload)
        await pipe.execute()
        return len(keys)

    await turn()  # the slot map, connections to every primary
    try:
        return await timed(seconds, turn)
    finally:
        await client.aclose()


async def write_per_shard(url: str, keys: list[BookKey], seconds: float) -> tuple[float, float]:
    """redis-py for the slot map only; each turn one plain pipeline per primary, sent concurrently."""
    cluster = RedisCluster.from_url(url)
    await cluster.initialize()
    shards: dict[str, aioredis.Redis] = {}
    by_shard: dict[str, list[BookKey]] = {}
    for book in keys:
        node = cluster.get_node_from_key(book.snapshots)
        assert node is not None
        shards.setdefault(node.name, aioredis.Redis(host=node.host, port=int(node.port)))
        by_shard.setdefault(node.name, []).append(book)
    payload = os.urandom(PAYLOAD)

    async def one_shard(client: aioredis.Redis, shard_keys: list[BookKey], command: str) -> None:
        pipe = client.pipeline(transaction=False)
        for book in shard_keys:
            pipe.hset(book.snapshots, "0", payload)
            pipe.execute_command(command, book.channel, b"\x00\x00" + payload)
        await pipe.execute()

    async def turn() -> int:
        await asyncio.gather(*(one_shard(shards[name], ks, "SPUBLISH") for name, ks in by_shard.items()))
        return len(keys)

    await turn()
    try:
        return await timed(seconds, turn)
    finally:
        for client in shards.values():
            await client.aclose()
        await cluster.aclose()


async def write_single_node(url: str, keys: list[BookKey], seconds: float) -> tuple[float, float]:
    """Today's writer on one node: one plain pipeline of HSET + PUBLISH."""
    client = aioredis.Redis.from_url(url)
    payload = os.urandom(PAYLOAD)

    async def turn() -> int:
        pipe = client.pipeline(transaction=False)
        for book in keys:
            pipe.hset(book.snapshots, "0", payload)
            pipe.publish(book.channel, b"\x00\x00" + payload)
        await pipe.execute()
        return len(keys)

    await turn()
    try:
        return await timed(seconds, turn)
    finally:
        await client.aclose()


async def read_single_node(url: str, keys: list[BookKey], reads: int) -> dict[str, Any]:
    client = aioredis.Redis.from_url(url)
    try:
        return await read_latencies(lambda key: client.hget(key, "0"), keys, reads)
    finally:
        await client.aclose()


async def write_glide(port: int, keys: list[BookKey], seconds: float) -> tuple[float, float]:
    from glide import ClusterBatch

    client = await glide_client(port)
    payload = os.urandom(PAYLOAD)

    async def turn() -> int:
        batch = ClusterBatch(is_atomic=False)
        for book in keys:
            batch.hset(book.snapshots, {"0": payload})
            batch.publish(b"\x00\x00" + payload, book.channel, sharded=True)
        await client.exec(batch, raise_on_error=True)
        return len(keys)

    await turn()
    try:
        return await timed(seconds, turn)
    finally:
        await client.close()


async def read_latencies(
    get: Callable[[str], Awaitable[object]], keys: list[BookKey], reads: int
) -> dict[str, Any]:
    rng = random.Random(7)
    for book in keys[:50]:
        await get(book.snapshots)  # warm every connection
    latencies = []
    cpu = time.process_time()
    for _ in range(reads):
        key = rng.choice(keys).snapshots
        started = time.perf_counter()
        await get(key)
        latencies.append((time.perf_counter() - started) * 1e6)
    cpu = time.process_time() - cpu
    return {**percentiles(latencies), "cpu_us": cpu / reads * 1e6}


async def read_redis_py(url: str, keys: list[BookKey], reads: int) -> dict[str, Any]:
    client = RedisCluster.from_url(url)
    try:
        return await read_latencies(lambda key: client.hget(key, "0"), keys, reads)
    finally:
        await client.aclose()


async def read_glide(port: int, keys: list[BookKey], reads: int) -> dict[str, Any]:
    client = await glide_client(port)
    try:
        return await read_latencies(lambda key: client.hget(key, "0"), keys, reads)
    finally:
        await client.close()


# -- the change feed: a subscriber in its own process, so its CPU is its own ---------------------


async def receive(kind: str, port: int, keys: list[BookKey], count: int) -> dict[str, float]:
    """Subscribe to every book's channel, say READY, count ``count`` messages; CPU and wall time."""
    channels = [book.channel for book in keys]
    arrived = asyncio.Event()
    seen = [0, 0.0, 0.0]  # messages, cpu and wall time at the first

    def one() -> None:
        if seen[0] == 0:
            seen[1], seen[2] = time.process_time(), time.perf_counter()
        seen[0] += 1
        if seen[0] >= count:
            arrived.set()

    closer: Callable[[], Awaitable[object]]
    if kind == "redis-py":
        client = RedisCluster(host=HOST, port=port)
        await client.initialize()
        pubsub = client.pubsub()
        for channel in channels:
            await pubsub.ssubscribe(channel)
        nodes = [client.get_node(node_name=name) for name in pubsub.node_pubsub_mapping]
        confirmed = 0
        while confirmed < len(channels):  # drain the confirmations before saying READY
            for node in nodes:
                message = await pubsub.get_sharded_message(timeout=0.01, target_node=node)
                confirmed += message is not None and message["type"] == "ssubscribe"

        async def pump(node: Any) -> None:  # one reader per shard: polling them in turn stalls
            while not arrived.is_set():
                message = await pubsub.get_sharded_message(timeout=1.0, target_node=node)
                if message is not None and message["type"] == "smessage":
                    one()

        tasks = [asyncio.get_running_loop().create_task(pump(node)) for node in nodes]
        closer = client.aclose
    elif kind == "glide":
        from glide import GlideClusterClient, GlideClusterClientConfiguration, NodeAddress

        config = GlideClusterClientConfiguration([NodeAddress(HOST, port)])
        config.pubsub_subscriptions = GlideClusterClientConfiguration.PubSubSubscriptions(
            channels_and_patterns={GlideClusterClientConfiguration.PubSubChannelModes.Sharded: set(channels)},
            callback=lambda _msg, _ctx: one(),
            context=None,
        )
        glide = await GlideClusterClient.create(config)
        await asyncio.sleep(1.0)  # subscriptions are made in the background
        tasks = []
        closer = glide.close
    else:
        transports = await resp_subscribe(port, channels, one)
        tasks = []

        async def close_all() -> None:
            for transport in transports:
                transport.close()

        closer = close_all
    print("READY", flush=True)
    await asyncio.wait_for(arrived.wait(), 120)
    cpu, wall = time.process_time() - seen[1], time.perf_counter() - seen[2]
    for task in tasks:
        task.cancel()
    await closer()
    return {"cpu_us": cpu / count * 1e6, "per_s": count / wall}


async def resp_subscribe(port: int, channels: list[str], one: Callable[[], None]) -> list[asyncio.Transport]:
    """One raw RESP socket per primary, ``SSUBSCRIBE`` of each channel where its slot lives."""
    from read_functions.resp import RespParser, command

    with redis.Redis(host=HOST, port=port) as client:
        slots = client.execute_command("CLUSTER", "SLOTS")
    owner: dict[int, int] = {}
    for low, high, primary, *_ in slots:
        for slot in range(low, high + 1):
            owner[slot] = int(primary[1])
    confirmed = asyncio.Event()
    pending = [len(channels)]

    class Feed(asyncio.Protocol):
        def __init__(self) -> None:
            self.parser = RespParser()

        def data_received(self, data: bytes) -> None:
            for reply in self.parser.feed(data):
                if isinstance(reply, list) and reply[0] == b"smessage":
                    one()
                elif isinstance(reply, list) and reply[0] == b"ssubscribe":
                    pending[0] -= 1
                    if pending[0] == 0:
                        confirmed.set()

    loop = asyncio.get_running_loop()
    transports: dict[int, asyncio.Transport] = {}
    for channel in channels:
        node = owner[key_slot(channel.encode())]
        if node not in transports:
            transports[node], _ = await loop.create_connection(Feed, HOST, node)
        transports[node].write(command(b"SSUBSCRIBE", channel.encode()))
    await asyncio.wait_for(confirmed.wait(), 10)
    return list(transports.values())


async def feed_cost(kind: str, port: int, count: int, keys: list[BookKey]) -> dict[str, float]:
    """Start a subscriber process of ``kind``, publish ``count`` messages, return what it measured."""
    args = ["--receive", kind, "--port", str(port), "--messages", str(count), "--books", str(len(keys))]
    child = subprocess.Popen(  # noqa: ASYNC220 - a child we talk to over a pipe, started once
        [sys.executable, "-m", "bench.cluster_clients", *args], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    line = await asyncio.to_thread(child.stdout.readline)
    if line.strip() != "READY":
        raise RuntimeError(f"the {kind} subscriber did not start: {line!r}")
    client = RedisCluster(host=HOST, port=port)
    payload = b"\x00\x00" + os.urandom(PAYLOAD)
    sent = 0
    while child.poll() is None and sent < count * 2:  # a little extra in case some are lost
        pipe = client.pipeline(transaction=False)
        for book in keys:
            pipe.spublish(book.channel, payload)
        await pipe.execute()
        sent += len(keys)
        await asyncio.sleep(0)
    await client.aclose()
    out, _ = await asyncio.to_thread(child.communicate)
    return dict(json.loads(out.strip().splitlines()[-1]))


async def measure(args: argparse.Namespace, report: Report) -> None:
    keys = books(args.books)
    kinds = ["resp", "redis-py", *(["glide"] if glide_available() else [])]
    rows_write: list[list[Any]] = []
    rows_read: list[list[Any]] = []
    rows_feed: list[list[Any]] = []

    def row(kind: str, written: tuple[float, float], reads: dict[str, Any] | None) -> None:
        rows_write.append([kind, round(written[0]), round(written[1], 1)])
        report.figure(f"{kind}: pipelined HSET + publish", written[0], "snapshots/s")
        if reads is not None:
            rows_read.append([kind, *(round(reads[p], 1) for p in ("p50", "p99", "max", "cpu_us"))])
            report.figure(f"{kind}: HGET p50", reads["p50"], "us")

    with EmbeddedValkey() as single:
        print("single node: writing, reading", flush=True)
        row(
            "redis-py, one node (today)",
            await write_single_node(single.url, keys, args.seconds),
            await read_single_node(single.url, keys, args.reads),
        )
    with ValkeyCluster() as cluster:
        port = cluster.nodes[0].port
        print("redis-py RedisCluster: writing, reading", flush=True)
        row(
            "redis-py RedisCluster",
            await write_redis_py(cluster.url, keys, args.seconds),
            await read_redis_py(cluster.url, keys, args.reads),
        )
        print("redis-py, a plain pipeline per shard: writing", flush=True)
        row(
            "redis-py, a plain pipeline per shard",
            await write_per_shard(cluster.url, keys, args.seconds),
            None,
        )
        if "glide" in kinds:
            print("glide: writing, reading", flush=True)
            row(
                "glide GlideClusterClient",
                await write_glide(port, keys, args.seconds),
                await read_glide(port, keys, args.reads),
            )
        for kind in kinds:
            print(f"{kind}: change feed", flush=True)
            fed = await feed_cost(kind, port, args.messages, keys)
            rows_feed.append([kind, round(fed["per_s"]), round(fed["cpu_us"], 1)])
            report.figure(f"{kind} subscriber: CPU per sharded message", fed["cpu_us"], "us")
    if "glide" not in kinds:
        report.note("valkey-glide is not installed (`pip install valkey-glide`): its rows are missing.")
    report.table(
        f"writer: one pipeline of HSET + SPUBLISH for each of {args.books} books, {PAYLOAD} B snapshots",
        ["client", "snapshots/s", "client CPU us per snapshot"],
        rows_write,
    )
    report.table(
        "reader: one HGET of a random book at a time",
        ["client", "p50 us", "p99 us", "max us", "client CPU us per read"],
        rows_read,
    )
    report.table(
        f"change feed: a subscriber of {args.books} sharded channels receiving {args.messages} messages",
        ["subscriber", "messages/s", "subscriber CPU us per message"],
        rows_feed,
    )
    report.note(
        "One 3-primary cluster (a replica each) on this machine; every client ran in the same run, "
        "one after the other. 'resp' is a raw socket per primary parsed by read_functions.resp, as "
        "Ladder's change feed does; messages/s is bounded by the publisher (redis-py) too."
    )
    report.data.update(write=rows_write, read=rows_read, feed=rows_feed, books=args.books)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="ladder bench cluster_clients", description=__doc__.split("\n")[0])
    parser.add_argument("--books", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0, help="how long each writer runs")
    parser.add_argument("--reads", type=int, default=5000)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--receive", choices=["resp", "redis-py", "glide"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.receive:
        result = asyncio.run(receive(args.receive, args.port, books(args.books), args.messages))
        print(json.dumps(result), flush=True)
        return
    report = Report("cluster_clients", "Cluster clients: redis-py asyncio RedisCluster and valkey-glide")
    asyncio.run(measure(args, report))
    print(report.write())


if __name__ == "__main__":
    main()
