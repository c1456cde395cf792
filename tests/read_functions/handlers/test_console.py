"""The web console's files and the routes it reads, over real HTTP against a real store.

The page itself is driven in a browser by tests/e2e/test_console_browser.py; here: what the
server sends (files, security headers, caching), and the operator and account routes the
console shows, each checked against its published schema and refused to a tenant's key.
"""

from __future__ import annotations

import gzip
import re
import tomllib
from typing import Any

import aiohttp
import orjson
import pytest
import redis.asyncio as redis

from book_store.history import HISTORY_KEY, History, Sample
from book_store.schema import node_stats_key, weight_key_prefix
from control_plane.models import NodeInfo, ReplicaAssignment
from control_plane.stores.redis import RedisControlStore
from ladder_process.clock import now_ms
from read_functions.app.routing import Audience
from read_functions.handlers.console import ASSETS, CONTENT_SECURITY_POLICY
from read_functions.routes import ROUTES
from tests.read_functions.helpers import ETH, Stack, snapshot, validate

OWN_SCRIPTS = sorted(p for p in ASSETS.glob("*.js"))


async def get(stack: Stack, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    async with stack.http.get(f"{stack.url}{path}", headers=headers or {}) as r:
        return r.status, (await r.json() if r.content_type == "application/json" else None)


async def test_the_page_is_served_with_a_strict_policy_and_revalidates(stack: Stack) -> None:
    async with stack.http.get(f"{stack.url}/console") as r:
        assert r.status == 200 and r.content_type == "text/html"
        page = await r.text()
        headers = r.headers
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "unsafe" not in CONTENT_SECURITY_POLICY and "script-src 'self'" in CONTENT_SECURITY_POLICY
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["X-Frame-Options"] == "DENY"
    assert headers["Cache-Control"] == "no-cache" and headers["ETag"].startswith('"')
    async with stack.http.get(f"{stack.url}/console", headers={"If-None-Match": headers["ETag"]}) as r:
        assert r.status == 304 and await r.read() == b""
    # nothing inline for the policy to refuse: no inline script or style, no style attribute
    assert not re.search(r"<script(?![^>]*\bsrc=)", page) and "<style" not in page and "style=" not in page
    for reference in re.findall(r'(?:href|src)="(/console/[^"]+)"', page):
        async with stack.http.get(f"{stack.url}{reference}") as r:
            assert r.status == 200, reference


async def test_scripts_are_es_modules_of_this_origin_and_compress(stack: Stack) -> None:
    for script in OWN_SCRIPTS:
        source = script.read_text()
        for target in re.findall(r'^import .* from "([^"]+)";$', source, re.MULTILINE):
            assert target.startswith("./") and (script.parent / target).is_file(), (script.name, target)
        assert not re.search(r"https?://", source), f"{script.name} names another origin"
        assert "innerHTML" not in source and "eval(" not in source, script.name
    async with stack.http.get(f"{stack.url}/console/vendor/uPlot.esm.min.js",
                              headers={"Accept-Encoding": "gzip"}) as r:  # fmt: skip
        assert r.status == 200 and r.headers["Content-Encoding"] == "gzip"
        assert r.headers["Content-Type"] == "text/javascript; charset=utf-8"
        body = gzip.decompress(await r.read())
    assert body == (ASSETS / "vendor" / "uPlot.esm.min.js").read_bytes() and b"export" in body
    assert (ASSETS / "vendor" / "uPlot-LICENSE.txt").read_text().startswith("The MIT License")
    status, _ = await get(stack, "/console/nothing.js")
    assert status == 404


async def test_account_says_whose_key_it_is(stack: Stack) -> None:
    tenant_id, key = await stack.tenant(name="acme-console")
    status, operator = await get(stack, "/v1/account", stack.admin)
    assert status == 200 and operator == {"role": "operator", "tenant_id": None, "tenant_name": None}
    status, tenant = await get(stack, "/v1/account", {"X-API-Key": key})
    validate(tenant, "Account")
    assert tenant == {"role": "tenant", "tenant_id": tenant_id, "tenant_name": "acme-console"}
    status, _ = await get(stack, "/v1/account", {"X-API-Key": key + "x"})
    assert status == 401


async def test_usage_is_shown_against_the_limits(stack: Stack) -> None:
    tenant_id, key = await stack.tenant(max_markets=4, max_replicas=3, max_depth=700)
    me = {"X-API-Key": key}
    body = {"exchange": "binance.com", "market": "ETHBTC", "replicas": 2, "depth": 500}
    async with stack.http.post(f"{stack.url}/v1/subscriptions", json=body, headers=me) as r:
        assert r.status == 201
    status, usage = await get(stack, "/v1/usage", me)
    validate(usage, "Usage")
    assert (usage["markets"], usage["most_replicas"], usage["deepest"]) == (1, 2, 500)
    assert usage["limits"] == {"max_markets": 4, "max_replicas": 3, "max_depth": 700, "max_streams": 100,
                               "rate_limit_rps": 100_000, "burst": 100_000}  # fmt: skip
    status, seen = await get(stack, f"/v1/admin/tenants/{tenant_id}/usage", stack.admin)
    validate(seen, "Usage")
    assert status == 200 and seen["limits"] == usage["limits"] and seen["markets"] == 1
    status, error = await get(stack, "/v1/admin/tenants/tnt_nope/usage", stack.admin)
    assert status == 404 and error["error"]["code"] == "not_found"


async def seed_cluster(store: redis.Redis) -> None:
    """Two nodes, a book with two replicas (one silent past max_silence_ms), counters, weight."""
    control = RedisControlStore(store)
    now = now_ms()
    for node_id in ("node-a", "node-b"):
        await control.register_node(NodeInfo(node_id, "", 100, now - 60_000, now, False, 0.0))
    await control.replace_assignments("node-a", [ReplicaAssignment("binance.com", "ETHBTC", 0, "node-a")])
    await control.replace_assignments("node-b", [ReplicaAssignment("binance.com", "ETHBTC", 1, "node-b")])
    for node_id, spent in (("node-a", 30), ("node-b", 12)):
        document = {
            "node_id": node_id, "egress_id": "nat-1", "replicas": 1, "synced": 1,
            "process": {"cpu_s": 1.5, "rss_bytes": 50_000_000, "at_ms": now},
            "publish_latency_ms": {"binance.com": {"count": 40, "p50": 1.0, "p90": 2.0, "p99": 3.0}},
            "exchanges": {"binance.com": {"weight_pool": "api.binance.com", "weight_limit": 4800,
                                          "snapshots": {"weight_spent": spent, "http_status": {"429": 1}}}},
        }  # fmt: skip
        await store.set(node_stats_key(node_id), orjson.dumps(document))
    counters = {
        "resyncs": {"gap": 2},
        "restarts": 2,
        "stale_episodes": 1,
        "mismatches": 1,
        "audit_mismatches": 0,
        "last_resync": {"reason": "gap", "at_ms": now - 5000},
        "last_stale": None,
    }
    await store.hset(ETH.stats, "1", orjson.dumps(counters))
    seconds, _ = await store.time()
    await store.set(f"{weight_key_prefix('nat-1', 'api.binance.com')}:{int(seconds) // 60}", 250)


async def test_operator_sees_nodes_books_replicas_and_budgets(
    stack: Stack, redis_client: redis.Redis
) -> None:
    await seed_cluster(redis_client)
    await stack.publish(ETH, 0, snapshot(41, 0))
    await stack.publish(ETH, 1, snapshot(40, 1, publish_time=now_ms() - 120_000))

    _, nodes = await get(stack, "/v1/admin/nodes", stack.admin)
    validate(nodes, "Nodes")
    by_id = {n["id"]: n for n in nodes["nodes"]}
    assert by_id["node-a"]["live"] and by_id["node-a"]["stats"]["process"]["rss_bytes"] == 50_000_000
    assert [a["replica"] for a in by_id["node-b"]["assignments"]] == [1]

    _, books = await get(stack, "/v1/admin/books", stack.admin)
    validate(books, "ClusterBooks")
    [book] = books["books"]
    assert (book["exchange"], book["market"], book["status"]) == ("binance.com", "ETHBTC", "synced")
    first, second = book["replicas"]
    assert (first["node_id"], first["status"], first["update_id"]) == ("node-a", "synced", 41)
    assert first["restarts"] is None  # its node has not reported counters
    assert (second["node_id"], second["status"], second["resyncs"]) == ("node-b", "stale", {"gap": 2})
    assert second["age_ms"] >= 120_000 and second["stale_episodes"] == 1
    assert second["last_resync"] == {"reason": "gap", "at_ms": second["last_resync"]["at_ms"]}
    assert second["status_reason"].startswith("not heard from")  # silent past max_silence_ms
    assert second["status_since_ms"] is not None and first["status_reason"] is None
    assert books["disagreements"] == [{"exchange": "binance.com", "market": "ETHBTC", "replica": 1,
                                       "node_id": "node-b", "update_id": 40, "mismatches": 1,
                                       "audit_mismatches": 0, "last_audit_ms": None}]  # fmt: skip

    _, egress = await get(stack, "/v1/admin/egress", stack.admin)
    validate(egress, "Egress")
    [pool] = egress["egress"]
    assert (pool["egress_id"], pool["pool"], pool["limit"], pool["used"]) == (
        "nat-1",
        "api.binance.com",
        4800,
        250,
    )
    assert pool["nodes"] == ["node-a", "node-b"] and pool["weight_spent"] == 42
    assert pool["refusals"] == {"429": 2, "418": 0} and pool["closed_for_ms"] == 0
    assert 0 < pool["window_ends_in_ms"] <= 60_000


async def test_a_tenant_key_can_do_no_operator_thing(stack: Stack) -> None:
    tenant_id, key = await stack.tenant()
    admin_routes = [r for r in ROUTES if r.access is Audience.ADMIN]
    assert {"/v1/admin/books", "/v1/admin/egress", "/v1/admin/tenants/{tenant_id}/usage"} <= {
        r.path for r in admin_routes
    }
    for route in admin_routes:
        path = route.path.replace("{tenant_id}", tenant_id).replace("{key_id}", "key_x")
        async with stack.http.request(route.method, f"{stack.url}{path}", headers={"X-API-Key": key},
                                      json={} if route.body else None) as r:  # fmt: skip
            assert r.status == 403, (route.method, route.path, r.status)
            assert (await r.json())["error"]["code"] == "forbidden"


async def test_a_browser_stream_carries_its_key_as_a_subprotocol(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(7))
    url = f"{stack.url}/v1/stream?exchange=binance.com&market=ETHBTC&depth=3"
    protocols = ("ladder.v1", f"ladder.key.{headers['X-API-Key']}")
    async with stack.http.ws_connect(url, protocols=protocols) as socket:
        assert socket.protocol == "ladder.v1"  # the key is never echoed back
        message = await socket.receive(timeout=5)
        assert message.type is aiohttp.WSMsgType.TEXT and orjson.loads(message.data)["update_id"] == 7
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await stack.http.ws_connect(url, protocols=("ladder.v1", "ladder.key.ldr_wrong"))
    assert refused.value.status == 401


def test_files_are_small_and_all_ship_in_the_wheel() -> None:
    files = sorted(p for p in ASSETS.rglob("*") if p.is_file())
    sizes = {p.name: p.stat().st_size for p in files}
    assert sum(sizes.values()) < 150_000, sizes
    project = tomllib.loads((ASSETS.parents[1] / "pyproject.toml").read_text())
    patterns = project["tool"]["setuptools"]["package-data"]["read_functions"]
    package = ASSETS.parent
    shipped = {p for pattern in patterns for p in package.glob(pattern) if p.is_file()}
    assert shipped == set(files)


async def test_operator_sees_the_last_hour(stack: Stack, redis_client: redis.Redis) -> None:
    now = now_ms()
    history = History(redis_client)
    await redis_client.delete(HISTORY_KEY)
    latency: dict[str, dict[str, float | int | None]] = {
        "binance.com": {"count": 5, "p50": 1.0, "p90": 2.0, "p99": 4.0}
    }
    for age_s, stale in ((4000, 0), (50, 1), (10, 2)):  # one of them older than the hour
        replicas = {"synced": 3, "stale": stale}
        await history.append(
            Sample(now - age_s * 1000, latency, replicas, {"gap": stale}, {"node-a": {"gap": 9}})
        )
    tenant_id, key = await stack.tenant()
    for path in ("/v1/account", "/v1/books/binance.com/NOSUCH"):
        await get(stack, path, {"X-API-Key": key})
    await stack.deps.usage.flush()

    status, answer = await get(stack, "/v1/admin/history", stack.admin)
    assert status == 200, answer
    validate(answer, "History")
    assert [s["replicas"]["stale"] for s in answer["samples"]] == [1, 2]  # oldest first, within the hour
    assert "node_resyncs" not in answer["samples"][0]  # the sampler's own bookkeeping stays home
    (mine,) = [t for t in answer["tenants"] if t["tenant_id"] == tenant_id]
    assert mine["minutes"][-1]["requests"] == 2 and mine["minutes"][-1]["errors"] == 1
    _, recent = await get(stack, "/v1/admin/history?minutes=1", stack.admin)
    assert [s["replicas"]["stale"] for s in recent["samples"]] == [1, 2]
    status, _ = await get(stack, "/v1/admin/history?minutes=61", stack.admin)
    assert status == 400
    status, _ = await get(stack, "/v1/admin/history", {"X-API-Key": key})
    assert status == 403
