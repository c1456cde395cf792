"""Building the control plane's parts from settings: the store, and the pepper."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from book_store.connect import StoreClient, opened, store_client
from control_plane.errors import ConfigurationError
from control_plane.settings import ControlSettings
from control_plane.stores.base import ControlStore
from control_plane.stores.redis import RedisControlStore

PEPPER_BYTES = 32


@asynccontextmanager
async def open_control_store(
    settings: ControlSettings, client: StoreClient | None = None
) -> AsyncIterator[ControlStore]:
    """The configured control store, with whatever it needed opened and, on exit, closed.

    A Redis control store uses ``client`` when one is given (the caller's, which it closes itself:
    a read worker shares its one bounded pool), else a client of its own."""
    if settings.control_store == "dynamodb":
        # Imported here: boto3 is heavy, and a Redis-backed process (or Lambda cold start) never needs it.
        from control_plane.stores.dynamodb import DynamoControlStore

        dynamo = DynamoControlStore(
            settings.dynamodb_table,
            endpoint_url=settings.dynamodb_endpoint_url,
            region=settings.dynamodb_region,
        )
        try:
            yield dynamo
        finally:
            await dynamo.close()
        return
    url = settings.control_store_url
    if not url:
        raise ConfigurationError("LADDER_REDIS_URL is missing (the redis control store needs it)")
    if client is not None:
        yield RedisControlStore(client, prefix=settings.control_prefix)
        return
    # LADDER_REDIS_CLUSTER speaks of the book store; a control store of its own is asked.
    cluster = settings.redis_cluster if url == settings.redis_url else None
    own = await opened(store_client(url, settings.redis_password, cluster=cluster))
    try:
        yield RedisControlStore(own, prefix=settings.control_prefix)
    finally:
        await own.aclose()


async def resolve_pepper(settings: ControlSettings, store: ControlStore) -> bytes:
    """``LADDER_PEPPER`` if set; else the pepper kept in a Redis store (created on first use)."""
    if settings.pepper is not None:
        return settings.pepper.get_secret_value().encode("utf-8")
    if isinstance(store, RedisControlStore):
        return await store.ensure_pepper(secrets.token_bytes(PEPPER_BYTES))
    raise ConfigurationError("LADDER_PEPPER is missing (the dynamodb control store requires it)")
