"""``ladder bench cluster_clients``: redis-py's asyncio cluster client next to valkey-glide, and
what the store's nodes spend per snapshot and per change message.

Theory of operation
-------------------
Issue 22 needs a cluster-aware client; the two candidates are redis-py's ``redis.asyncio.
RedisCluster`` (already a dependency) and valkey-glide (Valkey's own client: a Rust core behind a
Python FFI). On a real 3-primary cluster (``tests/valkey_cluster.py``, one replica each) this
measures, one client after the other in the same run, the three store paths Ladder runs hot, with
head snapshots encoded as the ingest node encodes them (``--levels`` a side):

- **write**: what :class:`book_store.writer.BookWriter` sends per event-loop turn, one
  non-transactional pipeline of ``HSET`` + ``SPUBLISH`` per book for ``--books`` books, back to
  back for ``--seconds``: snapshots/s, the client's CPU and the primaries' CPU per snapshot; next
  to today's writer on one node (``PUBLISH``), and redis-py's own cluster pipeline next to plain
  pipelines per shard;
- **read**: one ``HGET`` of a random book's snapshot at a time, as a reader's cold look-up does:
  latency percentiles and CPU per read;
- **change feed**: subscriber processes ``SSUBSCRIBE`` every book's channel and count
  ``--messages`` messages each that this process publishes: a subscriber's CPU per message (what
  a read worker spends to keep its cache true) for redis-py's ``ClusterPubSub``, glide's callback
  and the raw RESP socket per shard that Ladder's change feed speaks (``read_functions.resp``),
  and the primaries' CPU per published message with one and with ``--fan-out`` subscribers;
- **shards**: the same writer on a 1-shard cluster, for the store's CPU per snapshot next to 3;
- **memory**: what a book's two head snapshots take in the store.

The glide rows need ``pip install valkey-glide``; without it they are skipped and say so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.crc import key_slot

from bench.harness import cpu_seconds
from bench.report import Report, percentiles
from book_store.codec import BookStatus, SnapshotMeta, encode_snapshot
from book_store.schema import BookKey
from ladder_process.cli import HelpFormatter
from ladder_process.embedded_valkey import EmbeddedValkey
from tests.valkey_cluster import HOST, ValkeyCluster


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


@dataclass
class Rate:
    """Units per second, and the CPU each unit cost the client and the store's nodes."""

    per_s: float
    client_us: float
    primaries_us: float
    replicas_us: float


Turn = Callable[[], Awaitable[int]]
Closer = Callable[[], Awaitable[object]]


async def timed(seconds: float, turn: Turn, primaries: list[int], replicas: list[int]) -> Rate:
    """Run ``turn`` back to back for ``seconds``; the store's CPU is summed over the given pids."""
    await turn()  # the slot map, connections to every primary
    done = 0
    store = [sum(cpu_seconds(pid) for pid in pids) for pids in (primaries, replicas)]
    cpu, wall = time.process_time(), time.perf_counter()
    while time.perf_counter() - wall < seconds:
        done += await turn()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    after = [sum(cpu_seconds(pid) for pid in pids) for pids in (primaries, replicas)]
    return Rate(
        done / wall, cpu / done * 1e6, *((a - b) / done * 1e6 for a, b in zip(after, store, strict=True))
    )


def snapshot(levels: int) -> bytes:
    """A head snapshot as the ingest node writes it: ``levels`` levels a side (book_store.codec)."""
    meta = SnapshotMeta(
        123_456_789, 1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_002, 0, BookStatus.SYNCED
    )
    bids = [b'["%d.%02d000000","%d.12345000"]' % (65_000 - i, i % 100, i % 7) for i in range(levels)]
    asks = [b'["%d.%02d000000","%d.54321000"]' % (65_001 + i, i % 100, i % 5) for i in range(levels)]
    return encode_snapshot(meta, bids, asks)


async def writer_redis_cluster(url: str, keys: list[BookKey], payload: bytes) -> tuple[Turn, Closer]:
    """redis-py's own cluster pipeline (it splits the commands per node)."""
    client = RedisCluster.from_url(url)

    async def turn() -> int:
        pipe = client.pipeline(transaction=False)
        for book in keys:
            pipe.hset(book.snapshots, "0", payload)
            pipe.spublish(book.channel, b"\x00\x00" + payload)
        await pipe.execute()
        return len(keys)

    return turn, client.aclose


async def writer_per_shard(url: str, keys: list[BookKey], payload: bytes) -> tuple[Turn, Closer]:
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

    async def one_shard(client: aioredis.Redis, shard_keys: list[BookKey]) -> None:
        pipe = client.pipeline(transaction=False)
        for book in shard_keys:
            pipe.hset(book.snapshots, "0", payload)
            pipe.execute_command("SPUBLISH", book.channel, b"\x00\x00" + payload)
        await pipe.execute()

    async def turn() -> int:
        await asyncio.gather(*(one_shard(shards[name], ks) for name, ks in by_shard.items()))
        return len(keys)

    async def close() -> None:
        for client in shards.values():
            await client.aclose()
        await cluster.aclose()

    return turn, close


async def writer_single_node(url: str, keys: list[BookKey], payload: bytes) -> tuple[Turn, Closer]:
    """Today's writer on one node: one plain pipeline of HSET + PUBLISH."""
    client = aioredis.Redis.from_url(url)

    async def turn() -> int:
        pipe = client.pipeline(transaction=False)
        for book in keys:
            pipe.hset(book.snapshots, "0", payload)
            pipe.publish(book.channel, b"\x00\x00" + payload)
        await pipe.execute()
        return len(keys)

    return turn, client.aclose


async def writer_glide(url: str, keys: list[BookKey], payload: bytes) -> tuple[Turn, Closer]:
    from glide import ClusterBatch

    client = await glide_client(int(url.rsplit(":", 1)[1].split("/")[0]))

    async def turn() -> int:
        batch = ClusterBatch(is_atomic=False)
        for book in keys:
            batch.hset(book.snapshots, {"0": payload})
            batch.publish(b"\x00\x00" + payload, book.channel, sharded=True)
        await client.exec(batch, raise_on_error=True)
        return len(keys)

    return turn, client.close


Writer = Callable[[str, list[BookKey], bytes], Awaitable[tuple[Turn, Closer]]]


async def write(
    writer: Writer,
    url: str,
    keys: list[BookKey],
    payload: bytes,
    seconds: float,
    pids: tuple[list[int], list[int]],
) -> Rate:
    turn, close = await writer(url, keys, payload)
    try:
        return await timed(seconds, turn, *pids)
    finally:
        await close()


async def memory_per_book(url: str, keys: list[BookKey], payload: bytes, replicas: int = 2) -> float:
    """Store bytes one book takes with ``replicas`` head snapshots (``used_memory`` grown, per book)."""
    client = aioredis.Redis.from_url(url)
    try:
        await client.flushall()
        before = (await client.info("memory"))["used_memory"]
        for start in range(0, len(keys), 500):
            pipe = client.pipeline(transaction=False)
            for book in keys[start : start + 500]:
                for replica in range(replicas):
                    pipe.hset(book.snapshots, str(replica), payload)
            await pipe.execute()
        after = (await client.info("memory"))["used_memory"]
        await client.flushall()
    finally:
        await client.aclose()
    return float(after - before) / len(keys)


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


async def read_single_node(url: str, keys: list[BookKey], reads: int) -> dict[str, Any]:
    client = aioredis.Redis.from_url(url)
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


async def feed_cost(
    kind: str, cluster: ValkeyCluster, count: int, keys: list[BookKey], payload: bytes, subscribers: int = 1
) -> dict[str, float]:
    """Start ``subscribers`` subscriber processes of ``kind``, publish until each has ``count``
    messages; what each measured (the mean), and the primaries' CPU per published message."""
    port = cluster.nodes[0].port
    args = ["--receive", kind, "--port", str(port), "--messages", str(count), "--books", str(len(keys))]
    children = [
        subprocess.Popen(  # noqa: ASYNC220 - children we talk to over a pipe, started once
            [sys.executable, "-m", "bench.cluster_clients", *args], stdout=subprocess.PIPE, text=True
        )
        for _ in range(subscribers)
    ]
    for child in children:
        assert child.stdout is not None
        line = await asyncio.to_thread(child.stdout.readline)
        if line.strip() != "READY":
            raise RuntimeError(f"the {kind} subscriber did not start: {line!r}")
    client = RedisCluster(host=HOST, port=port)
    message = b"\x00\x00" + payload
    primaries = [node.process.pid for node in cluster.primaries]
    store = sum(cpu_seconds(pid) for pid in primaries)
    sent = 0
    while any(child.poll() is None for child in children) and sent < count * 2:  # spare for losses
        pipe = client.pipeline(transaction=False)
        for book in keys:
            pipe.spublish(book.channel, message)
        await pipe.execute()
        sent += len(keys)
        await asyncio.sleep(0)
    store = sum(cpu_seconds(pid) for pid in primaries) - store
    await client.aclose()
    results = []
    for child in children:
        out, _ = await asyncio.to_thread(child.communicate)
        results.append(json.loads(out.strip().splitlines()[-1]))
    mean = {key: statistics.fmean(r[key] for r in results) for key in results[0]}
    return {**mean, "store_us": store / sent * 1e6}


async def measure(args: argparse.Namespace, report: Report) -> None:
    keys = books(args.books)
    payload = snapshot(args.levels)
    glide = glide_available()
    writers: list[tuple[str, Writer]] = [
        ("redis-py RedisCluster pipeline", writer_redis_cluster),
        ("redis-py, a plain pipeline per shard", writer_per_shard),
        *([("glide ClusterBatch", writer_glide)] if glide else []),
    ]
    rows_write: list[list[Any]] = []
    rows_read: list[list[Any]] = []
    rows_feed: list[list[Any]] = []
    rows_shards: list[list[Any]] = []

    def wrote(kind: str, rate: Rate) -> None:
        rows_write.append([kind, round(rate.per_s), round(rate.client_us, 1), round(rate.primaries_us, 1)])
        report.figure(f"writer, {kind}: client CPU per snapshot", rate.client_us, "us")

    def read(kind: str, reads: dict[str, Any]) -> None:
        rows_read.append([kind, *(round(reads[p], 1) for p in ("p50", "p99", "max", "cpu_us"))])
        report.figure(f"HGET, {kind}: p50", reads["p50"], "us")

    with EmbeddedValkey() as single:
        assert single.pid is not None
        print("one node: writing, reading, memory", flush=True)
        today = "redis-py, one node (today)"
        wrote(
            today,
            await write(writer_single_node, single.url, keys, payload, args.seconds, ([single.pid], [])),
        )
        read(today, await read_single_node(single.url, keys, args.reads))
        per_book = await memory_per_book(single.url, books(args.memory_books), payload)
    report.figure(f"store memory per book, 2 replicas x {args.levels} levels a side", per_book / 1024, "KiB")
    with ValkeyCluster() as cluster:
        pids = ([n.process.pid for n in cluster.primaries], [n.process.pid for n in cluster.nodes[3:]])
        for kind, writer in writers:
            print(f"{kind}: writing", flush=True)
            wrote(kind, await write(writer, cluster.url, keys, payload, args.seconds, pids))
        print("reading", flush=True)
        read("redis-py RedisCluster", await read_redis_py(cluster.url, keys, args.reads))
        if glide:
            read("glide GlideClusterClient", await read_glide(cluster.nodes[0].port, keys, args.reads))
        three = await write(writer_per_shard, cluster.url, keys, payload, args.seconds, pids)
        for kind in ["resp", "redis-py", *(["glide"] if glide else [])]:
            print(f"{kind}: change feed", flush=True)
            fed = await feed_cost(kind, cluster, args.messages, keys, payload)
            rows_feed.append(
                [kind, 1, round(fed["per_s"]), round(fed["cpu_us"], 1), round(fed["store_us"], 1)]
            )
            report.figure(f"change feed, {kind} subscriber: CPU per message", fed["cpu_us"], "us")
        fanned = await feed_cost("resp", cluster, args.messages // 2, keys, payload, subscribers=args.fan_out)
        rows_feed.append(
            [
                "resp",
                args.fan_out,
                round(fanned["per_s"]),
                round(fanned["cpu_us"], 1),
                round(fanned["store_us"], 1),
            ]
        )
    with ValkeyCluster(primaries=1) as one:
        print("one shard: writing", flush=True)
        pids = ([one.primaries[0].process.pid], [n.process.pid for n in one.nodes[1:]])
        alone = await write(writer_per_shard, one.url, keys, payload, args.seconds, pids)
    for shards, rate in ((1, alone), (3, three)):
        rows_shards.append(
            [
                shards,
                round(rate.per_s),
                round(rate.client_us, 1),
                round(rate.primaries_us, 1),
                round(rate.replicas_us, 1),
            ]
        )
        report.figure(f"{shards}-shard cluster: primaries' CPU per snapshot", rate.primaries_us, "us")
    if not glide:
        report.note("valkey-glide is not installed (`pip install valkey-glide`): its rows are missing.")
    size = f"{len(payload)} B snapshots ({args.levels} levels a side)"
    report.table(
        f"writer: one pipeline of HSET + SPUBLISH for each of {args.books} books, {size}",
        ["client", "snapshots/s", "client CPU us per snapshot", "primaries' CPU us per snapshot"],
        rows_write,
    )
    report.table(
        "reader: one HGET of a random book at a time",
        ["client", "p50 us", "p99 us", "max us", "client CPU us per read"],
        rows_read,
    )
    report.table(
        f"change feed: subscribers of {args.books} sharded channels, {size}",
        [
            "subscriber",
            "subscribers",
            "messages/s each",
            "CPU us per message each",
            "primaries' CPU us per published message",
        ],
        rows_feed,
    )
    report.table(
        "one writer (a plain pipeline per shard) on a 1-shard and a 3-shard cluster, a replica per shard",
        [
            "shards",
            "snapshots/s",
            "client CPU us per snapshot",
            "primaries' CPU us per snapshot",
            "replicas' CPU us per snapshot",
        ],
        rows_shards,
    )
    report.note(
        "Every client ran in the same run, one after the other, on this machine's 2 cores, so the "
        "store's nodes, the client and the subscribers share them: CPU per unit is the figure to "
        "read, rates are lower bounds. 'resp' is a raw socket per primary parsed by "
        "read_functions.resp, as Ladder's change feed does; messages/s is bounded by the "
        "publisher (redis-py) too. Memory per book is Valkey's used_memory grown by "
        f"{args.memory_books} books on one node, divided by the books."
    )
    report.data.update(
        write=rows_write, read=rows_read, feed=rows_feed, shards=rows_shards, memory_per_book=per_book
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="ladder bench cluster_clients", description=__doc__.split("\n")[0], formatter_class=HelpFormatter
    )
    parser.add_argument("--books", type=int, default=200, help="books each writer and reader row uses")
    parser.add_argument("--seconds", type=float, default=5.0, help="how long each writer runs")
    parser.add_argument("--reads", type=int, default=5000, help="single HGETs per read row")
    parser.add_argument("--messages", type=int, default=50_000, help="per subscriber")
    parser.add_argument("--levels", type=int, default=100, help="levels a side of each snapshot")
    parser.add_argument("--fan-out", type=int, default=3, help="subscribers of the fan-out row")
    parser.add_argument(
        "--memory-books", type=int, default=2000, help="books stored to measure memory per book"
    )
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
