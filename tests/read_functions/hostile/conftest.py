"""One real read server (``python -m read_functions``, one worker) for the hostile-client suite.

Its timeouts are short so that a test can wait them out; everything else is as deployed. The
worker is a process of its own, so what an attack costs it (time, resident memory) is measured
on it alone, never on the test's own process.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
import requests

from book_store.catalog import MarketCatalog
from book_store.connect import opened, store_client
from book_store.writer import BookWriter
from tests.read_functions.helpers import ADMIN_KEY, ETH, MARKETS, PEPPER, ServerProcess, snapshot
from tests.read_functions.hostile.attacks import Target
from tests.stores import TestStore

HOSTILE_DB = 5
TIMEOUT_S = 2.0
"""The server's request, keep-alive and write timeouts (the coarse clock adds up to 1 s)."""
BOOK = f"/v1/books/{ETH.exchange}/{ETH.market}"


@pytest.fixture(scope="package")
def target(test_store: TestStore) -> Iterator[Target]:
    with test_store.own(HOSTILE_DB) as url:
        yield from _serve(url)


def _serve(url: str) -> Iterator[Target]:
    asyncio.run(_seed(url))
    env = {
        "LADDER_REDIS_URL": url,
        "LADDER_ADMIN_KEY": ADMIN_KEY,
        "LADDER_PEPPER": PEPPER,
        "LADDER_HUGE_PAGES": "false",
        "LADDER_MAX_SILENCE_MS": "3600000",  # one snapshot stays servable for the whole suite
        "LADDER_REQUEST_TIMEOUT_S": str(TIMEOUT_S),
        "LADDER_KEEPALIVE_TIMEOUT_S": str(TIMEOUT_S),
        "LADDER_WRITE_TIMEOUT_S": str(TIMEOUT_S),
    }
    server = ServerProcess(["--compat-port", "0"], env)
    try:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        limits = {"max_markets": 5, "max_replicas": 2, "rate_limit_rps": 100_000, "burst": 100_000}
        tenant = requests.post(
            f"{server.url}/v1/admin/tenants", headers=admin, json={"name": "hostile", **limits}, timeout=5
        ).json()
        key = requests.post(f"{server.url}/v1/admin/tenants/{tenant['id']}/keys", headers=admin, timeout=5)
        tenant_key = key.json()["key"]
        body = {"exchange": ETH.exchange, "market": ETH.market}
        subscribed = requests.post(
            f"{server.url}/v1/subscriptions", headers={"X-API-Key": tenant_key}, json=body, timeout=5
        )
        assert subscribed.status_code == 201, subscribed.text
        asyncio.run(_publish(url))
        deadline = time.monotonic() + 10
        while (
            requests.get(f"{server.url}{BOOK}", headers={"X-API-Key": tenant_key}, timeout=5).status_code
            != 200
        ):
            assert time.monotonic() < deadline, "the book never became readable"
            time.sleep(0.1)
        yield Target(server.url, server.urls["LADDER_COMPAT_URL"], server.proc.pid, tenant_key)
    finally:
        server.stop()


async def _seed(url: str) -> None:
    """The test markets in the (emptied) store's catalog."""
    store = await opened(store_client(url, cluster=None))
    for exchange in {m.exchange for m in MARKETS}:
        await MarketCatalog(store).replace(exchange, [m for m in MARKETS if m.exchange == exchange])
    await store.aclose()


async def _publish(url: str) -> None:
    """One synced snapshot of ETHBTC, as an ingest node would write it."""
    store = await opened(store_client(url, cluster=None))
    writer = BookWriter(store)
    writer.put(ETH, 0, snapshot(11))
    await writer.drain()
    await writer.close()
    await store.aclose()
