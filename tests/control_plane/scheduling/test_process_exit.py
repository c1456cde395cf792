"""``python -m control_plane`` ends within seconds of SIGTERM, with its normal status, when its
store is gone: the lease it would release is left to expire."""

from __future__ import annotations

import asyncio
import time

import redis.asyncio as redis

from control_plane.scheduling.runtime import SCHEDULER_LEASE
from control_plane.stores.redis import RedisControlStore
from ladder_process.clock import now_ms
from ladder_process.embedded_valkey import EmbeddedValkey
from tests.components import component, terminated

EXIT_BOUND_S = 3.0


async def test_the_control_process_whose_store_is_gone_leaves_at_once() -> None:
    with EmbeddedValkey() as store:
        env = {"LADDER_REDIS_URL": store.url, "LADDER_REDIS_CLUSTER": "false"}
        async with component("control_plane", "--log-level", "WARNING", env=env) as control:
            client = redis.Redis.from_url(store.url)
            try:
                deadline = time.monotonic() + 30
                while not await RedisControlStore(client).lease_held(SCHEDULER_LEASE, now_ms()):
                    assert control.returncode is None, f"the control process exited with {control.returncode}"
                    assert time.monotonic() < deadline, "the control process took no lease within 30 s"
                    await asyncio.sleep(0.1)
            finally:
                await client.aclose()
            store.stop()
            assert await terminated(control, EXIT_BOUND_S) == 0
