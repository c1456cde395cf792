"""Subscriptions, keys, markets and operator routes over real HTTP, each reply checked against its schema."""

from __future__ import annotations

from collections import Counter
from typing import Any

from book_store.catalog import MarketCatalog, MarketInfo
from tests.read_functions.helpers import ETH, Stack, snapshot, validate


async def call(
    stack: Stack, method: str, path: str, headers: dict[str, str], body: Any = None
) -> tuple[int, Any]:
    kwargs: dict[str, Any] = {"headers": headers}
    if isinstance(body, bytes):
        kwargs["data"] = body
    elif body is not None:
        kwargs["json"] = body
    async with stack.http.request(method, f"{stack.url}{path}", **kwargs) as r:
        return r.status, (await r.json() if r.status != 204 else None)


async def test_subscriptions_lifecycle(stack: Stack) -> None:
    _, key = await stack.tenant(max_markets=1, max_replicas=2)
    me = {"X-API-Key": key}
    status, created = await call(
        stack, "POST", "/v1/subscriptions", me, {"exchange": "binance.com", "market": "ETHBTC"}
    )
    assert status == 201 and created["replicas"] == 1
    validate(created, "Subscription")
    status, updated = await call(
        stack, "POST", "/v1/subscriptions", me, {"exchange": "binance.com", "market": "ETHBTC", "replicas": 2}
    )
    assert status == 200 and updated["replicas"] == 2 and updated["created_at"] == created["created_at"]
    await stack.publish(ETH, 0, snapshot(1))
    status, listing = await call(stack, "GET", "/v1/subscriptions", me)
    validate(listing, "Subscriptions")
    assert [(s["market"], s["status"]) for s in listing["subscriptions"]] == [("ETHBTC", "synced")]
    errors = [
        ({"exchange": "binance.com", "market": "BTCUSDT"}, 422, "limit_exceeded"),  # max_markets is 1
        ({"exchange": "binance.com", "market": "ETHBTC", "replicas": 3}, 422, "limit_exceeded"),
        ({"exchange": "binance.com", "market": "NOPE"}, 404, "unknown_market"),
        ({"exchange": "nowhere", "market": "ETHBTC"}, 404, "unknown_exchange"),
        ({"exchange": "binance.com", "market": "ETHBTC", "replica": 2}, 400, "invalid_request"),
        ({"exchange": "binance.com", "market": "ETHBTC", "replicas": "2"}, 400, "invalid_request"),
        (b"{not json", 400, "invalid_request"),
        (b"[1, 2]", 400, "invalid_request"),
        (b"x" * 70_000, 413, "payload_too_large"),
    ]
    for body, expected, code in errors:
        status, error = await call(stack, "POST", "/v1/subscriptions", me, body)
        assert (status, error["error"]["code"]) == (expected, code), (
            body if not isinstance(body, bytes) else body[:20]
        )
        validate(error, "Error")
    status, _ = await call(stack, "DELETE", "/v1/subscriptions/binance.com/ETHBTC", me)
    assert status == 204
    status, error = await call(stack, "DELETE", "/v1/subscriptions/binance.com/ETHBTC", me)
    assert status == 404 and error["error"]["code"] == "not_found"


async def test_subscriptions_take_a_depth_within_the_venue_and_tenant_limits(stack: Stack) -> None:
    futures = MarketInfo("binance.com-futures", "BTCUSDT", "TRADING", "BTC", "USDT")
    await MarketCatalog(stack.store).replace("binance.com-futures", [futures])
    _, key = await stack.tenant(max_depth=2000)
    me = {"X-API-Key": key}
    eth = {"exchange": "binance.com", "market": "ETHBTC"}

    status, created = await call(stack, "POST", "/v1/subscriptions", me, eth)
    assert status == 201 and created["depth"] == 100
    status, updated = await call(
        stack, "POST", "/v1/subscriptions", me, {**eth, "depth": 2000, "replicas": 2}
    )
    assert status == 200 and (updated["depth"], updated["replicas"]) == (2000, 2)
    validate(updated, "Subscription")
    body = {"exchange": "binance.com-futures", "market": "BTCUSDT", "depth": 1000}
    status, deep_futures = await call(stack, "POST", "/v1/subscriptions", me, body)
    assert status == 201 and deep_futures["depth"] == 1000
    status, listing = await call(stack, "GET", "/v1/subscriptions", me)
    validate(listing, "Subscriptions")
    assert [(s["exchange"], s["depth"]) for s in listing["subscriptions"]] == [
        ("binance.com", 2000),
        ("binance.com-futures", 1000),
    ]

    refused = [
        ({**body, "depth": 1001}, 400, "invalid_request", "at most 1000 on binance.com-futures"),
        ({**eth, "depth": 5001}, 400, "invalid_request", "between 1 and 5000"),
        ({**eth, "depth": 0}, 400, "invalid_request", "between 1 and 5000"),
        ({**eth, "depth": "100"}, 400, "invalid_request", "integer"),
        ({**eth, "depth": True}, 400, "invalid_request", "integer"),
        ({**eth, "depth": 1.5}, 400, "invalid_request", "integer"),
        ({**eth, "depth": None}, 400, "invalid_request", "integer"),
        ({**eth, "depth": 2001}, 422, "limit_exceeded", "at most 2000 for this tenant"),
    ]
    for wrong, expected, code, message in refused:
        status, error = await call(stack, "POST", "/v1/subscriptions", me, wrong)
        assert (status, error["error"]["code"]) == (expected, code), wrong
        assert message in error["error"]["message"], error
        validate(error, "Error")
    status, listing = await call(stack, "GET", "/v1/subscriptions", me)
    assert [s["depth"] for s in listing["subscriptions"]] == [2000, 1000]  # nothing refused was kept

    status, audit = await call(stack, "GET", "/v1/admin/audit?limit=1", stack.admin)
    assert audit["audit"][0]["action"] == "subscription.put"
    assert audit["audit"][0]["detail"]["depth"] == 1000


async def test_markets_and_exchanges(stack: Stack) -> None:
    _, key = await stack.tenant()
    me = {"X-API-Key": key}
    status, exchanges = await call(stack, "GET", "/v1/exchanges", me)
    validate(exchanges, "Exchanges")
    assert exchanges["exchanges"] == ["alpaca-crypto", "binance.com"]
    status, markets = await call(stack, "GET", "/v1/markets?exchange=binance.com", me)
    validate(markets, "Markets")
    assert [m["market"] for m in markets["markets"]] == ["BTCUSDT", "ETHBTC"]
    status, everything = await call(stack, "GET", "/v1/markets", me)
    assert len(everything["markets"]) == 3
    status, error = await call(stack, "GET", "/v1/markets?exchange=nowhere", me)
    assert status == 404 and error["error"]["code"] == "unknown_exchange"


async def test_tenant_keys_rotation(stack: Stack) -> None:
    _, key = await stack.tenant()
    me = {"X-API-Key": key}
    status, created = await call(stack, "POST", "/v1/keys", me, {"expires_in_s": 3600})
    assert status == 201 and created["key"].startswith("ldr_") and created["expires_at"] is not None
    validate(created, "CreatedKey")
    status, keys = await call(stack, "GET", "/v1/keys", me)
    validate(keys, "ApiKeys")
    assert len(keys["keys"]) == 2 and all("key" not in k for k in keys["keys"])
    old_id = next(k["id"] for k in keys["keys"] if k["id"] != created["id"])
    status, _ = await call(stack, "DELETE", f"/v1/keys/{old_id}?grace_s=60", me)
    assert status == 204
    status, _ = await call(stack, "GET", "/v1/keys", me)  # still inside the grace period
    assert status == 200
    status, error = await call(stack, "DELETE", "/v1/keys/key_doesnotexist", me)
    assert status == 404
    status, error = await call(stack, "GET", "/v1/keys", stack.admin)
    assert status == 403 and "admin key" in error["error"]["message"]


async def test_a_key_minted_with_a_short_lived_key_ends_and_is_revoked_with_it(stack: Stack) -> None:
    _, key = await stack.tenant()
    status, short = await call(stack, "POST", "/v1/keys", {"X-API-Key": key}, {"expires_in_s": 60})
    assert status == 201 and short["parent_id"] is not None
    status, minted = await call(stack, "POST", "/v1/keys", {"X-API-Key": short["key"]}, {})
    assert status == 201
    validate(minted, "CreatedKey")
    assert (minted["parent_id"], minted["expires_at"]) == (short["id"], short["expires_at"])
    assert (await call(stack, "GET", "/v1/keys", {"X-API-Key": minted["key"]}))[0] == 200

    status, _ = await call(stack, "DELETE", f"/v1/keys/{short['id']}", {"X-API-Key": key})
    assert status == 204
    status, error = await call(stack, "GET", "/v1/keys", {"X-API-Key": minted["key"]})
    assert status == 401 and error["error"]["code"] == "unauthorized"
    assert (await call(stack, "GET", "/v1/keys", {"X-API-Key": key}))[0] == 200


async def test_operator_routes(stack: Stack) -> None:
    admin = stack.admin
    fields = {"name": "Acme", "max_markets": 5, "max_replicas": 2, "rate_limit_rps": 50, "burst": 100}
    status, tenant = await call(stack, "POST", "/v1/admin/tenants", admin, fields)
    assert status == 201
    validate(tenant, "Tenant")
    status, error = await call(stack, "POST", "/v1/admin/tenants", admin, fields)
    assert status == 409 and error["error"]["code"] == "conflict"
    status, fetched = await call(stack, "GET", f"/v1/admin/tenants/{tenant['id']}", admin)
    assert fetched == tenant
    status, patched = await call(stack, "PATCH", f"/v1/admin/tenants/{tenant['id']}", admin, {"burst": 7})
    assert status == 200 and patched["burst"] == 7
    status, listing = await call(stack, "GET", "/v1/admin/tenants", admin)
    validate(listing, "Tenants")
    assert tenant["id"] in {t["id"] for t in listing["tenants"]}
    status, key = await call(stack, "POST", f"/v1/admin/tenants/{tenant['id']}/keys", admin)
    assert status == 201
    status, keys = await call(stack, "GET", f"/v1/admin/tenants/{tenant['id']}/keys", admin)
    assert [k["id"] for k in keys["keys"]] == [key["id"]]
    status, _ = await call(stack, "DELETE", f"/v1/admin/keys/{key['id']}", admin)
    assert status == 204
    status, nodes = await call(stack, "GET", "/v1/admin/nodes", admin)
    validate(nodes, "Nodes")
    status, audit = await call(stack, "GET", "/v1/admin/audit?limit=3", admin)
    validate(audit, "Audit")
    assert len(audit["audit"]) == 3 and audit["audit"][0]["action"].startswith("key.")
    status, error = await call(stack, "GET", "/v1/admin/tenants/tnt_nope", admin)
    assert status == 404
    status, error = await call(stack, "GET", "/v1/admin/audit?limit=0", admin)
    assert status == 400


async def test_operator_sets_max_depth(stack: Stack) -> None:
    admin = stack.admin
    status, plain = await call(stack, "POST", "/v1/admin/tenants", admin, {"name": "Plain"})
    assert status == 201 and plain["max_depth"] == 1000
    status, deep = await call(stack, "POST", "/v1/admin/tenants", admin, {"name": "Deep", "max_depth": 5000})
    assert status == 201 and deep["max_depth"] == 5000
    validate(deep, "Tenant")
    status, patched = await call(stack, "PATCH", f"/v1/admin/tenants/{deep['id']}", admin, {"max_depth": 50})
    assert status == 200 and patched["max_depth"] == 50
    status, listing = await call(stack, "GET", "/v1/admin/tenants", admin)
    validate(listing, "Tenants")
    assert {t["name"]: t["max_depth"] for t in listing["tenants"]} == {"Plain": 1000, "Deep": 50}
    for bad in (0, 5001, "1000", True, 2.5):
        status, error = await call(
            stack, "POST", "/v1/admin/tenants", admin, {"name": "Bad", "max_depth": bad}
        )
        assert (status, error["error"]["code"]) == (400, "invalid_request"), bad
        assert "max_depth" in error["error"]["message"]
        status, error = await call(
            stack, "PATCH", f"/v1/admin/tenants/{deep['id']}", admin, {"max_depth": bad}
        )
        assert status == 400, bad


async def test_service_routes(stack: Stack) -> None:
    for path in ("/healthz", "/readyz"):
        status, body = await call(stack, "GET", path, {})
        assert status == 200 and body["status"] in ("ok", "ready")
    async with stack.http.get(f"{stack.url}/metrics", headers=stack.admin) as r:
        text = await r.text()
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain")
    assert "ladder_read_requests_total{" in text and "ladder_read_cached_books" in text


async def test_operator_sets_max_streams(stack: Stack) -> None:
    admin = stack.admin
    status, plain = await call(stack, "POST", "/v1/admin/tenants", admin, {"name": "Plain"})
    assert status == 201 and plain["max_streams"] == 100
    status, many = await call(
        stack, "POST", "/v1/admin/tenants", admin, {"name": "Many", "max_streams": 5000}
    )
    assert status == 201 and many["max_streams"] == 5000
    validate(many, "Tenant")
    status, none = await call(stack, "PATCH", f"/v1/admin/tenants/{many['id']}", admin, {"max_streams": 0})
    assert status == 200 and none["max_streams"] == 0
    status, usage = await call(stack, "GET", f"/v1/admin/tenants/{many['id']}/usage", admin)
    validate(usage, "Usage")
    assert (usage["limits"]["max_streams"], usage["streams"]) == (0, 0)
    for bad in (-1, 100_001, "10", True, 2.5):
        status, error = await call(
            stack, "POST", "/v1/admin/tenants", admin, {"name": "Bad", "max_streams": bad}
        )
        assert (status, error["error"]["code"]) == (400, "invalid_request"), bad
        assert "max_streams" in error["error"]["message"]


async def test_a_tenant_s_1100_no_op_deletes_leave_the_operator_s_audit_events_visible(stack: Stack) -> None:
    """The issue's attack: a tenant key mints a key, which sends 1,100 deletes of subscriptions
    the tenant does not have. They record nothing (and a key's changes are rate-bounded), and the
    operator's events are in a scope no tenant can fill."""
    tenant_id, key = await stack.tenant()
    status, minted = await call(stack, "POST", "/v1/keys", {"X-API-Key": key})
    assert status == 201
    minted_headers = {"X-API-Key": minted["key"]}
    statuses: Counter[int] = Counter()
    for _ in range(1100):
        status, _ = await call(
            stack, "DELETE", "/v1/subscriptions?exchange=binance.com&markets=ETHBTC", minted_headers
        )
        statuses[status] += 1
    assert set(statuses) <= {200, 429} and statuses[200] >= 50
    status, page = await call(stack, "GET", "/v1/admin/audit?limit=1000", stack.admin)
    assert status == 200
    validate(page, "Audit")
    assert [(e["action"], e["scope"]) for e in page["audit"][:3]] == [
        ("key.create", tenant_id),
        ("key.create", "operator"),
        ("tenant.create", "operator"),
    ]
    status, operators = await call(stack, "GET", "/v1/admin/audit?scope=operator&limit=2", stack.admin)
    assert [e["action"] for e in operators["audit"]] == ["key.create", "tenant.create"]
    status, older = await call(
        stack, "GET", f"/v1/admin/audit?limit=2&before={operators['next']}", stack.admin
    )
    assert status == 200 and all(e["at"] <= operators["audit"][-1]["at"] for e in older["audit"])
    status, refused = await call(stack, "GET", f"/v1/admin/audit?before={minted['key']}", stack.admin)
    assert status == 400 and minted["key"] not in str(refused)
