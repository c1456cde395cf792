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

A store is a Valkey/Redis Cluster (ElastiCache in cluster mode) when ``LADDER_REDIS_CLUSTER`` says
so or, unset, when the node the URL names answers ``INFO cluster`` with ``cluster_enabled:1``; the
client is then redis-py's ``RedisCluster``, which asks that node for the slot map, connects to
every primary and follows ``MOVED``/``ASK`` and topology changes. Every key of one book shares a
hash tag, so whatever touches one book stays in one slot. A node that cannot be asked at start is
taken for a single node (and said so in the log): set ``LADDER_REDIS_CLUSTER`` where that matters.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol, TypeAlias
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import MaxConnectionsError, RedisError

log = logging.getLogger(__name__)

StoreClient: TypeAlias = aioredis.Redis | RedisCluster
"""What :func:`store_client` returns: one node's client, or a cluster's."""


class Secret(Protocol):
    """A value that hides itself until asked (pydantic's ``SecretStr``)."""

    def get_secret_value(self) -> str: ...


RETRIES = 2


def store_client(
    url: str,
    password: Secret | None = None,
    *,
    cluster: bool | None = False,
    max_connections: int | None = None,
    pool_wait_s: float = 0.5,
) -> StoreClient:
    """A client (and its pool) for ``url``; ``password`` is used when the URL carries none.

    ``cluster=None`` asks the node (:func:`is_cluster`). A cluster client bounds each node's
    connections by ``max_connections`` too, and a call that finds them all busy waits up to
    ``pool_wait_s`` as well (:class:`WaitingCluster`).
    """
    secret = (password.get_secret_value() if password is not None else "") or None  # the URL's wins
    retry = Retry(ExponentialWithJitterBackoff(base=0.01, cap=0.05), RETRIES)
    if cluster is None:
        cluster = is_cluster(url, password)
    if cluster:
        if max_connections is None:
            return RedisCluster.from_url(url, retry=retry, password=secret)
        return WaitingCluster.from_url(
            url, retry=retry, password=secret, max_connections=max_connections, pool_wait_s=pool_wait_s
        )
    if max_connections is None:
        return aioredis.Redis.from_url(url, retry=retry, password=secret)
    pool = aioredis.BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=pool_wait_s, retry=retry, password=secret
    )
    return aioredis.Redis.from_pool(pool)


class WaitingCluster(RedisCluster):
    """A cluster client whose call, finding every connection to its node busy, waits up to
    ``pool_wait_s`` for one, as a single node's blocking pool does, where redis-py's refuses it at
    once (``MaxConnectionsError``, raised before anything is sent, so trying again is safe). Only
    single commands and scripts wait; a pipeline still fails at once."""

    def __init__(self, *args: Any, pool_wait_s: float = 0.5, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pool_wait_s = pool_wait_s

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.pool_wait_s
        while True:
            try:
                return await super().execute_command(*args, **kwargs)
            except MaxConnectionsError:
                if loop.time() >= deadline:
                    raise
                await asyncio.sleep(_POOL_POLL_S)


_POOL_POLL_S = 0.002
"""How often a waiting call looks for a connection come back (a call holds one for a round trip)."""


async def opened(client: StoreClient) -> StoreClient:
    """``client``, ready for calls from many tasks at once: a cluster client reads its slot map
    first. redis-py's ``RedisCluster`` (8.1) used by many calls at once before it has one fails some
    of them inside a connection (``AttributeError``, not a store error). A cluster that cannot be
    reached now is read on the first call instead."""
    if isinstance(client, RedisCluster):
        try:
            await client.initialize()
        except RedisError as exc:
            log.warning("the cluster's slot map cannot be read yet (%s); the first call reads it", exc)
    return client


async def get_many(client: StoreClient, keys: list[str]) -> list[bytes | str | None]:
    """The values of ``keys`` (``MGET``), which may lie in several slots: a cluster refuses an
    ``MGET`` across slots (``CROSSSLOT``), so there it is one ``MGET`` per slot in one pipeline
    (redis-py's ``mget_nonatomic``), each slot's keys read at once but not all slots together."""
    if isinstance(client, RedisCluster):
        return await client.mget_nonatomic(keys)
    return await client.mget(keys)


def is_cluster(url: str, password: Secret | None = None, *, timeout_s: float = 2.0) -> bool:
    """Whether the node ``url`` names runs in cluster mode (``INFO cluster``); False if it cannot say."""
    secret = password.get_secret_value() if password is not None else None
    try:
        with redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, password=secret or None
        ) as client:
            return bool(client.info("cluster").get("cluster_enabled"))
    except RedisError as exc:
        log.warning(
            "could not ask %s whether it is a cluster (%s); taking it for a single node "
            "(set LADDER_REDIS_CLUSTER to say)",
            redacted(url),
            exc,
        )
        return False


def redacted(url: str) -> str:
    """``url`` with any password in it replaced by ``***``: what may be printed or logged."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
