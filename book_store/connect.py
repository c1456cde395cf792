"""Opening the store: the one place a process turns its settings into a client.

ElastiCache keeps its AUTH token in a secret that ECS and Lambda inject as ``LADDER_REDIS_PASSWORD``,
apart from ``LADDER_REDIS_URL``, so the URL can be logged and shown without leaking it.

A command that meets a dropped connection is retried twice within about 0.1 s (enough to reconnect
to a store that is there), not with redis-py's default of ten retries backing off to a second
each: against a store that is down that holds every request for about five seconds, past clients'
timeouts, where the caller should answer 503 with ``Retry-After`` at once.
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


def store_client(url: str, password: Secret | None = None) -> redis.Redis:
    """A client (and its pool) for ``url``; ``password`` is used when the URL carries none."""
    retry = Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.05), RETRIES)
    if password is not None and password.get_secret_value():
        return redis.Redis.from_url(url, password=password.get_secret_value(), retry=retry)
    return redis.Redis.from_url(url, retry=retry)


def redacted(url: str) -> str:
    """``url`` with any password in it replaced by ``***``: what may be printed or logged."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
