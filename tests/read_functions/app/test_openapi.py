"""The OpenAPI document: valid, exactly the served routes, and honoured under property-based testing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate as validate_spec
from redis.cluster import RedisCluster
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Ok

from book_store.codec import BookStatus, encode_message
from book_store.schema import CATALOG_INDEX, catalog_key
from read_functions.app import openapi
from read_functions.routes import ROUTES
from tests.read_functions.helpers import ADMIN_KEY, ETH, MARKETS, PEPPER, ServerProcess, snapshot
from tests.stores import SyncClient, TestStore

OPENAPI_DB = 3


def test_the_document_is_valid_openapi_31_and_lists_every_route() -> None:
    document = openapi.document(ROUTES)
    validate_spec(document)
    assert document["openapi"] == "3.1.0"
    documented = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    assert documented == {(r.method, r.path) for r in ROUTES}
    ids = [op["operationId"] for item in document["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))


def test_depth_and_max_depth_are_documented_with_their_bounds() -> None:
    schemas = openapi.document(ROUTES)["components"]["schemas"]
    for schema, name in [
        ("SubscriptionRequest", "depth"),
        ("Subscription", "depth"),
        ("Tenant", "max_depth"),
        ("TenantCreate", "max_depth"),
        ("TenantUpdate", "max_depth"),
    ]:
        field = schemas[schema]["properties"][name]
        assert (field["type"], field["minimum"], field["maximum"]) == ("integer", 1, 5000), schema
    described = schemas["SubscriptionRequest"]["properties"]["depth"]["description"]
    assert "default 100" in described and "binance.com-futures 1000" in described
    assert "max_depth" in described
    assert "default 1000" in schemas["TenantCreate"]["properties"]["max_depth"]["description"]


def _keep_fresh(client: SyncClient, stop: threading.Event) -> None:
    """Publish a synced snapshot of ETHBTC every 100 ms, as an ingest node would (sharded on a cluster)."""
    publish = client.spublish if isinstance(client, RedisCluster) else client.publish
    update_id = 1
    while not stop.wait(0.1):
        raw = snapshot(update_id, status=BookStatus.SYNCED)
        client.hset(ETH.snapshots, "0", raw)
        publish(ETH.channel, encode_message(0, raw))
        update_id += 1
    client.close()


@pytest.fixture(scope="module")
def live_api(test_store: TestStore) -> Iterator[tuple[str, dict[str, str]]]:
    url = test_store.database(OPENAPI_DB)
    test_store.flush(url)
    client = test_store.sync_client(url)
    for market in MARKETS:
        client.hset(
            catalog_key(market.exchange),
            market.market,
            f'{{"exchange":"{market.exchange}","market":"{market.market}","status":"TRADING",'
            f'"base":"{market.base}","quote":"{market.quote}"}}',
        )
        client.sadd(CATALOG_INDEX, market.exchange)
    stop = threading.Event()
    writer = threading.Thread(target=_keep_fresh, args=(test_store.sync_client(url), stop), daemon=True)
    writer.start()
    server = ServerProcess(
        [], {"LADDER_REDIS_URL": url, "LADDER_ADMIN_KEY": ADMIN_KEY, "LADDER_PEPPER": PEPPER}
    )
    try:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        tenant = requests.post(
            f"{server.url}/v1/admin/tenants",
            headers=admin,
            timeout=5,
            json={
                "name": "schemathesis",
                "max_markets": 5,
                "max_replicas": 2,
                "rate_limit_rps": 100000,
                "burst": 100000,
            },
        ).json()
        key = requests.post(
            f"{server.url}/v1/admin/tenants/{tenant['id']}/keys", headers=admin, timeout=5
        ).json()
        tenant_headers = {"X-API-Key": key["key"]}
        subscribed = requests.post(
            f"{server.url}/v1/subscriptions",
            headers=tenant_headers,
            timeout=5,
            json={"exchange": ETH.exchange, "market": ETH.market},
        )
        assert subscribed.status_code == 201
        yield server.url, tenant_headers
    finally:
        stop.set()
        writer.join()
        server.stop()
        client.close()


@pytest.mark.parametrize(("mode", "examples"), [(GenerationMode.POSITIVE, 4), (GenerationMode.NEGATIVE, 2)])
def test_no_server_errors_and_no_schema_violations(
    live_api: tuple[str, dict[str, str]], mode: GenerationMode, examples: int
) -> None:
    """Schemathesis generates requests for every operation; each answer must match the document."""
    url, tenant_headers = live_api
    api = schemathesis.openapi.from_url(f"{url}/openapi.json")
    session = requests.Session()
    for result in api.get_all_operations():
        assert isinstance(result, Ok), result.err()
        operation = result.ok()
        has_inputs = bool(operation.path_parameters or operation.query or operation.body)
        if mode is GenerationMode.NEGATIVE and not has_inputs:
            continue  # nothing to get wrong
        admin = "/admin/" in operation.path
        caller = {"Authorization": f"Bearer {ADMIN_KEY}"} if admin else tenant_headers

        exercise(operation, mode, examples, url, session, caller)


def exercise(
    operation: schemathesis.APIOperation[Any, Any, Any, Any],
    mode: GenerationMode,
    examples: int,
    url: str,
    session: requests.Session,
    caller: dict[str, str],
) -> None:
    """Run Hypothesis over one operation: every answer must match the document."""
    checks = [
        status_code_conformance,
        content_type_conformance,
        response_schema_conformance,
        response_headers_conformance,
    ]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def check(case: schemathesis.Case[schemathesis.APIOperation[Any, Any, Any, Any]]) -> None:
        response = case.call_and_validate(
            base_url=url, session=session, headers=caller, timeout=10, checks=checks
        )
        if response.status_code >= 500:
            # The one 5xx a healthy server gives: the caller asked for a fresher book than exists.
            what = f"{case.method} {case.formatted_path} {case.query}: {response.text}"
            assert response.status_code == 503, what
            assert response.json()["error"]["code"] == "book_too_old", what

    check()
