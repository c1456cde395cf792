"""Control-plane fixtures: the control store on real Valkey and on DynamoDB served by moto.

``valkey_url`` (the session's Valkey) comes from tests/conftest.py; every test gets its own key
prefix or its own table, so tests may run in parallel against the same servers.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from redis.asyncio.cluster import RedisCluster
from werkzeug.serving import make_server

from book_store.connect import opened, store_client
from control_plane.stores.base import ControlStore
from control_plane.stores.dynamodb import DynamoControlStore, create_table
from control_plane.stores.redis import RedisControlStore
from tests.stores import TestStore
from tests.valkey_cluster import ValkeyCluster

_FAKE_AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.fixture(scope="session")
def dynamodb_url() -> Iterator[str]:
    """A moto server (DynamoDB over real HTTP) on a free port, with fake credentials in the env.

    Moto's own ThreadedMotoServer answers requests on many threads, and moto does not lock its
    tables, so two concurrent transactions could both pass their conditions. DynamoDB itself
    serialises writes to an item; serving one request at a time gives the same guarantee here,
    so the concurrency tests exercise our conditions, not moto's thread safety.
    """
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = make_server(
        "127.0.0.1",
        0,
        DomainDispatcherApplication(create_backend_app),
        threaded=False,
        request_handler=MotoRequestHandler,
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    with pytest.MonkeyPatch.context() as env:
        for name, value in _FAKE_AWS.items():
            env.setenv(name, value)
        thread.start()
        yield f"http://127.0.0.1:{server.server_port}"
        server.shutdown()
        thread.join()


@pytest.fixture
async def redis_store(test_store: TestStore, valkey_url: str) -> AsyncIterator[RedisControlStore]:
    client = await test_store.client(valkey_url)
    yield RedisControlStore(client, prefix=f"test-{uuid.uuid4().hex}:")
    await client.aclose()


@pytest.fixture
async def redis_cluster_store(valkey_cluster: ValkeyCluster) -> AsyncIterator[RedisControlStore]:
    """The redis store on the session's 3-primary cluster: every key of it shares one hash tag."""
    client = await opened(store_client(valkey_cluster.url, cluster=True))
    assert isinstance(client, RedisCluster)
    yield RedisControlStore(client, prefix=f"test-{uuid.uuid4().hex}:")
    await client.aclose()


@pytest.fixture
async def dynamodb_store(dynamodb_url: str) -> AsyncIterator[DynamoControlStore]:
    table = f"control-{uuid.uuid4().hex}"
    await create_table(table, endpoint_url=dynamodb_url)
    store = DynamoControlStore(table, endpoint_url=dynamodb_url)
    yield store
    await store.close()


@pytest.fixture(params=["redis", "redis_cluster", "dynamodb"])
def store(request: pytest.FixtureRequest) -> ControlStore:
    """The same contract, run once per implementation."""
    fixture: ControlStore = request.getfixturevalue(f"{request.param}_store")
    return fixture
