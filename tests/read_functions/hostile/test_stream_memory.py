"""What streams cost a read worker: many on one key are capped, open ones are small, closed ones free.

Measured on the worker process alone (its resident set), with streams opened by hand on raw
sockets, half of them offering permessage-deflate as browsers do.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import requests

from tests.read_functions.helpers import ADMIN_KEY, ETH
from tests.read_functions.hostile.attacks import MIB, Target
from tests.read_functions.hostile.raw_ws import CLOSE, DEFLATE, TEXT, client_frame, read_frame, upgrade
from tests.read_functions.wire import Connection, Reply, connect, read_reply

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def tenant_key(target: Target, name: str, **limits: int) -> str:
    """A key of a new tenant subscribed to ETHBTC, with ``limits``."""
    fields: dict[str, Any] = {
        "name": name,
        "max_markets": 5,
        "rate_limit_rps": 100_000,
        "burst": 100_000,
        **limits,
    }
    tenant = requests.post(f"{target.url}/v1/admin/tenants", headers=ADMIN, json=fields, timeout=10).json()
    created = requests.post(f"{target.url}/v1/admin/tenants/{tenant['id']}/keys", headers=ADMIN, timeout=10)
    key = str(created.json()["key"])
    body = {"exchange": ETH.exchange, "market": ETH.market}
    requests.post(f"{target.url}/v1/subscriptions", headers={"X-API-Key": key}, json=body, timeout=10)
    return key


def usage_of(target: Target, key: str) -> dict[str, Any]:
    answer: dict[str, Any] = requests.get(
        f"{target.url}/v1/usage", headers={"X-API-Key": key}, timeout=10
    ).json()
    return answer


@contextlib.asynccontextmanager
async def opened(
    target: Target, key: str, count: int, *, deflate: bool | None = None
) -> AsyncIterator[list[tuple[Connection, Reply]]]:
    """``count`` streams (offering deflate, or not, or every other one when ``deflate`` is None),
    each with its answer; an accepted one has received its first book. They are opened 50 at a
    time, and one answered 503 (a worker shedding load on a busy machine: not what is tested) is
    asked again after its Retry-After, as a client does; all are closed on the way out."""
    async with contextlib.AsyncExitStack() as stack:

        async def one(i: int) -> tuple[Connection, Reply]:
            offers = deflate if deflate is not None else bool(i % 2)
            for _ in range(10):
                reader, writer = await stack.enter_async_context(connect(target.url))
                writer.write(upgrade(key, *((DEFLATE,) if offers else ())))
                reply = await read_reply(reader, within_s=30)
                if reply.status != 503:
                    break
                await asyncio.sleep(float(reply.headers.get("retry-after", "1")))
            if reply.status == 101:
                assert (await read_frame(reader, within_s=30)).opcode == TEXT
            return (reader, writer), reply

        streams: list[tuple[Connection, Reply]] = []
        for start in range(0, count, 50):
            streams += await asyncio.gather(*(one(i) for i in range(start, min(count, start + 50))))
        yield streams
        for (_, writer), reply in streams:
            if reply.status == 101:
                writer.write(client_frame(CLOSE, b"\x03\xe8"))


async def settled_rss(target: Target) -> int:
    """The worker's resident set once it has finished with what just closed."""
    await asyncio.sleep(1.5)
    return target.rss_bytes()


async def test_an_open_stream_costs_the_worker_a_few_kib_compressed_or_not(target: Target) -> None:
    """400 plain streams, then 400 more offering deflate beside them (first in this module, so that
    no freed memory of earlier streams hides what these take)."""
    key = tenant_key(target, "stream-memory", max_streams=1000)
    base = await settled_rss(target)
    async with opened(target, key, 400, deflate=False):
        plain = (target.rss_bytes() - base) / 400
        async with opened(target, key, 400, deflate=True):
            compressed = (target.rss_bytes() - base) / 400 - plain
    print(
        f"an open stream: {plain / 1024:.1f} KiB of RSS plain, {compressed / 1024:.1f} KiB offering deflate"
    )
    assert plain < 64 * 1024 and compressed < 64 * 1024


async def test_streams_on_one_key_are_capped_at_max_streams(target: Target) -> None:
    """500 streams on one key (the issue's attack): the tenant's default max_streams (100) open,
    the other 400 refused before the upgrade."""
    key = tenant_key(target, "five-hundred-streams")
    before = target.rss_bytes()
    async with opened(target, key, 500) as streams:
        during = target.rss_bytes()
        refusals = [reply for _, reply in streams if reply.status != 101]
        usage = await asyncio.to_thread(usage_of, target, key)
    statuses = Counter(reply.status for _, reply in streams)
    print(f"500 streams on one key: {dict(statuses)}; RSS {(during - before) / MIB:+.1f} MiB while open")
    assert statuses == {101: 100, 429: 400}
    assert {(r.error_code(), r.headers["retry-after"]) for r in refusals} == {("too_many_streams", "5")}
    assert (usage["streams"], usage["limits"]["max_streams"]) == (100, 100)
    assert during - before < 50 * MIB


async def test_closed_streams_are_freed_at_once(target: Target) -> None:
    """1,200 streams opened and closed in rounds of 200, half of them compressed: the worker holds
    no more after than before (it freezes its heap every second, so a closed stream left to the
    collector would stay until the next thaw, minutes later)."""
    key = tenant_key(target, "stream-churn", max_streams=1000)
    async with opened(target, key, 200):
        pass  # the first round: buffers and arenas every later one reuses
    before = await settled_rss(target)
    for _ in range(6):
        async with opened(target, key, 200) as streams:
            refused = [(reply.status, reply.body[:120]) for _, reply in streams if reply.status != 101]
            assert not refused, refused[:3]
    after = await settled_rss(target)
    print(f"1,200 streams opened and closed: RSS {before / MIB:.0f} -> {after / MIB:.0f} MiB")
    assert after - before < 20 * MIB
