"""Opening the store: the one place a process turns its settings into a client.

ElastiCache keeps its AUTH token in a secret that ECS and Lambda inject as ``LADDER_REDIS_PASSWORD``,
apart from ``LADDER_REDIS_URL``, so the URL can be logged and shown without leaking it.
"""

from __future__ import annotations

from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as redis


class Secret(Protocol):
    """A value that hides itself until asked (pydantic's ``SecretStr``)."""

    def get_secret_value(self) -> str: ...


def store_client(url: str, password: Secret | None = None) -> redis.Redis:
    """A client (and its pool) for ``url``; ``password`` is used when the URL carries none."""
    if password is not None and password.get_secret_value():
        return redis.Redis.from_url(url, password=password.get_secret_value())
    return redis.Redis.from_url(url)


def redacted(url: str) -> str:
    """``url`` with any password in it replaced by ``***``: what may be printed or logged."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
