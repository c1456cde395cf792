"""The SDK against a real running stack: every method, sync and async, retries, stream reconnects, HTTPS."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import trustme
from ladder_sdk import (
    AsyncLadder,
    AsyncLadderAdmin,
    AuthenticationError,
    Book,
    Ladder,
    LadderAdmin,
    NotFoundError,
    RateLimitError,
    RetryPolicy,
)

from tests.e2e.stack import ADMIN_KEY, Stack
from tests.e2e.tcp_proxy import CuttableProxy

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("stack")]


async def resolve(value: Any) -> Any:
    """The same scenario drives both clients: await what the async client returns."""
    return await value if inspect.isawaitable(value) else value


async def take(stream: Iterator[Book] | AsyncIterator[Book], n: int) -> list[Book]:
    books = []
    if isinstance(stream, AsyncIterator):
        async for book in stream:
            books.append(book)
            if len(books) == n:
                break
        await stream.aclose()  # type: ignore[attr-defined]
    else:
        for book in stream:
            books.append(book)
            if len(books) == n:
                break
        stream.close()  # type: ignore[attr-defined]
    return books


async def every_method(admin: Any, make_client: Any, name: str) -> None:
    tenant = await resolve(
        admin.create_tenant(name, max_markets=5, max_replicas=2, rate_limit_rps=500, burst=500)
    )
    assert tenant.name == name and tenant.max_replicas == 2
    assert tenant.id in [t.id for t in await resolve(admin.tenants())]
    assert (await resolve(admin.tenant(tenant.id))).name == name
    assert (await resolve(admin.update_tenant(tenant.id, max_markets=6))).max_markets == 6
    created = await resolve(admin.create_tenant_key(tenant.id))
    assert created.key not in repr(created)
    assert [k.id for k in await resolve(admin.tenant_keys(tenant.id))] == [created.id]
    assert await resolve(admin.nodes())
    assert any(entry for entry in await resolve(admin.audit()))

    ladder = make_client(created.key)
    try:
        assert "binance.com" in await resolve(ladder.exchanges())
        markets = await resolve(ladder.markets("binance.com"))
        assert "ETHBTC" in {m.market for m in markets}
        sub = await resolve(ladder.subscribe("binance.com", "LTCUSDT", replicas=2))
        assert (sub.exchange, sub.market, sub.replicas) == ("binance.com", "LTCUSDT", 2)
        # The book is not synced yet: the SDK retries the server's 503 (with Retry-After) by itself.
        book = await resolve(ladder.book("binance.com", "LTCUSDT", depth=5))
        assert book.status == "synced" and len(book.bids) <= 5
        assert isinstance(book.best_bid.price, Decimal) and book.spread is not None and book.spread > 0
        assert book.publish_time.tzinfo is not None
        assert (await resolve(ladder.bids("binance.com", "LTCUSDT", depth=3))).asks == ()
        assert (await resolve(ladder.asks("binance.com", "LTCUSDT", depth=3))).bids == ()
        assert [s.market for s in await resolve(ladder.subscriptions())] == ["LTCUSDT"]
        streamed = await take(ladder.stream("binance.com", "LTCUSDT", depth=5), 3)
        assert [b.update_id for b in streamed] == sorted({b.update_id for b in streamed})
        assert (await resolve(ladder.usage())).requests_total > 0
        second = await resolve(ladder.create_key())
        assert len(await resolve(ladder.keys())) == 2
        await resolve(ladder.revoke_key(second.id))
        await resolve(ladder.unsubscribe("binance.com", "LTCUSDT"))
        assert await resolve(ladder.subscriptions()) == []
        with pytest.raises(NotFoundError):
            await resolve(ladder.book("binance.com", "NOSUCHMARKET"))
        await resolve(admin.revoke_key(created.id))
        with pytest.raises(AuthenticationError):
            await resolve(ladder.subscriptions())
    finally:
        await resolve(ladder.aclose() if isinstance(ladder, AsyncLadder) else ladder.close())


def test_every_method_sync(stack: Stack) -> None:
    with LadderAdmin(ADMIN_KEY, base_url=stack.api) as admin:
        asyncio.run(every_method(admin, lambda key: Ladder(key, base_url=stack.api), "sdk-sync"))


async def test_every_method_async(stack: Stack) -> None:
    async with AsyncLadderAdmin(ADMIN_KEY, base_url=stack.api) as admin:
        await every_method(admin, lambda key: AsyncLadder(key, base_url=stack.api), "sdk-async")


def test_rate_limit_429_is_retried_after_retry_after(stack: Stack) -> None:
    key = stack.tenant_key("sdk-429", rate_limit_rps=2, burst=2)
    with Ladder(key, base_url=stack.api, retry_policy=RetryPolicy(max_retries=0)) as impatient:
        with pytest.raises(RateLimitError) as raised:
            for _ in range(10):
                impatient.subscriptions()
        assert raised.value.retry_after is not None and raised.value.request_id
    with Ladder(key, base_url=stack.api, retry_policy=RetryPolicy(max_retries=5)) as patient:
        started = time.monotonic()
        for _ in range(6):
            patient.subscriptions()  # every call succeeds, paced by the server's Retry-After
        assert time.monotonic() - started > 1.0


def test_stream_reconnects_and_resumes_after_the_connection_drops(stack: Stack) -> None:
    key = stack.tenant_key("sdk-stream")
    stack.call(key, "POST", "/v1/subscriptions", json={"exchange": "binance.com", "market": "ADAUSDT"})
    stack.wait_synced(key, "binance.com", "ADAUSDT")
    api = urlsplit(stack.api)
    proxy = CuttableProxy(api.hostname or "127.0.0.1", api.port or 80)
    try:
        with Ladder(key, base_url=f"http://127.0.0.1:{proxy.port}") as ladder:
            seen: list[int] = []
            for book in ladder.stream("binance.com", "ADAUSDT", depth=5):
                seen.append(book.update_id)
                if len(seen) == 3:
                    proxy.cut()
                if len(seen) == 8:
                    break
        assert proxy.accepted >= 2, "the stream reconnected"
        assert seen == sorted(set(seen)), "never an older or repeated snapshot after the reconnect"
    finally:
        proxy.close()


def test_https_with_a_custom_ca(stack: Stack, tmp_path: Path) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_path, key_path, ca_path = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(str(cert_path))
    cert.private_key_pem.write_to_path(str(key_path))
    ca.cert_pem.write_to_path(str(ca_path))
    args = ["read_functions", "--host", "127.0.0.1", "--port", "0", "--tls-cert", str(cert_path),
            "--tls-key", str(key_path)]  # fmt: skip
    url = stack.add_child("read-tls", args, "LADDER_READ_URL")
    assert url.startswith("https://")
    key = stack.tenant_key("sdk-tls")
    with Ladder(key, base_url=url, verify=str(ca_path)) as ladder:
        assert ladder.subscriptions() == []
    from ladder_sdk import APIConnectionError

    with Ladder(key, base_url=url) as untrusting, pytest.raises(APIConnectionError):
        untrusting.subscriptions()
