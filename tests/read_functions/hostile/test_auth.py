"""Hostile callers of the authentication and serving path: key guessing, junk keys, probes, overload.

Each test runs a real read server over the session's Valkey and asks it over real sockets; a
second source address is a second loopback address (127.0.0.2), so limits per source are seen
as a client sees them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
import redis.asyncio as redis
from pydantic import SecretStr, ValidationError

from control_plane.accounts.api_keys import MAX_PRESENTED_LENGTH, generate_key
from control_plane.accounts.auth import Authenticator
from control_plane.errors import ConfigurationError
from control_plane.models import OPERATOR
from control_plane.settings import ControlSettings
from control_plane.stores.redis import RedisControlStore
from read_functions.app.load_shedding import MIN_EVIDENCE, Load
from read_functions.books.readiness import StoreReadiness
from read_functions.settings import load_settings
from read_functions.tenancy.auth_failures import AuthenticationsLimitedError, FailedAuthentications
from tests.read_functions.helpers import ETH, PEPPER, Stack, open_stack, snapshot
from tests.stores import TestStore, pause

MARKETS = "/v1/markets"
SUBSCRIPTIONS = "/v1/subscriptions"


@asynccontextmanager
async def client(source: str = "127.0.0.1") -> AsyncIterator[aiohttp.ClientSession]:
    """A session whose connections come from ``source``, with no cap on parallel connections."""
    connector = aiohttp.TCPConnector(limit=0, local_addr=(source, 0), force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        yield session


async def ask(
    http: aiohttp.ClientSession, url: str, key: str | None = None, **headers: str
) -> tuple[int, dict[str, str], dict[str, Any]]:
    sent = dict(headers)
    if key is not None:
        sent["X-API-Key"] = key
    async with http.get(url, headers=sent) as r:
        body = await r.json() if r.content_type == "application/json" else {}
        return r.status, dict(r.headers), body


async def timed(call: Awaitable[tuple[int, dict[str, str], dict[str, Any]]]) -> tuple[float, int, str, str]:
    """``(seconds, status, error code, Retry-After)`` of one call."""
    started = time.monotonic()
    status, headers, body = await call
    code = body.get("error", {}).get("code", "") if body else ""
    return time.monotonic() - started, status, code, headers.get("Retry-After", "")


# -- finding 2: guessed keys cost no store call once their source has failed enough ------------


async def test_a_source_that_keeps_failing_has_no_more_keys_looked_up(stack: Stack) -> None:
    _, fresh_key = await stack.tenant()  # a real key this worker has not looked up yet
    cached_before = stack.deps.access.cached_keys
    statuses: list[int] = []
    async with client("127.0.0.2") as attacker:
        for _ in range(40):
            status, headers, body = await ask(attacker, f"{stack.url}{MARKETS}", generate_key())
            statuses.append(status)
        assert body["error"]["code"] == "too_many_failed_authentications"
        assert int(headers["Retry-After"]) >= 1
        # a real key from the failing source would need a look-up too: it waits like the rest
        assert (await ask(attacker, f"{stack.url}{MARKETS}", fresh_key))[0] == 429
    assert 20 <= statuses.count(401) <= 23 and statuses[-10:] == [429] * 10, statuses
    # only the keys looked up are held (as refusals); the refused-at-once ones cost nothing
    assert stack.deps.access.cached_keys - cached_before == statuses.count(401)
    async with client("127.0.0.1") as tenant:
        assert (await ask(tenant, f"{stack.url}{MARKETS}", fresh_key))[0] == 200


async def test_a_known_key_keeps_working_from_a_source_that_fails(stack: Stack) -> None:
    async with client("127.0.0.3") as shared:
        _, key = await stack.tenant()
        assert (await ask(shared, f"{stack.url}{MARKETS}", key))[0] == 200
        for _ in range(30):
            await ask(shared, f"{stack.url}{MARKETS}", generate_key())
        assert (await ask(shared, f"{stack.url}{MARKETS}", generate_key()))[0] == 429
        assert (await ask(shared, f"{stack.url}{MARKETS}", key))[0] == 200  # answered from memory


@pytest.fixture
async def patient_stack(clean_redis_url: str, redis_client: redis.Redis) -> AsyncIterator[Stack]:
    # the point is the pool: requests that wait are not shed here, however long they wait
    stack = await open_stack(clean_redis_url, redis_client, store_wait_ms=3000, max_queue_ms=10_000)
    yield stack
    await stack.close()


@pytest.mark.single_store(
    "redis-py's RedisCluster has no waiting pool: a call that finds a node's connections all busy is "
    "refused at once (book_store/connect.py), so on a cluster the 101st request answers 503"
)
async def test_requests_queue_for_a_store_connection_instead_of_failing(
    patient_stack: Stack, redis_client: redis.Redis
) -> None:
    """More requests that need the store than the pool has connections: all are served."""
    stack = patient_stack
    _, key = await stack.tenant()
    async with client() as http:
        assert (await ask(http, f"{stack.url}{SUBSCRIPTIONS}", key))[0] == 200  # key and tenant cached
        await pause(redis_client, 600)  # every store call waits: 200 need a connection at once
        results = await asyncio.gather(*(ask(http, f"{stack.url}{SUBSCRIPTIONS}", key) for _ in range(200)))
    assert [status for status, _, _ in results] == [200] * 200
    assert isinstance(stack.deps.redis, redis.Redis), "the stack's store is one node"
    pool = stack.deps.redis.connection_pool
    assert pool.max_connections == stack.deps.settings.store_connections == 100


# -- finding 3: refused keys are never kept ------------------------------------------------------


async def test_junk_keys_of_any_length_are_refused_and_never_kept(stack: Stack) -> None:
    cached_before = stack.deps.access.cached_keys
    junk = [f"{i:05d}" + "k" * 20_000 for i in range(50)]  # 20 kB each, under the head limit
    junk += [f"ldr_{i:038d}" for i in range(50)]  # the key's length and prefix, a wrong checksum
    junk += ["x" * (MAX_PRESENTED_LENGTH + 1), "ldr_" + "A" * 250]
    async with client() as http:
        for key in junk:
            status, _, body = await ask(http, f"{stack.url}{MARKETS}", key)
            assert (status, body["error"]["code"]) == (401, "unauthorized")
            assert key not in str(body)
    assert stack.deps.access.cached_keys == cached_before


# -- finding 9: /metrics for the operator only, /readyz from memory ---------------------------------


async def test_metrics_name_tenants_only_to_the_operator(stack: Stack) -> None:
    tenant_id, key = await stack.tenant()
    async with client() as http:
        assert (await ask(http, f"{stack.url}{MARKETS}", key))[0] == 200
        assert (await ask(http, f"{stack.url}/metrics"))[0] == 401
        assert (await ask(http, f"{stack.url}/metrics", key))[0] == 403
        async with http.get(f"{stack.url}/metrics", headers=stack.admin) as r:
            assert r.status == 200 and tenant_id in await r.text()


async def test_readyz_answers_from_memory_while_the_store_stalls(
    stack: Stack, redis_client: redis.Redis
) -> None:
    async with client() as http:
        await pause(redis_client, 800)
        results = [await timed(ask(http, f"{stack.url}/readyz")) for _ in range(20)]
    assert all(status == 200 for _, status, _, _ in results)
    assert max(seconds for seconds, _, _, _ in results) < 0.3


async def test_readiness_follows_the_store_in_the_background(test_store: TestStore, valkey_url: str) -> None:
    stores = [await test_store.client(valkey_url), redis.Redis(host="127.0.0.1", port=1)]  # port 1: nobody
    alive, dead = (StoreReadiness(store, interval_s=0.1) for store in stores)
    try:
        for readiness in (alive, dead):
            await readiness.start()
        assert alive.reachable and not dead.reachable
    finally:
        for readiness in (alive, dead):
            await readiness.close()
        for store in stores:
            await store.aclose()


# -- finding 10: the admin key's length limit is the one every key has -------------------------------


def test_an_admin_key_no_caller_could_present_is_refused_at_start() -> None:
    too_long = "a" * (MAX_PRESENTED_LENGTH + 1)
    with pytest.raises(ConfigurationError, match="LADDER_ADMIN_KEY"):
        load_settings(redis_url="redis://127.0.0.1:1", admin_key=too_long)
    with pytest.raises(ValidationError):
        ControlSettings(admin_key=SecretStr(too_long))
    assert load_settings(redis_url="redis://127.0.0.1:1", admin_key="a" * MAX_PRESENTED_LENGTH)


async def test_the_longest_admin_key_allowed_authenticates(redis_client: redis.Redis) -> None:
    longest = "a" * MAX_PRESENTED_LENGTH
    auth = Authenticator(RedisControlStore(redis_client), PEPPER.encode(), longest, clock=lambda: 0)
    assert await auth.authenticate(longest) == OPERATOR


# -- finding 11: a tenant's default burst follows its rate -----------------------------------------


async def admin_call(stack: Stack, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    async with stack.http.request(method, f"{stack.url}{path}", json=body, headers=stack.admin) as r:
        assert r.status in (200, 201), await r.text()
        payload: dict[str, Any] = await r.json()
        return payload


async def test_the_default_burst_is_one_second_of_the_rate(stack: Stack) -> None:
    fast = await admin_call(stack, "POST", "/v1/admin/tenants", {"name": "fast", "rate_limit_rps": 1_000_000})
    assert fast["burst"] == 1_000_000
    assert (await admin_call(stack, "POST", "/v1/admin/tenants", {"name": "plain"}))["burst"] == 20
    slow = await admin_call(stack, "POST", "/v1/admin/tenants", {"name": "slow", "rate_limit_rps": 2})
    assert slow["burst"] == 20  # never fewer than 20
    moved = await admin_call(stack, "PATCH", f"/v1/admin/tenants/{fast['id']}", {"rate_limit_rps": 5000})
    assert moved["burst"] == 5000  # a default burst follows the rate
    fixed = await admin_call(stack, "POST", "/v1/admin/tenants", {"name": "fixed", "burst": 7})
    moved = await admin_call(stack, "PATCH", f"/v1/admin/tenants/{fixed['id']}", {"rate_limit_rps": 5000})
    assert moved["burst"] == 7  # one the operator set stays


async def test_a_tenant_with_a_high_rate_is_not_refused_its_bursts(stack: Stack) -> None:
    tenant = await admin_call(stack, "POST", "/v1/admin/tenants", {"name": "bursty", "rate_limit_rps": 1000})
    async with stack.http.post(f"{stack.url}/v1/admin/tenants/{tenant['id']}/keys", headers=stack.admin) as r:
        key = (await r.json())["key"]
    subscription = {"exchange": ETH.exchange, "market": ETH.market}
    async with stack.http.post(
        f"{stack.url}{SUBSCRIPTIONS}", json=subscription, headers={"X-API-Key": key}
    ) as r:
        assert r.status == 201
    await stack.publish(ETH, 0, snapshot(1))
    async with client() as http:
        results = await asyncio.gather(
            *(ask(http, f"{stack.url}/v1/books/binance.com/ETHBTC", key) for _ in range(300))
        )
    assert [status for status, _, _ in results].count(429) == 0


# -- overload: past its bound of held requests a worker refuses at once -------------------------------


@pytest.fixture
async def small_stack(clean_redis_url: str, redis_client: redis.Redis) -> AsyncIterator[Stack]:
    stack = await open_stack(clean_redis_url, redis_client, max_in_flight=8)
    yield stack
    await stack.close()


async def test_a_worker_holding_its_limit_answers_503_at_once(
    small_stack: Stack, redis_client: redis.Redis
) -> None:
    stack = small_stack
    _, key = await stack.tenant()
    async with client() as http:
        assert (await ask(http, f"{stack.url}{SUBSCRIPTIONS}", key))[0] == 200
        await pause(redis_client, 2000)  # requests that need the store are held meanwhile
        calls = [
            asyncio.ensure_future(timed(ask(http, f"{stack.url}{SUBSCRIPTIONS}", key))) for _ in range(40)
        ]
        await asyncio.sleep(0.2)
        probe = await timed(ask(http, f"{stack.url}/healthz"))
        results = await asyncio.gather(*calls)
    shed = [r for r in results if r[1] == 503]
    served = [r for r in results if r[1] == 200]
    assert len(served) == 8 and len(shed) == 32, sorted(r[1] for r in results)
    assert all((code, retry) == ("overloaded", "1") for _, _, code, retry in shed)
    # Refused at once, not after the stall: well within half of it (a loaded machine takes a few
    # hundred milliseconds to open 40 connections), and before any held request is answered.
    assert max(seconds for seconds, _, _, _ in shed) < min(seconds for seconds, _, _, _ in served)
    assert max(seconds for seconds, _, _, _ in shed) < 1.0
    assert probe[1] == 200 and probe[0] < 1.0  # probes are never shed
    assert stack.deps.load.shed == 32 and stack.deps.load.in_flight == 0


@pytest.fixture
async def impatient_stack(clean_redis_url: str, redis_client: redis.Redis) -> AsyncIterator[Stack]:
    stack = await open_stack(clean_redis_url, redis_client, max_queue_ms=100)
    yield stack
    await stack.close()


async def test_a_worker_whose_requests_wait_past_the_target_sheds_until_they_drain(
    impatient_stack: Stack, redis_client: redis.Redis
) -> None:
    stack = impatient_stack
    _, key = await stack.tenant()
    async with client() as http:
        assert (await ask(http, f"{stack.url}{SUBSCRIPTIONS}", key))[0] == 200
        await pause(redis_client, 400)  # a slow store: every held request waits 0.4 s
        held = await asyncio.gather(*(ask(http, f"{stack.url}{SUBSCRIPTIONS}", key) for _ in range(10)))
        assert [status for status, _, _ in held] == [200] * 10  # admitted before the wait was known
        seconds, status, code, retry = await timed(ask(http, f"{stack.url}{SUBSCRIPTIONS}", key))
        assert (status, code, retry) == (503, "overloaded", "1") and seconds < 0.2
        statuses = []  # the queue is gone: after a window without evidence, requests are admitted again
        for _ in range(20):
            statuses.append((await ask(http, f"{stack.url}{SUBSCRIPTIONS}", key))[0])
            if statuses[-1] == 200:
                break
            await asyncio.sleep(0.05)
        assert statuses[-1] == 200 and set(statuses[:-1]) <= {503}, statuses


def test_one_slow_request_is_not_a_queue() -> None:
    load = Load(ceiling=100, target_s=0.1, window_s=0.1)
    assert not load.refuses(0.0)
    load.done(5.0, 0.05)  # one request took 5 s (a slow call), nothing else completed
    assert not load.refuses(0.2)
    for _ in range(MIN_EVIDENCE):
        load.done(0.5, 0.25)  # four waited 0.5 s: a queue, refused from now on ...
    assert load.refuses(0.26) and load.refuses(0.35) and load.shed == 2  # ... and through the next window
    assert not load.refuses(0.5)  # admitted again once a window passed without evidence


# -- the failure budget itself -----------------------------------------------------------------------


def test_failures_are_counted_per_host_and_in_bounded_memory() -> None:
    failures = FailedAuthentications(rate_per_s=0.001, burst=2, max_sources=100)
    for address in ("2001:db8::1", "2001:db8::2"):  # one /64: one host's addresses
        failures.failed(address)
    with pytest.raises(AuthenticationsLimitedError):
        failures.check("2001:db8::ffff")
    failures.check("2001:db8:0:1::1")  # the next /64 is another host
    failures.failed("::ffff:192.0.2.1")  # an IPv4 client on a dual-stack socket is its IPv4 address
    failures.failed("192.0.2.1")
    with pytest.raises(AuthenticationsLimitedError):
        failures.check("192.0.2.1")
    for i in range(1000):
        failures.failed(f"10.0.{i // 256}.{i % 256}")
    assert len(failures) == 100
