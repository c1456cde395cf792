"""Opening the store: the one place a process turns its settings into a client.

ElastiCache keeps its AUTH token in a secret that ECS and Lambda inject as ``LADDER_REDIS_PASSWORD``,
apart from ``LADDER_REDIS_URL``, so the URL can be logged and shown without leaking it.

A process that serves callers it does not control (a read worker) bounds its connections with
``max_connections``: a call that finds them all busy waits up to ``pool_wait_s`` for one to come
back, then fails as a store error (503 with ``Retry-After``), where redis-py's default pool would
refuse it at once however briefly the connections were busy.

A command that meets a dropped connection is retried twice within about 0.1 s (enough to reconnect
to a store that is there), not with redis-py's default of ten retries backing off to a second
each: against a store that went away that holds a request for seconds, past clients' timeouts,
where the caller should answer 503 with ``Retry-After`` at once.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff


class Secret(Protocol):
    """A value that hides itself until asked (pydantic's ``SecretStr``)."""

    def get_secret_value(self) -> str: ...


RETRIES = 2


def store_client(
    url: str, password: Secret | None = None, *, max_connections: int | None = None, pool_wait_s: float = 0.5
) -> redis.Redis:
    """A client (and its pool) for ``url``; ``password`` is used when the URL carries none."""
    secret = password.get_secret_value() if password is not None else ""
    retry = Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.05), RETRIES)
    if max_connections is None:
        if secret:
            return redis.Redis.from_url(url, password=secret, retry=retry)
        return redis.Redis.from_url(url, retry=retry)
    options = {"password": secret} if secret else {}
    pool = redis.BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=pool_wait_s, retry=retry, **options
    )
    return redis.Redis.from_pool(pool)


def redacted(url: str) -> str:
    """``url`` with any password in it replaced by ``***``: what may be printed or logged."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
