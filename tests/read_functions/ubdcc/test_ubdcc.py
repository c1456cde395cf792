"""UBDCC-compatible routes: envelopes, error ids, numbers, options; and the real UBDCC client."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import orjson
from unicorn_binance_local_depth_cache.cluster import Cluster

from book_store.codec import BookStatus
from read_functions.handlers.ubdcc.tenant import CompatTenant
from read_functions.routes import COMPAT_ROUTES
from tests.read_functions.helpers import BTC, ETH, Stack, levels, serve, snapshot, validate

BIDS = levels(["0.03512000", "0.03511000", "0.03510000"], "2.00000000")
ASKS = levels(["0.03513000", "0.03514000", "0.03515000"], "10.00000000")


async def ubdcc(
    stack: Stack,
    path: str,
    headers: dict[str, str] | None = None,
    *,
    post: Any = None,
    base: str | None = None,
) -> dict[str, Any]:
    url = f"{base or stack.url}{path}"
    method = (
        stack.http.post(url, json=post, headers=headers)
        if post is not None
        else stack.http.get(url, headers=headers)
    )
    async with method as r:
        assert r.status == 200, await r.text()
        body: dict[str, Any] = orjson.loads(await r.read())
    validate(body, "Ubdcc")
    return body


async def test_reads_with_a_tenant_key_on_the_main_api(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 1, snapshot(77, 1, bids=BIDS, asks=ASKS))
    asks = await ubdcc(stack, "/get_asks?exchange=binance.com&market=ETHBTC", headers)
    assert asks["result"] == "OK" and asks["event"] == "GET_ASKS"
    assert asks["asks"] == [[0.03513, 10.0], [0.03514, 10.0], [0.03515, 10.0]]
    assert (asks["update_id"], asks["replica"]) == (77, 1)
    bids = await ubdcc(
        stack, "/get_bids?exchange=binance.com&market=ETHBTC&limit_count=2&debug=True", headers
    )
    assert bids["bids"] == [[0.03512, 2.0], [0.03511, 2.0]]
    assert bids["debug"]["cluster_execution_time"] >= 0 and bids["debug"]["used_pods"] == [
        "binance.com/ETHBTC#1"
    ]
    assert "/get_bids?" in bids["debug"]["url"]
    # threshold_volume: 0.03512 x 2 = 0.07024 fits, the second level would pass 0.1
    bids = await ubdcc(stack, "/get_bids?exchange=binance.com&market=ETHBTC&threshold_volume=0.1", headers)
    assert bids["bids"] == [[0.03512, 2.0]]
    bids = await ubdcc(stack, "/get_bids?exchange=binance.com&market=ETHBTC&threshold_volume=0.0001", headers)
    assert bids["bids"] == [[0.03512, 2.0]]  # the best level is always kept
    async with stack.http.get(f"{stack.url}/get_asks?exchange=binance.com&market=ETHBTC") as r:
        assert r.status == 401  # the main API still wants a key


async def test_error_ids(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    cases = [
        ("/get_asks?exchange=binance.com", "#1025"),
        ("/get_asks?exchange=binance.com&market=None", "#1025"),
        ("/get_asks?exchange=binance.com&market=", "#1025"),
        ("/get_asks?exchange=binance.com&market=ETHBTC&limit_count=x", "#1025"),
        ("/get_asks?exchange=binance.com&market=BTCUSDT", "#7000"),  # not subscribed
        ("/get_asks?exchange=binance.com&market=NOPE", "#7000"),
        ("/get_asks?exchange=binance.com&market=ETHBTC", "#4000"),  # no replica yet
        ("/create_depthcache?exchange=binance.com", "#1016"),
        ("/create_depthcache?exchange=binance.com&market=ETHBTC", "#1024"),
        ("/create_depthcache?exchange=binance.com&market=NOPE", "#8000"),
        ("/get_depthcache_info?exchange=binance.com&market=BTCUSDT", "#7000"),
        ("/stop_depthcache?exchange=binance.com&market=BTCUSDT", "#7000"),
        ("/get_credentials_list", "#8002"),
    ]
    for path, error_id in cases:
        body = await ubdcc(stack, path, headers)
        assert (body["result"], body["error_id"]) == ("ERROR", error_id), (path, body)
        assert body["event"] == path[1:].split("?")[0].upper() and body["message"]
    await stack.publish(ETH, 0, snapshot(3, status=BookStatus.RESYNCING))
    body = await ubdcc(stack, "/get_asks?exchange=binance.com&market=ETHBTC", headers)
    assert body["error_id"] == "#6000"
    await stack.publish(ETH, 0, snapshot(4))
    body = await ubdcc(stack, "/get_asks?exchange=binance.com&market=ETHBTC", headers)
    assert body["result"] == "OK"


async def test_create_list_info_stop_on_the_compat_listener(stack: Stack) -> None:
    base = stack.compat_url
    test = await ubdcc(stack, "/test", base=base)
    assert test["app"]["name"] == "ubdcc-restapi" and test["result"] == "OK"
    created = await ubdcc(
        stack,
        "/create_depthcache",
        post={"exchange": "binance.com", "market": "ETHBTC", "desired_quantity": 2, "update_interval": None},
        base=base,
    )
    assert created == {"result": "OK", "event": "CREATE_DEPTHCACHE"}
    many = await ubdcc(stack, "/create_depthcaches?exchange=binance.com&markets=ETHBTC,BTCUSDT", base=base)
    assert many["result"] == "OK"
    await stack.publish(ETH, 0, snapshot(1))
    await stack.publish(ETH, 1, snapshot(1, 1, status=BookStatus.RESYNCING))
    listing = await ubdcc(stack, "/get_depthcache_list", base=base)
    eth = listing["depthcache_list"]["binance.com"]["ETHBTC"]
    assert eth["DESIRED_QUANTITY"] == 2 and eth["EXCHANGE"] == "binance.com"
    assert {r: d["STATUS"] for r, d in eth["DISTRIBUTION"].items()} == {"0": "running", "1": "starting"}
    assert set(listing["depthcache_list"]["binance.com"]) == {"ETHBTC", "BTCUSDT"}
    info = await ubdcc(stack, "/get_depthcache_info?exchange=binance.com&market=BTCUSDT", base=base)
    assert info["depthcache_info"]["DISTRIBUTION"] == {
        "pending-0": {
            "STATUS": "starting",
            "CREATED_TIME": info["depthcache_info"]["CREATED_TIME"],
            "LAST_RESTART_TIME": None,
            "RESTARTS": 0,
        },
    }
    cluster = await ubdcc(stack, "/get_cluster_info", base=base)
    assert "ETHBTC" in cluster["db"]["depthcaches"]["binance.com"] and cluster["version"]
    stopped = await ubdcc(stack, "/stop_depthcache?exchange=binance.com&market=BTCUSDT", base=base)
    assert stopped == {"result": "OK", "event": "STOP_DEPTHCACHE"}
    async with stack.http.get(f"{base}/v1/books/binance.com/ETHBTC") as r:
        assert r.status == 404  # the compat listener serves the UBDCC routes only


async def test_the_real_ubdcc_client(stack: Stack) -> None:
    address = urlsplit(stack.compat_url)
    await stack.publish(ETH, 0, snapshot(11, bids=BIDS, asks=ASKS))
    await stack.publish(BTC, 0, snapshot(12))

    def session() -> dict[str, Any]:
        cluster = Cluster(address=address.hostname, port=address.port)  # calls /test
        return {
            "create": cluster.create_depthcache(exchange="binance.com", market="ETHBTC", desired_quantity=1),
            "again": cluster.create_depthcache(exchange="binance.com", market="ETHBTC"),
            "many": cluster.create_depthcaches(exchange="binance.com", markets=["ETHBTC", "BTCUSDT"]),
            "asks": cluster.get_asks(exchange="binance.com", market="ETHBTC", limit_count=2, debug=True),
            "bids": cluster.get_bids(exchange="binance.com", market="ETHBTC", threshold_volume=0.1),
            "list": cluster.get_depthcache_list(),
            "info": cluster.get_depthcache_info(exchange="binance.com", market="BTCUSDT"),
            "stop": cluster.stop_depthcache(exchange="binance.com", market="BTCUSDT"),
            "after": cluster.get_depthcache_list(),
        }

    calls = await asyncio.to_thread(session)
    assert calls["create"] == {"result": "OK", "event": "CREATE_DEPTHCACHE"}
    assert calls["again"]["error_id"] == "#1024"
    assert calls["many"]["result"] == "OK"
    assert calls["asks"]["asks"] == [[0.03513, 10.0], [0.03514, 10.0]]
    assert calls["asks"]["debug"]["transmission_time"] >= 0  # the client's own arithmetic worked
    assert calls["bids"]["bids"] == [[0.03512, 2.0]]
    assert set(calls["list"]["depthcache_list"]["binance.com"]) == {"ETHBTC", "BTCUSDT"}
    assert calls["info"]["depthcache_info"]["MARKET"] == "BTCUSDT"
    assert calls["stop"]["result"] == "OK"
    assert set(calls["after"]["depthcache_list"]["binance.com"]) == {"ETHBTC"}


async def test_create_subscribes_as_deep_as_ubdcc_clients_read(stack: Stack) -> None:
    _, key = await stack.tenant()
    headers = {"X-API-Key": key}
    one = await ubdcc(stack, "/create_depthcache?exchange=binance.com&market=ETHBTC", headers)
    many = await ubdcc(
        stack, "/create_depthcaches", headers, post={"exchange": "binance.com", "markets": ["BTCUSDT"]}
    )
    assert one["result"] == many["result"] == "OK"
    async with stack.http.get(f"{stack.url}/v1/subscriptions", headers=headers) as r:
        listing = await r.json()
    assert [(s["market"], s["depth"]) for s in listing["subscriptions"]] == [
        ("BTCUSDT", 1000),
        ("ETHBTC", 1000),
    ]

    # A tenant not allowed that deep is told so, rather than given a shallower book.
    _, shallow_key = await stack.tenant(max_depth=500)
    refused = await ubdcc(
        stack, "/create_depthcache?exchange=binance.com&market=ETHBTC", {"X-API-Key": shallow_key}
    )
    assert refused["error_id"] == "#8001" and "depth" in refused["message"]


async def test_the_compat_tenant_may_subscribe_1000_levels_deep(stack: Stack) -> None:
    created = await ubdcc(
        stack, "/create_depthcache?exchange=binance.com&market=ETHBTC", base=stack.compat_url
    )
    assert created["result"] == "OK"
    async with stack.http.get(f"{stack.url}/v1/admin/tenants", headers=stack.admin) as r:
        tenants = (await r.json())["tenants"]
    [compat] = [t for t in tenants if t["name"] == stack.deps.settings.compat_tenant]
    assert compat["max_depth"] >= 1000


async def status_of(stack: Stack, url: str, headers: dict[str, str] | None = None) -> int:
    async with stack.http.get(url, headers=headers) as r:
        await r.read()
        return r.status


async def test_a_keyless_compat_listener_changes_nothing_without_a_key(stack: Stack) -> None:
    """An <img> tag, a local user or a script without a key may read, never create or stop."""
    server, base = await serve(stack.deps, COMPAT_ROUTES, CompatTenant(stack.deps, "strict-compat"))
    stack.servers.append(server)
    create = f"{base}/create_depthcache?exchange=binance.com&market=ETHBTC"
    stop = f"{base}/stop_depthcache?exchange=binance.com&market=ETHBTC"
    async with stack.http.get(create) as r:
        assert r.status == 401
        error = await r.json()
    assert error["error"]["code"] == "unauthorized" and "docs/ubdcc.md" in error["error"]["message"]
    assert await status_of(stack, stop) == 401
    async with stack.http.post(f"{base}/create_depthcaches", json={"exchange": "binance.com"}) as r:
        assert r.status == 401
    listing = await ubdcc(stack, "/get_depthcache_list", base=base)
    assert listing["depthcache_list"] == {}

    # A client that sends a key acts as its tenant and may change what it holds.
    _, key = await stack.tenant()
    headers = {"X-API-Key": key}
    assert (await ubdcc(stack, "/create_depthcache?exchange=binance.com&market=ETHBTC", headers, base=base))[
        "result"
    ] == "OK"
    async with stack.http.get(f"{stack.url}/v1/subscriptions", headers=headers) as r:
        assert [s["market"] for s in (await r.json())["subscriptions"]] == ["ETHBTC"]
    assert (await ubdcc(stack, "/stop_depthcache?exchange=binance.com&market=ETHBTC", headers, base=base))[
        "result"
    ] == "OK"


async def test_the_compat_listener_refuses_web_pages_and_rebound_names(stack: Stack) -> None:
    """Even where keyless clients may change books, a browser or a rebound DNS name may not."""
    base, port = stack.compat_url, urlsplit(stack.compat_url).port
    create = f"{base}/create_depthcache?exchange=binance.com&market=ETHBTC"
    refused: list[dict[str, str]] = [
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-origin"},
        {"Host": f"evil.example:{port}"},
        {"Host": "rebound.localhost.evil.example"},
    ]
    for headers in refused:
        async with stack.http.get(create, headers=headers) as r:
            assert r.status == 403, headers
            assert (await r.json())["error"]["code"] == "forbidden"
        assert await status_of(stack, f"{base}/get_depthcache_list", headers) == 403, headers
    listing = await ubdcc(stack, "/get_depthcache_list", base=base)
    assert "ETHBTC" not in listing["depthcache_list"].get("binance.com", {})

    _, key = await stack.tenant()
    async with stack.http.get(create, headers={"Origin": "https://evil.example", "X-API-Key": key}) as r:
        assert r.status == 403  # a key a page got hold of does not let the page in either
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "[::1]", "LOCALHOST"):
        assert await status_of(stack, f"{base}/get_depthcache_list", {"Host": host}) == 200, host
    assert await status_of(stack, f"{base}/get_depthcache_list", {"Sec-Fetch-Site": "none"}) == 200
    assert await status_of(stack, f"{base}/test", {"Origin": "https://evil.example"}) == 200  # no data
