"""Opening the store: the one place a process turns its settings into a client.

ElastiCache keeps its AUTH token in a secret that ECS and Lambda inject as ``LADDER_REDIS_PASSWORD``,
apart from ``LADDER_REDIS_URL``, so the URL can be logged and shown without leaking it.

A process that serves callers it does not control (a read worker) bounds its connections with
``max_connections``: a call that finds them all busy waits up to ``pool_wait_s`` for one to come
back, then fails as a store error (503 with ``Retry-After``), where redis-py's default pool would
refuse it at once however briefly the connections were busy.
"""

from __future__ import annotations

from typing import Protocol

import redis.asyncio as redis


class Secret(Protocol):
    """A value that hides itself until asked (pydantic's ``SecretStr``)."""

    def get_secret_value(self) -> str: ...


def store_client(
    url: str, password: Secret | None = None, *, max_connections: int | None = None, pool_wait_s: float = 0.5
) -> redis.Redis:
    """A client (and its pool) for ``url``; ``password`` is used when the URL carries none."""
    secret = password.get_secret_value() if password is not None else ""
    if max_connections is None:
        return redis.Redis.from_url(url, password=secret) if secret else redis.Redis.from_url(url)
    options = {"password": secret} if secret else {}
    pool = redis.BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=pool_wait_s, **options
    )
    return redis.Redis.from_pool(pool)
