"""Keys, tenants and entitlements changed by another worker reach this one within 1 s."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as redis

from control_plane.models import OPERATOR
from read_functions.deps import Deps
from read_functions.tenancy.access import subscriptions_changed
from tests.read_functions.helpers import ETH, Stack, open_stack, settings, snapshot

PATH = "/v1/books/binance.com/ETHBTC"


async def status_of(stack: Stack, headers: dict[str, str]) -> int:
    async with stack.http.get(f"{stack.url}{PATH}", headers=headers) as r:
        await r.read()
        return r.status


async def seconds_until(stack: Stack, headers: dict[str, str], wanted: int) -> float:
    started = time.monotonic()
    while (status := await status_of(stack, headers)) != wanted:
        assert status == 200
        assert time.monotonic() - started < 3
        await asyncio.sleep(0.01)
    return time.monotonic() - started


async def other_worker(stack: Stack, clean_redis_url: str) -> Deps:
    return await Deps.open(settings(clean_redis_url))


async def test_revocation_elsewhere_is_seen_within_one_second(stack: Stack, clean_redis_url: str) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    for _ in range(5):
        assert await status_of(stack, headers) == 200
    await asyncio.sleep(0.5)  # let the cached key age
    other = await other_worker(stack, clean_redis_url)
    try:
        tenant_id = (await stack.deps.access.principal(headers["X-API-Key"], source="127.0.0.1")).tenant_id
        key_id = (await other.control.keys.list_for(tenant_id))[0].id
        await other.control.keys.revoke(None, key_id, actor=OPERATOR)
        assert await seconds_until(stack, headers, 401) <= 1.05
    finally:
        await other.close()


async def test_a_tenant_disabled_elsewhere_is_refused_within_one_second(
    stack: Stack, clean_redis_url: str
) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    assert await status_of(stack, headers) == 200
    other = await other_worker(stack, clean_redis_url)
    try:
        tenant_id = (await stack.deps.access.principal(headers["X-API-Key"], source="127.0.0.1")).tenant_id
        await other.control.tenants.update(tenant_id, {"disabled": True}, actor=OPERATOR)
        assert await seconds_until(stack, headers, 403) <= 1.05
    finally:
        await other.close()


async def test_a_subscription_dropped_behind_the_api_is_bounded_by_its_max_age(
    clean_redis_url: str, redis_client: redis.Redis
) -> None:
    stack = await open_stack(clean_redis_url, redis_client, entitlements_max_age_ms=1000)
    other = await other_worker(stack, clean_redis_url)
    try:
        headers = await stack.subscriber(ETH)
        await stack.publish(ETH, 0, snapshot(1))
        assert await status_of(stack, headers) == 200
        tenant_id = (await stack.deps.access.principal(headers["X-API-Key"], source="127.0.0.1")).tenant_id
        assert tenant_id is not None  # a subscriber's key belongs to a tenant
        await other.control.subscriptions.unsubscribe(
            tenant_id, "binance.com", "ETHBTC", actor=OPERATOR
        )  # no announcement
        assert await seconds_until(stack, headers, 403) <= 1.05
    finally:
        await other.close()
        await stack.close()


async def test_revocation_through_this_worker_is_immediate(stack: Stack) -> None:
    _, key = await stack.tenant()
    headers = {"X-API-Key": key}
    async with stack.http.get(f"{stack.url}/v1/keys", headers=headers) as r:
        key_id = (await r.json())["keys"][0]["id"]
    async with stack.http.delete(f"{stack.url}/v1/admin/keys/{key_id}", headers=stack.admin) as r:
        assert r.status == 204
    async with stack.http.get(f"{stack.url}/v1/keys", headers=headers) as r:
        assert r.status == 401
        assert key not in await r.text()


async def test_a_change_announced_by_another_worker_is_seen_at_once(
    stack: Stack, clean_redis_url: str
) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    assert await status_of(stack, headers) == 200
    other = await other_worker(stack, clean_redis_url)
    try:
        tenant_id = (await stack.deps.access.principal(headers["X-API-Key"], source="127.0.0.1")).tenant_id
        assert tenant_id is not None  # a subscriber's key belongs to a tenant
        await other.control.subscriptions.unsubscribe(tenant_id, "binance.com", "ETHBTC", actor=OPERATOR)
        await other.announce(subscriptions_changed(tenant_id))
        assert await seconds_until(stack, headers, 403) < 0.2
    finally:
        await other.close()
