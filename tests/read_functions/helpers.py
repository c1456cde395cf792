"""A read API in this process on a real port, a real Valkey behind it, and a writer to feed it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import jsonschema
from pydantic import SecretStr

from book_store.catalog import MarketCatalog, MarketInfo
from book_store.codec import BookStatus, SnapshotMeta, encode_snapshot
from book_store.connect import StoreClient
from book_store.schema import BookKey
from book_store.writer import BookWriter
from ladder_process.clock import now_ms
from read_functions.app.dispatch import Dispatcher
from read_functions.app.routing import Route, Router
from read_functions.app.schemas import COMPONENTS
from read_functions.deps import Deps
from read_functions.handlers.ubdcc.tenant import CompatTenant
from read_functions.routes import COMPAT_ROUTES, ROUTES
from read_functions.server.http1 import Http1Server
from read_functions.server.huge_pages import environment_with_huge_pages, thp_mode
from read_functions.server.workers import bind
from read_functions.settings import ReadSettings
from tests.stores import kill_subscribers

ADMIN_KEY = "ldr_admin_test_key_0123456789"
PEPPER = "pepper-for-tests-0123456789abcdef"
ETH = BookKey("binance.com", "ETHBTC")
BTC = BookKey("binance.com", "BTCUSDT")
ALPACA = BookKey("alpaca-crypto", "BTC/USD")
MARKETS = [
    MarketInfo("binance.com", "ETHBTC", "TRADING", "ETH", "BTC"),
    MarketInfo("binance.com", "BTCUSDT", "TRADING", "BTC", "USDT"),
    MarketInfo("alpaca-crypto", "BTC/USD", "TRADING", "BTC", "USD"),
]


def levels(prices: Sequence[str], qty: str = "1.0") -> list[bytes]:
    return [f'["{p}","{qty}"]'.encode() for p in prices]


def snapshot(
    update_id: int,
    replica: int = 0,
    *,
    status: BookStatus = BookStatus.SYNCED,
    publish_time: int | None = None,
    bids: Sequence[bytes] | None = None,
    asks: Sequence[bytes] | None = None,
    flags: int = 0,
    node: int = 0,
) -> bytes:
    published = now_ms() if publish_time is None else publish_time
    meta = SnapshotMeta(update_id, published - 2, published - 1, published, replica, status, node=node)
    bids = levels([f"{100 - i}.{update_id % 100:02d}" for i in range(5)]) if bids is None else bids
    asks = levels([f"{101 + i}.{update_id % 100:02d}" for i in range(5)]) if asks is None else asks
    return encode_snapshot(meta, bids, asks, flags)


def validate(payload: Any, schema_name: str) -> None:
    """Check a response body against the schema the OpenAPI document publishes."""
    schema = {"$ref": f"#/components/schemas/{schema_name}", "components": {"schemas": COMPONENTS}}
    jsonschema.validate(payload, schema)


@dataclass
class Stack:
    deps: Deps
    url: str
    compat_url: str
    http: aiohttp.ClientSession
    store: StoreClient
    writer: BookWriter
    servers: list[Http1Server]

    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}

    async def publish(self, book: BookKey, replica: int, raw: bytes, *, deep: bool = False) -> None:
        self.writer.put(book, replica, raw, deep=deep)
        await self.writer.drain()

    async def tenant(self, **limits: object) -> tuple[str, str]:
        """A new tenant and a key for it, through the admin routes."""
        fields = {
            "name": f"t{time.perf_counter_ns()}",
            "max_markets": 10,
            "max_replicas": 3,
            "rate_limit_rps": 100_000,
            "burst": 100_000,
            **limits,
        }
        async with self.http.post(f"{self.url}/v1/admin/tenants", json=fields, headers=self.admin) as r:
            assert r.status == 201, await r.text()
            tenant_id = (await r.json())["id"]
        async with self.http.post(f"{self.url}/v1/admin/tenants/{tenant_id}/keys", headers=self.admin) as r:
            assert r.status == 201, await r.text()
            return tenant_id, (await r.json())["key"]

    async def subscriber(self, *books: BookKey, **limits: object) -> dict[str, str]:
        """Headers of a new tenant subscribed to ``books``."""
        _, key = await self.tenant(**limits)
        headers = {"X-API-Key": key}
        for book in books:
            body = {"exchange": book.exchange, "market": book.market}
            async with self.http.post(f"{self.url}/v1/subscriptions", json=body, headers=headers) as r:
                assert r.status == 201, await r.text()
        return headers

    async def drop_feed(self) -> None:
        """Kill the change feed's connection and wait until the book cache has dropped everything."""
        resets = self.deps.books.resets
        await kill_subscribers(self.store)
        deadline = time.monotonic() + 5
        while self.deps.books.resets == resets:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)

    async def close(self) -> None:
        await self.http.close()
        for server in self.servers:
            await server.close()
        await self.deps.close()
        await self.writer.close()


def settings(redis_url: str, **overrides: Any) -> ReadSettings:
    return ReadSettings(
        redis_url=redis_url, admin_key=SecretStr(ADMIN_KEY), pepper=SecretStr(PEPPER), **overrides
    )


async def open_stack(
    redis_url: str, store: StoreClient, markets: Sequence[MarketInfo] = MARKETS, **overrides: Any
) -> Stack:
    """The read API over ``redis_url`` (``store`` is a client of it), ``markets`` in its catalog."""
    for exchange in sorted({m.exchange for m in markets}):
        await MarketCatalog(store).replace(exchange, [m for m in markets if m.exchange == exchange])
    deps = await Deps.open(settings(redis_url, **overrides))
    main, main_url = await serve(deps, ROUTES)
    # The compat listener as a UBDCC user runs it: keyless clients may create and stop books.
    compat = CompatTenant(deps, deps.settings.compat_tenant, keyless_changes=True)
    compat_server, compat_url = await serve(deps, COMPAT_ROUTES, compat)
    http = aiohttp.ClientSession(auto_decompress=False, skip_auto_headers=("Accept-Encoding",))
    return Stack(deps, main_url, compat_url, http, store, BookWriter(store), [main, compat_server])


async def serve(
    deps: Deps, routes: tuple[Route[Deps], ...], source: CompatTenant | None = None
) -> tuple[Http1Server, str]:
    """A listener on a free loopback port answering ``routes`` (as ``source``'s caller); its URL."""
    listener = bind("test", "127.0.0.1", 0, 1, None)
    server = Http1Server.for_api(Dispatcher(Router(routes), deps, source), deps.settings, secure=False)
    await server.start(listener.sockets[0], None)
    return server, listener.url


class ServerProcess:
    """``python -m read_functions`` in a subprocess; its announced URLs; stopped with SIGTERM.

    Everything it prints is kept in :attr:`output` (read as it comes, so that a server that logs
    much never blocks on a full pipe)."""

    def __init__(self, args: list[str], env: dict[str, str], timeout_s: float = 30.0) -> None:
        import os
        import subprocess
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "read_functions", "--host", "127.0.0.1", "--port", "0", *args],
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.urls: dict[str, str] = {}
        self.output: list[str] = []
        deadline = time.monotonic() + timeout_s
        wanted = {"LADDER_READ_URL"} | ({"LADDER_COMPAT_URL"} if "--compat-port" in args else set())
        assert self.proc.stdout is not None
        while not wanted <= self.urls.keys():
            line = self.proc.stdout.readline()
            if not line or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("read server did not start:\n" + "".join(self.output))
            self.output.append(line)
            name, _, value = line.strip().partition("=")
            if name in wanted:
                self.urls[name] = value
        self._reader = threading.Thread(target=self._keep_output, daemon=True)
        self._reader.start()

    def _keep_output(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)

    @property
    def url(self) -> str:
        return self.urls["LADDER_READ_URL"]

    def stop(self, timeout_s: float = 15.0) -> int:
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        status = self.proc.wait(timeout_s)
        if hasattr(self, "_reader"):
            self._reader.join(timeout_s)  # every line it printed is in output
        return status


def machine_has_huge_pages() -> bool:
    """True where the read server re-executes itself with huge pages (given no tunables)."""
    return environment_with_huge_pages({}, thp_mode()) is not None


def process_tunables(pid: int) -> list[bytes]:
    """The GLIBC_TUNABLES a running process was executed with."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return [item for item in environ if item.startswith(b"GLIBC_TUNABLES=")]
