"""The read API on a real port over real Valkey: what one book read leaves in spans and metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as redis

from read_functions.deps import WORKER_METRICS
from read_functions.telemetry import ReadTelemetry
from tests.read_functions.helpers import ETH, Stack, open_stack, snapshot
from tests.telemetry.helpers import Recorded, recorded

ROUTE = "/v1/books/{exchange}/{market}"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture
async def traced(clean_redis_url: str, redis_client: redis.Redis) -> AsyncIterator[tuple[Stack, Recorded]]:
    stack = await open_stack(clean_redis_url, redis_client)
    record = recorded("ladder-read-test")
    stack.deps.telemetry = ReadTelemetry(record.telemetry)
    record.telemetry.observe(WORKER_METRICS, stack.deps)
    yield stack, record
    await stack.close()


async def read(stack: Stack, headers: dict[str, str]) -> int:
    async with stack.http.get(
        f"{stack.url}/v1/books/{ETH.exchange}/{ETH.market}?depth=5", headers=headers
    ) as r:
        await r.read()
        return r.status


async def test_a_book_read_is_one_server_span_and_counted_by_route_status_and_tenant(
    traced: tuple[Stack, Recorded],
) -> None:
    stack, record = traced
    headers = await stack.subscriber(ETH)
    key = headers["X-API-Key"]
    await stack.publish(ETH, 0, snapshot(7))
    caller = {**headers, "traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"}

    assert await read(stack, caller) == 200  # loads the book into the cache
    assert await read(stack, caller) == 200  # served from the cache

    spans = record.finished(f"GET {ROUTE}")
    assert len(spans) == 2
    tenant = spans[0].attributes["ladder.tenant"] if spans[0].attributes else None
    assert tenant
    for span, hit in zip(spans, (False, True), strict=True):
        assert span.attributes is not None
        assert span.attributes["ladder.exchange"] == "binance.com"
        assert span.attributes["ladder.market"] == "ETHBTC"
        assert span.attributes["ladder.cache_hit"] is hit
        assert span.attributes["http.response.status_code"] == 200
        assert span.attributes["ladder.tenant"] == tenant
        assert span.parent is not None and span.parent.span_id == int(CALLER_SPAN, 16)
        assert span.context is not None and span.context.trace_id == int(TRACE_ID, 16)

    assert record.value("ladder_read_requests", route=ROUTE, status=200) == 2
    latency = record.histogram("ladder_read_request_seconds", route=ROUTE)
    assert latency is not None and latency.count == 2 and 0 < latency.sum < 10
    assert record.value("ladder_read_tenant_requests", tenant=tenant) == 3  # the subscription, two reads
    assert record.value("ladder_read_book_cache_hit_ratio") == 0.5
    text = stack.deps.telemetry.render().decode()
    assert (
        f'ladder_read_requests_total{{worker="{stack.deps.telemetry.worker}",route="{ROUTE}",status="200"}} 2'
        in text
    )
    assert key not in text and "ETHBTC" not in text  # no key, no market on a request metric


async def test_rate_limited_requests_are_counted_per_tenant(traced: tuple[Stack, Recorded]) -> None:
    stack, record = traced
    tenant, key = await stack.tenant(rate_limit_rps=1, burst=1)
    statuses = [await read(stack, {"X-API-Key": key}) for _ in range(4)]
    assert 429 in statuses
    assert record.value("ladder_read_rate_limited", tenant=tenant) == statuses.count(429)
    assert record.value("ladder_read_requests", route=ROUTE, status=429) == statuses.count(429)
