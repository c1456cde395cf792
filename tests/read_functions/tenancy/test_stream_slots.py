"""Stream slots in the store: a tenant's max_streams over every worker, given back, renewed, lapsed."""

from __future__ import annotations

import asyncio

import pytest

from book_store.connect import StoreClient
from control_plane.models import Tenant
from read_functions.tenancy.stream_slots import StreamSlots, TooManyStreamsError, slots_key


def tenant(max_streams: int, tenant_id: str = "tnt_streams") -> Tenant:
    return Tenant(tenant_id, "t", 10, 2, 10.0, 20, False, 0, max_streams=max_streams)


async def test_a_tenant_s_slots_are_shared_by_every_worker(redis_client: StoreClient) -> None:
    one, two = StreamSlots(redis_client), StreamSlots(redis_client)
    limited = tenant(3)
    held = [await one.take(limited), await two.take(limited), await one.take(limited)]
    with pytest.raises(TooManyStreamsError) as refused:
        await two.take(limited)
    assert refused.value.code == "too_many_streams" and refused.value.retry_after_s == 5.0
    assert "3 open streams" in str(refused.value)
    assert await one.open_streams(limited.id) == 3 and (one.held, two.held) == (2, 1)
    await two.take(tenant(3, "tnt_other"))  # another tenant's count is its own
    one.release(held[0])
    one.release(held[0])  # twice is once
    await asyncio.sleep(0.05)  # given back in the store at once, not at the next flush
    await two.take(limited)
    assert await one.open_streams(limited.id) == 3
    with pytest.raises(TooManyStreamsError):
        await one.take(limited)


async def test_zero_max_streams_refuses_every_stream(redis_client: StoreClient) -> None:
    with pytest.raises(TooManyStreamsError):
        await StreamSlots(redis_client).take(tenant(0))


async def test_a_dead_worker_s_slots_lapse_and_a_living_one_renews_its_own(redis_client: StoreClient) -> None:
    living, dead = StreamSlots(redis_client, ttl_s=0.6), StreamSlots(redis_client, ttl_s=0.6)
    limited = tenant(2)
    await living.take(limited)
    await dead.take(limited)
    for _ in range(5):  # 1 s: the dead worker's slot lapses, the renewed one stays
        await asyncio.sleep(0.2)
        await living.flush()
    assert await living.open_streams(limited.id) == 1
    await redis_client.delete(slots_key(limited.id))  # a book store that restarted empty
    await asyncio.sleep(0.2)
    await living.flush()
    assert await living.open_streams(limited.id) == 1
