"""The Lambda adapter with API Gateway HTTP API (payload 2.0) and Function URL events, on real Valkey."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from collections.abc import Iterator
from typing import Any

import pytest

from book_store.catalog import MarketCatalog
from book_store.connect import opened, store_client
from book_store.writer import BookWriter
from read_functions.server import lambda_handler
from tests.read_functions.helpers import ADMIN_KEY, ALPACA, ETH, MARKETS, PEPPER, snapshot
from tests.stores import TestStore

LAMBDA_DB = 2

API_GATEWAY_EVENT: dict[str, Any] = {
    "version": "2.0",
    "routeKey": "$default",
    "rawPath": "/healthz",
    "rawQueryString": "",
    "cookies": ["session=abc"],
    "headers": {
        "accept": "*/*",
        "content-length": "0",
        "host": "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com",
        "user-agent": "curl/8.5.0",
        "x-amzn-trace-id": "Root=1-65f0c0de-0123456789abcdef01234567",
        "x-forwarded-for": "203.0.113.7",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    },
    "requestContext": {
        "accountId": "123456789012",
        "apiId": "a1b2c3d4e5",
        "domainName": "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com",
        "domainPrefix": "a1b2c3d4e5",
        "http": {
            "method": "GET",
            "path": "/healthz",
            "protocol": "HTTP/1.1",
            "sourceIp": "203.0.113.7",
            "userAgent": "curl/8.5.0",
        },
        "requestId": "Ul2VNjCqDoEEJXw=",
        "routeKey": "$default",
        "stage": "$default",
        "time": "30/Nov/2026:12:00:00 +0000",
        "timeEpoch": 1796040000000,
    },
    "isBase64Encoded": False,
}

FUNCTION_URL_EVENT: dict[str, Any] = {
    "version": "2.0",
    "routeKey": "$default",
    "rawPath": "/healthz",
    "rawQueryString": "",
    "headers": {
        "x-amzn-tls-cipher-suite": "TLS_AES_128_GCM_SHA256",
        "x-amzn-tls-version": "TLSv1.3",
        "x-amzn-trace-id": "Root=1-65f0c0de-abcdef0123456789abcdef01",
        "x-forwarded-proto": "https",
        "host": "abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws",
        "x-forwarded-port": "443",
        "x-forwarded-for": "198.51.100.20",
        "accept": "*/*",
        "user-agent": "python-requests/2.32.3",
    },
    "requestContext": {
        "accountId": "anonymous",
        "apiId": "abcdefghijklmnopqrstuvwxyz012345",
        "domainName": "abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws",
        "domainPrefix": "abcdefghijklmnopqrstuvwxyz012345",
        "http": {
            "method": "GET",
            "path": "/healthz",
            "protocol": "HTTP/1.1",
            "sourceIp": "198.51.100.20",
            "userAgent": "python-requests/2.32.3",
        },
        "requestId": "4f1ad1f0-61d3-4e9b-9b4c-2d8b1e6f4a11",
        "routeKey": "$default",
        "stage": "$default",
        "time": "30/Nov/2026:12:00:00 +0000",
        "timeEpoch": 1796040000000,
    },
    "isBase64Encoded": False,
}


def event(
    template: dict[str, Any],
    method: str,
    path: str,
    query: str = "",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    *,
    base64_body: bool = False,
) -> dict[str, Any]:
    built = copy.deepcopy(template)
    built["rawPath"], built["rawQueryString"] = path, query
    built["requestContext"]["http"].update(method=method, path=path)
    built["headers"].update(headers or {})
    if body is not None:
        built["body"] = base64.b64encode(body).decode() if base64_body else body.decode()
        built["isBase64Encoded"] = base64_body
    return built


def invoke(built: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    answer = lambda_handler.handler(built, None)
    raw = base64.b64decode(answer["body"]) if answer["isBase64Encoded"] else answer["body"].encode()
    return answer["statusCode"], answer["headers"], raw


def run(coro: Any) -> Any:
    return lambda_handler._LOOP.run_until_complete(coro)


@pytest.fixture
def lambda_env(test_store: TestStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    url = test_store.database(LAMBDA_DB)
    test_store.flush(url)
    for name, value in {
        "LADDER_REDIS_URL": url,
        "LADDER_ADMIN_KEY": ADMIN_KEY,
        "LADDER_PEPPER": PEPPER,
    }.items():
        monkeypatch.setenv(name, value)

    async def seed() -> None:
        client = await opened(store_client(url, cluster=None))
        for exchange in ("binance.com", "alpaca-crypto"):
            await MarketCatalog(client).replace(exchange, [m for m in MARKETS if m.exchange == exchange])
        await client.aclose()

    run(seed())
    yield url
    app = lambda_handler._state.pop("app", None)
    if app is not None:
        run(app.close())


def publish(url: str, *items: tuple[Any, int, bytes]) -> None:
    async def write() -> None:
        client = await opened(store_client(url, cluster=None))
        writer = BookWriter(client)
        for book, replica, raw in items:
            writer.put(book, replica, raw)
        await writer.drain()
        await client.aclose()

    run(write())


def test_api_gateway_and_function_url_events(lambda_env: str) -> None:
    admin = {"authorization": f"Bearer {ADMIN_KEY}"}
    status, _, body = invoke(
        event(
            API_GATEWAY_EVENT,
            "POST",
            "/v1/admin/tenants",
            headers=admin,
            body=b'{"name": "lambda", "max_markets": 5, "rate_limit_rps": 100, "burst": 100}',
        )
    )
    assert status == 201, body
    tenant_id = json.loads(body)["id"]
    status, _, body = invoke(
        event(API_GATEWAY_EVENT, "POST", f"/v1/admin/tenants/{tenant_id}/keys", headers=admin)
    )
    key = {"x-api-key": json.loads(body)["key"]}
    for book in (ETH, ALPACA):
        payload = json.dumps({"exchange": book.exchange, "market": book.market}).encode()
        status, _, body = invoke(
            event(
                FUNCTION_URL_EVENT, "POST", "/v1/subscriptions", headers=key, body=payload, base64_body=True
            )
        )
        assert status == 201, body
    publish(lambda_env, (ETH, 0, snapshot(31)), (ALPACA, 0, snapshot(32)))

    status, headers, body = invoke(
        event(API_GATEWAY_EVENT, "GET", "/v1/books/binance.com/ETHBTC", "depth=2", key)
    )
    book = json.loads(body)
    assert status == 200 and book["update_id"] == 31 and len(book["bids"]) == 2
    assert headers["Content-Type"] == "application/json" and headers["X-Request-ID"] and headers["ETag"]

    status, headers, body = invoke(
        event(
            FUNCTION_URL_EVENT,
            "GET",
            "/v1/books/alpaca-crypto/BTC%2FUSD/asks",
            "",
            {**key, "accept-encoding": "gzip, br"},
        )
    )
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(body))["market"] == "BTC/USD"

    publish(lambda_env, (ETH, 0, snapshot(33)))  # no change feed in Lambda: the next read sees it
    _, _, body = invoke(event(API_GATEWAY_EVENT, "GET", "/v1/books/binance.com/ETHBTC", "", key))
    assert json.loads(body)["update_id"] == 33

    status, _, body = invoke(
        event(FUNCTION_URL_EVENT, "GET", "/get_asks", "exchange=binance.com&market=ETHBTC", key)
    )
    assert status == 200 and json.loads(body)["result"] == "OK"


def test_errors_and_streams_through_lambda(lambda_env: str) -> None:
    status, headers, body = invoke(event(API_GATEWAY_EVENT, "GET", "/v1/books/binance.com/ETHBTC"))
    assert status == 401 and json.loads(body)["error"]["code"] == "unauthorized"
    assert json.loads(body)["error"]["request_id"] == headers["X-Request-ID"]
    status, _, body = invoke(
        event(
            FUNCTION_URL_EVENT,
            "GET",
            "/v1/stream",
            "exchange=binance.com&market=ETHBTC",
            {"authorization": f"Bearer {ADMIN_KEY}", "upgrade": "websocket"},
        )
    )
    assert status == 400 and "server deployment" in json.loads(body)["error"]["message"]
    status, _, body = invoke(event(API_GATEWAY_EVENT, "GET", "/openapi.json"))
    assert status == 200 and json.loads(body)["openapi"] == "3.1.0"
    status, _, _ = invoke(event(API_GATEWAY_EVENT, "GET", "/metrics"))
    assert status == 401  # metrics name tenants: the operator's only
    admin = {"authorization": f"Bearer {ADMIN_KEY}"}
    status, headers, body = invoke(event(API_GATEWAY_EVENT, "GET", "/metrics", "", admin))
    assert status == 200 and headers["Content-Type"].startswith("text/plain") and b"ladder_read" in body
