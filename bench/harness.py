"""Processes a benchmark runs: a private Valkey, a venue, ingest nodes; and reading their metrics.

Every component runs as the same ``python -m <package>`` command production runs, under the
supervisor ``ladder up`` uses. Ingest nodes get their replicas by a direct write of their
assignment set (the control plane's scheduler is not part of what these benchmarks measure) and
serve their Prometheus endpoint on a free port, which is how a benchmark learns that every book is
synced and how many events a node has applied.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import aiohttp
import redis.asyncio as redis

from control_plane.models import ReplicaAssignment
from control_plane.stores.redis import RedisControlStore
from ingest_nodes.core.trusted_window import snapshot_limit
from ingest_nodes.venues.binance.limits import depth_weight
from ingest_nodes.venues.coinbase.products import parse_products
from ingest_nodes.venues.kraken.pairs import parse_asset_pairs
from ingest_nodes.venues.registry import ExchangeSpec, VenueProtocol
from ladder_cli.main import FAKE_ALPACA_CREDENTIALS, fake_venue_env
from ladder_cli.supervisor import Child, Supervisor, child_env
from ladder_process.embedded_valkey import EmbeddedValkey, free_port

EXCHANGES = {
    "binance.com": ExchangeSpec("binance.com", VenueProtocol.BINANCE_SPOT, "", ""),
    "binance.com-futures": ExchangeSpec("binance.com-futures", VenueProtocol.BINANCE_FUTURES, "", ""),
}
"""The venues the benchmarks drive, for their weights and limits (their URLs point at the fake venue)."""

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

Metrics = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass
class Node:
    """A running ingest node."""

    node_id: str
    child: Child
    metrics_url: str

    @property
    def pid(self) -> int:
        assert self.child.proc is not None
        return self.child.proc.pid


@dataclass
class Bench:
    """Valkey, a supervisor, and whatever the benchmark starts under it."""

    store: EmbeddedValkey = field(default_factory=EmbeddedValkey)
    supervisor: Supervisor = field(default_factory=Supervisor)
    env: dict[str, str] = field(default_factory=dict)
    redis_url: str = ""

    def __enter__(self) -> Bench:
        self.redis_url = self.store.start()
        self.env["LADDER_REDIS_URL"] = self.redis_url
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.supervisor.stop()
        self.store.stop()

    def start_fake_venue(self, *args: str) -> str:
        """``python -m fake_venue`` with ``args``; every venue URL of later nodes points at it."""
        url = self.supervisor.start(
            Child("fake-venue", ["fake_venue", "--port", "0", *args], child_env(**self.env), "FAKE_VENUE_URL")
        )
        self.env.update(fake_venue_env(url))
        return url

    def start_spot_venue(
        self,
        pairs: int,
        levels: int,
        alpaca_pairs: int = 0,
        okx_pairs: int = 0,
        bybit_pairs: int = 0,
        kraken_pairs: int = 0,
        coinbase_pairs: int = 0,
    ) -> str:
        """A fake venue listing ``pairs`` spot markets ``levels`` deep (and ``alpaca_pairs`` Alpaca
        crypto, ``okx_pairs`` OKX SPOT, ``bybit_pairs`` Bybit spot, ``kraken_pairs`` Kraken and
        ``coinbase_pairs`` Coinbase ones), nothing else, unthrottled."""
        return self.start_fake_venue(
            *("--spot-symbols", str(pairs), "--futures-symbols", "0", "--alpaca-symbols", str(alpaca_pairs)),
            *("--okx-symbols", str(okx_pairs), "--bybit-symbols", str(bybit_pairs)),
            *("--kraken-symbols", str(kraken_pairs), "--coinbase-symbols", str(coinbase_pairs)),
            *("--rate", "0", "--levels", str(levels)),
        )

    def start_node(self, node_id: str, **settings: str) -> Node:
        """An ingest node; ``settings`` are ``LADDER_*`` values (``head_levels="20"``)."""
        port = free_port()
        env = {**self.env, "LADDER_METRICS_PORT": str(port), "LADDER_HEARTBEAT_MS": "200"}
        env.update({f"LADDER_{key.upper()}": value for key, value in settings.items()})
        child = Child(
            node_id,
            ["ingest_nodes", "--node-id", node_id, "--log-level", "WARNING"],
            child_env(**env),
            ready_key="LADDER_INGEST_NODE",
        )
        self.supervisor.start(child)
        return Node(node_id, child, f"http://127.0.0.1:{port}/metrics")

    def stop_node(self, node: Node) -> None:
        node.child.terminate()
        node.child.wait(15)
        self.supervisor.children.remove(node.child)

    async def assign(
        self, node: Node, exchange: str, markets: Sequence[str], depth: int | Sequence[int] = 100
    ) -> None:
        """Replica 1 of each market on ``node``, ``depth`` levels deep (one depth, or one per market)."""
        depths = [depth] * len(markets) if isinstance(depth, int) else list(depth)
        client = redis.Redis.from_url(self.redis_url)
        try:
            replicas = [
                ReplicaAssignment(exchange, market, 1, node.node_id, d)
                for market, d in zip(markets, depths, strict=True)
            ]
            await RedisControlStore(client).replace_assignments(node.node_id, replicas)
        finally:
            await client.aclose()


async def scrape(http: aiohttp.ClientSession, url: str) -> Metrics:
    """Every sample of a Prometheus text endpoint, keyed by (name, labels)."""
    async with http.get(url) as response:
        text = await response.text()
    samples: Metrics = {}
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name, labels, value = match.groups()
        pairs = frozenset(_LABEL.findall(labels or ""))
        samples[(name, pairs)] = float(value)
    return samples


def total(samples: Metrics, name: str, **labels: str) -> float:
    """The sum of ``name`` over the samples whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(value for (n, pairs), value in samples.items() if n == name and wanted <= pairs)


async def wait_synced(
    http: aiohttp.ClientSession, node: Node, count: int, timeout_s: float = 120.0
) -> Mapping[str, float]:
    """Until the node reports ``count`` synced books; returns how long it took."""
    started = time.monotonic()
    while True:
        try:
            samples = await scrape(http, node.metrics_url)
        except aiohttp.ClientError:
            samples = {}
        synced = total(samples, "ladder_ingest_books", status="synced")
        if synced >= count:
            return {"seconds": time.monotonic() - started, "synced": synced}
        if time.monotonic() - started > timeout_s:
            raise TimeoutError(
                f"{node.node_id}: {synced:.0f} of {count} books synced after {timeout_s:.0f} s"
            )
        await asyncio.sleep(0.2)


def sync_timeout_s(exchange: str, books: int, depth: int) -> float:
    """How long a node may take to sync ``books`` books ``depth`` deep: their snapshots' weight at
    the venue's budget, plus two minutes (5000-level books need 250 weight each, so 50 of them need
    over two minutes of the budget alone)."""
    spec = EXCHANGES.get(exchange)
    if spec is None:
        return 120.0  # a venue without snapshots (Alpaca): books come whole on subscribe
    weight = books * depth_weight(spec.depth_tiers, snapshot_limit(spec.depth_tiers, depth))
    return 60.0 * weight / spec.weight_per_minute + 120.0


async def store_input_bytes(client: redis.Redis) -> int:
    """What clients have sent the store so far (its ``total_net_input_bytes``)."""
    return int((await client.info("stats"))["total_net_input_bytes"])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux ``/proc``; 0.0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stolen_seconds() -> float:
    """CPU time the host took from this machine's cores so far (a VM's *steal*: Linux
    ``/proc/stat``; 0.0 elsewhere): while it is taken, every process waits, whatever its load."""
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()
    except OSError:
        return 0.0
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def huge_page_mb(pid: int) -> float:
    """Memory of a process on transparent huge pages (Linux ``/proc``; 0.0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            kb = next(int(line.split()[1]) for line in rollup if line.startswith("AnonHugePages:"))
    except (OSError, StopIteration):
        return 0.0
    return kb / 1024


async def trading_pairs(
    http: aiohttp.ClientSession, venue_url: str, count: int, *, venue: str = "spot"
) -> list[str]:
    """The first ``count`` trading pairs of one of the (fake) venue's venues (Binance spot, Alpaca
    crypto, OKX SPOT, Bybit spot, Kraken, Coinbase), named as Ladder subscribes them."""
    if venue == "kraken":
        async with http.get(f"{venue_url}/0/public/AssetPairs") as response:
            markets = parse_asset_pairs(await response.read(), "kraken")
        pairs = [m.market for m in markets if m.tradable][:count]
    elif venue == "coinbase":
        async with http.get(f"{venue_url}/api/v3/brokerage/market/products") as response:
            markets = parse_products(await response.read(), "coinbase")
        pairs = [m.market for m in markets if m.tradable][:count]
    elif venue == "okx":
        async with http.get(f"{venue_url}/api/v5/public/instruments?instType=SPOT") as response:
            listed = (await response.json())["data"]
        pairs = [i["instId"] for i in listed if i["state"] == "live"][:count]
    elif venue == "bybit":
        async with http.get(f"{venue_url}/bybit-spot/v5/market/instruments-info?category=spot") as response:
            listed = (await response.json())["result"]["list"]
        pairs = [i["symbol"] for i in listed if i["status"] == "Trading"][:count]
    elif venue == "alpaca":
        key, _, secret = FAKE_ALPACA_CREDENTIALS.split(",")[0].partition(":")
        headers = {"APCA-API-KEY-ID": key, "APCA-API-SECRET-KEY": secret}
        async with http.get(f"{venue_url}/v2/assets?asset_class=crypto", headers=headers) as response:
            assets = await response.json()
        pairs = [a["symbol"] for a in assets if a["tradable"]][:count]
    else:
        async with http.get(f"{venue_url}/api/v3/exchangeInfo") as response:
            info = await response.json()
        pairs = [s["symbol"] for s in info["symbols"] if s["status"] == "TRADING"][:count]
    if len(pairs) < count:
        raise RuntimeError(f"the fake venue lists only {len(pairs)} trading pairs")
    return pairs


def run(main: Coroutine[Any, Any, None]) -> None:
    """Run a benchmark's coroutine on uvloop when it is installed, as the servers do."""
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - uvloop is a dependency where it builds
        pass
    asyncio.run(main)
