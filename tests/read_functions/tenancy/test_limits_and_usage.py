"""Per-tenant rate limits (leased token buckets) and usage counting."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as redis

from book_store.connect import store_client
from control_plane.models import Tenant
from ladder_process.clock import now_ms
from ladder_process.embedded_valkey import free_port
from read_functions.tenancy.rate_limit import RateLimiter, TenantRateLimitedError
from tests.read_functions.helpers import ETH, Stack, snapshot, validate
from tests.stores import command_calls


def tenant(rate: float, burst: int, tenant_id: str = "tnt_limits") -> Tenant:
    return Tenant(tenant_id, "limits", 10, 1, rate, burst, False, 0)


async def test_429_with_retry_after_and_ratelimit_headers(stack: Stack) -> None:
    headers = await stack.subscriber(ETH, rate_limit_rps=1, burst=5)
    await stack.publish(ETH, 0, snapshot(1))
    statuses = []
    for _ in range(8):
        async with stack.http.get(f"{stack.url}/v1/books/binance.com/ETHBTC", headers=headers) as r:
            statuses.append(r.status)
            last_headers, last_body = r.headers, await r.json()
    # the subscriber() call itself spent one token; five is the burst
    assert statuses.count(200) == 4 and statuses[4:] == [429] * 4, statuses
    assert last_body["error"]["code"] == "rate_limited"
    validate(last_body, "Error")
    assert int(last_headers["Retry-After"]) >= 1
    assert last_headers["RateLimit-Limit"] == "5" and last_headers["RateLimit-Remaining"] == "0"
    assert int(last_headers["RateLimit-Reset"]) >= 1


async def test_leases_keep_the_fleet_within_one_lease(redis_client: redis.Redis) -> None:
    """Two workers share a bucket: together they never exceed burst + one lease each."""
    limited = tenant(rate=0.01, burst=100)  # the bucket barely refills during the test
    workers = [RateLimiter(redis_client, lease_window_s=1.0), RateLimiter(redis_client, lease_window_s=1.0)]
    lease = workers[0].lease_size(limited)
    granted = 0
    for _ in range(150):
        for worker in workers:
            try:
                await worker.take(limited)
                granted += 1
            except TenantRateLimitedError:
                pass
    assert 100 - 2 * lease <= granted <= 100
    assert lease == 1  # 1 s of 0.01 tokens/s rounds up to one token per lease


async def test_a_lease_spares_the_store_a_round_trip_per_request(redis_client: redis.Redis) -> None:
    fast = tenant(rate=10_000, burst=10_000, tenant_id="tnt_fast")
    limiter = RateLimiter(redis_client, lease_window_s=0.05)
    assert limiter.lease_size(fast) == 500
    before = (await command_calls(redis_client)).get("evalsha", 0)
    for _ in range(2000):
        await limiter.take(fast)
    await asyncio.sleep(0.05)
    after = (await command_calls(redis_client)).get("evalsha", 0)
    assert 2 <= after - before <= 10


async def test_usage_is_counted_and_flushed(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    for _ in range(7):
        async with stack.http.get(f"{stack.url}/v1/books/binance.com/ETHBTC", headers=headers) as r:
            assert r.status == 200
    for path in ("/v1/books/binance.com/BTCUSDT", "/v1/books/binance.com/NOSUCH"):  # 403, 404
        async with stack.http.get(f"{stack.url}{path}", headers=headers) as r:
            assert r.status >= 400
    await stack.deps.usage.flush()
    async with stack.http.get(f"{stack.url}/v1/usage", headers=headers) as r:
        usage = await r.json()
    validate(usage, "Usage")
    # the subscription, nine reads and this usage request itself; two of them errors
    assert usage["requests_total"] == 11
    assert usage["minutes"][-1] == {"minute": now_ms() // 60_000 * 60_000, "requests": 11, "errors": 2}


async def test_a_bucket_out_of_reach_is_spent_locally_at_the_tenant_s_rate() -> None:
    """The store of the bucket does not answer (its shard failing over): the worker spends a
    bucket of its own at the tenant's rate and burst rather than refuse the tenant everywhere."""
    unreachable = store_client(f"redis://127.0.0.1:{free_port()}/0", cluster=False)  # as a worker's fails
    limiter = RateLimiter(unreachable, lease_window_s=0.05)
    limited = tenant(rate=0.5, burst=10)
    for _ in range(10):
        await limiter.take(limited)
    with pytest.raises(TenantRateLimitedError) as refused:
        await limiter.take(limited)
    assert 0 < refused.value.retry_after_s <= 2  # one token comes back in 2 s
    await asyncio.sleep(refused.value.retry_after_s + 0.05)
    await limiter.take(limited)
    await unreachable.aclose()
