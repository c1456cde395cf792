"""A whole Ladder stack for the benchmarks that read it the way tenants do: ``load`` and ``binance``.

The fake venue (activity skewed, ``--rate-skew``), the control plane, ingest nodes and read workers,
all as the same ``python -m <package>`` commands production runs, over one private Valkey (control
data and books in one store, as a small deployment has them). Unlike the other benchmarks, nothing
is written behind Ladder's back: a tenant subscribes through the API (``POST
/v1/subscriptions/bulk``), the control plane places the replicas, and the nodes sync them inside
the venue's weight budget.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import aiohttp
import redis.asyncio as redis

from bench.harness import EXCHANGES, Bench, Node
from bench.read import ADMIN_KEY, PEPPER, children
from bench.sync import Progress, watch
from ladder_cli.supervisor import Child, child_env

VENUE_OF = {"binance.com": "spot", "binance.com-futures": "futures"}
"""The fake venue's name (truth endpoint, stats) of each exchange the stack serves."""
STORE_TIMEOUT_S = 10.0
EXCHANGE_INFO = {"binance.com": "/api/v3/exchangeInfo", "binance.com-futures": "/fapi/v1/exchangeInfo"}


@dataclass
class Stack:
    """What a benchmark reads and measures of a running stack."""

    bench: Bench
    venue_url: str
    read_url: str
    nodes: list[Node]
    books: dict[str, list[str]]
    """Subscribed markets per exchange, busiest first (the venue's catalogue order is its skew)."""
    key: str = ""
    redis: redis.Redis = field(init=False)

    def __post_init__(self) -> None:
        # A store that stops answering fails the benchmark's reads instead of holding them forever.
        self.redis = redis.Redis.from_url(self.bench.redis_url, socket_timeout=STORE_TIMEOUT_S)

    def venue_pid(self) -> int:
        """The fake venue's process (not Ladder's: its CPU is reported apart)."""
        return next(c.proc.pid for c in self.bench.supervisor.children if c.name == "fake-venue" and c.proc)

    def pids(self) -> dict[str, list[int]]:
        """The stack's processes by kind (the venue and the load generators are not Ladder's)."""
        by_name = {child.name: child.proc.pid for child in self.bench.supervisor.children if child.proc}
        read_parent = by_name["read"]
        return {
            "ingest": [node.pid for node in self.nodes],
            "read": [read_parent, *children(read_parent)],
            "control": [by_name["control"]],
            "store": [pid] if (pid := self.bench.store.pid) else [],
        }


def start(bench: Bench, markets: int, replicas: int, workers: int, venue_args: list[str]) -> Stack:
    """Venue, control plane, ``replicas`` ingest nodes and the read API; nothing subscribed yet."""
    env = {"LADDER_ADMIN_KEY": ADMIN_KEY, "LADDER_PEPPER": PEPPER}
    bench.env.update(env)
    venue = bench.start_fake_venue(
        *("--spot-symbols", str(markets), "--futures-symbols", str(markets), "--alpaca-symbols", "1"),
        *venue_args,
    )
    bench.supervisor.start(Child("control", ["control_plane"], child_env(**bench.env)))
    nodes = [
        bench.start_node(
            f"node-{i + 1}",
            streams_per_connection="1024",
            exchanges=",".join(EXCHANGES),
            capacity=str(2 * markets + 100),
        )
        for i in range(replicas)
    ]
    read_env = child_env(**bench.env)
    read_args = ["read_functions", "--host", "127.0.0.1", "--port", "0", "--workers", str(workers),
                 "--log-level", "WARNING"]  # fmt: skip
    read_url = bench.supervisor.start(Child("read", read_args, read_env, "LADDER_READ_URL"))
    return Stack(bench, venue, read_url, nodes, {})


async def listed(http: aiohttp.ClientSession, venue_url: str, exchange: str, count: int) -> list[str]:
    """The first ``count`` trading markets of the venue's catalogue, in its order (busiest first)."""
    async with http.get(venue_url + EXCHANGE_INFO[exchange]) as response:
        info = await response.json()
    names = [s["symbol"] for s in info["symbols"] if s["status"] == "TRADING"][:count]
    if len(names) < count:
        raise RuntimeError(f"{exchange}: the fake venue lists only {len(names)} trading markets")
    return names


def spread(names: list[str], share: float) -> list[str]:
    """``share`` of ``names`` (busiest first), spread evenly over the ranks, so that a share of the
    markets makes about that share of the events."""
    return [name for i, name in enumerate(names) if int((i + 1) * share) > int(i * share)]


async def subscribe(stack: Stack, markets: int, replicas: int, depth: int, share: float = 1.0) -> None:
    """A tenant (limits far above what one box can ask) that bulk-subscribes ``share`` of the first
    ``markets`` markets of each exchange (``spread``) with ``replicas`` replicas ``depth`` deep;
    ``stack.key`` is its key."""
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    fields = {"name": "bench", "max_markets": markets * len(EXCHANGES), "max_replicas": replicas,
              "max_depth": max(depth, 100), "rate_limit_rps": 1_000_000, "burst": 10_000_000}  # fmt: skip
    async with aiohttp.ClientSession(stack.read_url) as http:
        async with http.post("/v1/admin/tenants", json=fields, headers=admin) as r:
            tenant_id = (await r.json())["id"]
        async with http.post(f"/v1/admin/tenants/{tenant_id}/keys", headers=admin) as r:
            stack.key = (await r.json())["key"]
        headers = {"X-API-Key": stack.key}
        for exchange in EXCHANGES:
            names = spread(await listed(http, stack.venue_url, exchange, markets), share)
            deadline = time.monotonic() + 150
            while True:  # until the read API's catalog (the nodes publish it; read workers reload it
                # every LADDER_CATALOG_REFRESH_S, 60 s) knows every market
                body = {"exchange": exchange, "markets": names, "replicas": replicas, "depth": depth}
                async with http.post("/v1/subscriptions/bulk", json=body, headers=headers) as r:
                    answer = await r.json()
                if r.status == 200 and not answer["failed"]:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"bulk subscribe of {exchange}: {r.status} {str(answer)[:300]}")
                await asyncio.sleep(1.0)
            stack.books[exchange] = names


async def wait_synced(stack: Stack, timeout_s: float) -> Progress:
    """Until every node holds its replica of every subscribed book synced (the control plane places
    one replica of each book per node); the progress over time."""
    progress = Progress(time.monotonic())
    wanted = min(len(names) for names in stack.books.values())
    await watch(stack.redis, stack.nodes, wanted, progress, timeout_s)
    return progress
