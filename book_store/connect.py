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

Ladder's own connection for the write hot path
-----------------------------------------------
An ingest node writes a few small commands per book event (a delta stored, a delta published), a
loop turn's worth in one pipeline. redis-py turns each reply into a Python object through a chain
of coroutines and a timeout context per reply, which cost an ingest node more CPU per event than
the rest of the write; and every command it writes has a reply of one line (an integer, ``+OK`` or
an error). So the writer keeps its own connection per store node (:class:`StoreLink`): commands
are encoded once into one buffer (:func:`command`), written at once, and the answer is read as
lines, one per command, split in C. A command whose reply is not one line (a script's bulk reply,
an array) does not belong here.

An error reply does not break the exchange: the batch's other replies are still read, so the
connection stays aligned, and the batch fails as a whole (:class:`~ladder_process.errors.StoreError`
with the first error), as a failed pipeline does. A connection that drops, or a batch that gets no
whole answer within ``timeout_s``, fails the batch with
:class:`~ladder_process.errors.StoreUnavailableError` and is opened again for the next one.

:func:`open_connection` opens a connection of either kind from a store URL (``redis://``,
``rediss://``, ``unix://``; credentials in the URL), as the read side's change feed opens its own.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeAlias, TypeVar
from urllib.parse import parse_qs, parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import MaxConnectionsError, RedisError

from ladder_process.errors import StoreError, StoreUnavailableError

log = logging.getLogger(__name__)

StoreClient: TypeAlias = aioredis.Redis | RedisCluster
"""What :func:`store_client` returns: one node's client, or a cluster's."""


class Secret(Protocol):
    """A value that hides itself until asked (pydantic's ``SecretStr``)."""

    def get_secret_value(self) -> str: ...


RETRIES = 2


def node_url(
    pool: aioredis.ConnectionPool | Mapping[str, Any],
    connection_class: type | None = None,
    host: str | None = None,
    port: int | str | None = None,
) -> str:
    """The URL of the store node a redis-py pool (or a cluster node's connection settings, class,
    host and port) connects to, credentials and database included: what Ladder's own connections
    (:class:`StoreLink`) open."""
    kwargs: Mapping[str, Any] = pool.connection_kwargs if isinstance(pool, aioredis.ConnectionPool) else pool
    if isinstance(pool, aioredis.ConnectionPool):
        connection_class = pool.connection_class
    password = kwargs.get("password")
    username = kwargs.get("username") or "default"
    credentials = f"{quote(username, safe='')}:{quote(password, safe='')}@" if password else ""
    db = kwargs.get("db") or 0
    if "path" in kwargs:
        return f"unix://{credentials}{kwargs['path']}?db={db}"
    host = host or kwargs.get("host") or "127.0.0.1"
    port = port or kwargs.get("port") or 6379
    secure = connection_class is not None and issubclass(connection_class, aioredis.SSLConnection)
    params = {}
    if secure and str(kwargs.get("ssl_cert_reqs", "required")).lower() in {"none", "0", "certreqs.cert_none"}:
        params["ssl_cert_reqs"] = "none"
    if secure and kwargs.get("ssl_ca_certs"):
        params["ssl_ca_certs"] = str(kwargs["ssl_ca_certs"])  # a private CA
    query = f"?{urlencode(params)}" if params else ""
    bracketed = f"[{host}]" if ":" in host else host
    return f"{'rediss' if secure else 'redis'}://{credentials}{bracketed}:{port}/{db}{query}"


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


# -- Ladder's own connection for the write hot path -----------------------------------------------

_P = TypeVar("_P", bound=asyncio.Protocol)


def command(*parts: bytes) -> bytes:
    """A command in RESP2 (an array of bulk strings)."""
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        out.append(b"$%d\r\n%b\r\n" % (len(part), part))
    return b"".join(out)


def hset(key: bytes, field: bytes, value: bytes) -> bytes:
    """``HSET key field value`` in RESP2, formatted at once (the writer's most frequent command)."""
    return b"*4\r\n$4\r\nHSET\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n" % (
        len(key), key, len(field), field, len(value), value,
    )  # fmt: skip


def publish(verb: bytes, channel: bytes, message: bytes) -> bytes:
    """``PUBLISH`` (or ``SPUBLISH``, the ``verb``) ``channel message`` in RESP2, formatted at once."""
    return b"*3\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n" % (
        len(verb), verb, len(channel), channel, len(message), message,
    )  # fmt: skip


async def open_connection(url: str, factory: Callable[[], _P]) -> _P:
    """A connection to the store node of ``url`` with ``factory``'s protocol; when the URL carries
    credentials, ``AUTH`` is the first thing written (its ``+OK``, or the error that closes the
    connection, is the first reply), and a database other than 0 is selected next."""
    loop = asyncio.get_running_loop()
    parts = urlsplit(url)
    if parts.scheme == "unix":
        _, protocol = await loop.create_unix_connection(factory, parts.path)
    else:
        context = _ssl_context(parts.query) if parts.scheme == "rediss" else None
        host, port = parts.hostname or "127.0.0.1", parts.port or 6379
        _, protocol = await loop.create_connection(factory, host, port, ssl=context)
    return protocol


def opening(url: str) -> list[bytes]:
    """What a connection to ``url`` writes first, each with a one-line reply: ``AUTH``, ``SELECT``."""
    parts = urlsplit(url)
    first = []
    if parts.password is not None:
        credentials = [unquote(parts.username or "default").encode(), unquote(parts.password).encode()]
        first.append(command(b"AUTH", *credentials))
    db = parse_qs(parts.query).get("db", [parts.path.strip("/") if parts.scheme != "unix" else ""])[0]
    if db and db != "0":
        first.append(command(b"SELECT", db.encode()))
    return first


def _ssl_context(query: str) -> ssl.SSLContext:
    """The TLS of a ``rediss://`` URL, read as redis-py reads it: the system's CAs, or those of
    ``ssl_ca_certs=<file>`` (a private CA), and no verification at all with ``ssl_cert_reqs=none``."""
    params = {name.lower(): value for name, value in parse_qsl(query)}
    context = ssl.create_default_context(cafile=params.get("ssl_ca_certs") or None)
    if params.get("ssl_cert_reqs", "").lower() == "none":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class _LinkProtocol(asyncio.Protocol):
    """The socket: counts reply lines as they arrive and wakes the batch waiting for them."""

    def __init__(self) -> None:
        self.transport: asyncio.WriteTransport | None = None
        self.lines: list[bytes] = []
        self.wanted = 0
        self.answered: asyncio.Future[None] | None = None
        self.lost: BaseException | None = None
        self._rest = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a stream transport

    def data_received(self, data: bytes) -> None:
        lines = (self._rest + data).split(b"\r\n")
        self._rest = lines.pop()
        self.lines.extend(lines)
        if self.answered is not None and len(self.lines) >= self.wanted and not self.answered.done():
            self.answered.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc or ConnectionResetError("the store closed the connection")
        if self.answered is not None and not self.answered.done():
            self.answered.set_exception(self.lost)


class StoreLink:
    """One connection to one store node, for batches of commands with one-line replies."""

    def __init__(self, url: str, *, timeout_s: float = 10.0) -> None:
        self.url = url
        self._timeout_s = timeout_s
        self._protocol: _LinkProtocol | None = None

    async def execute(self, commands: Sequence[bytes]) -> list[bytes]:
        """Send ``commands`` (each from :func:`command`) in one write; their replies, each the
        line the server answered (``b":1"``, ``b"+OK"``). One batch at a time per link."""
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            protocol = self._protocol = await self._open()
        protocol.lines.clear()
        protocol.wanted = len(commands)
        protocol.answered = asyncio.get_running_loop().create_future()
        assert protocol.transport is not None
        protocol.transport.write(b"".join(commands))
        try:
            async with asyncio.timeout(self._timeout_s):
                await protocol.answered
        except (OSError, TimeoutError) as exc:
            self._drop()
            raise StoreUnavailableError(f"book store write failed: {type(exc).__name__}") from exc
        replies, protocol.lines = protocol.lines, []
        failed = next((line for line in replies if line[:1] == b"-"), None)
        if failed is not None:
            raise StoreError(f"book store write failed: {failed[1:].decode(errors='replace')}")
        return replies

    async def _open(self) -> _LinkProtocol:
        try:
            async with asyncio.timeout(self._timeout_s):
                protocol = await open_connection(self.url, _LinkProtocol)
                first = opening(self.url)
                if first:
                    self._protocol = protocol
                    protocol.wanted = len(first)
                    protocol.answered = asyncio.get_running_loop().create_future()
                    assert protocol.transport is not None
                    protocol.transport.write(b"".join(first))
                    await protocol.answered
        except (OSError, TimeoutError) as exc:
            self._drop()
            raise StoreUnavailableError(f"book store unreachable: {type(exc).__name__}") from exc
        refused = next((line for line in protocol.lines if line[:1] == b"-"), None)
        protocol.lines.clear()
        if refused is not None:
            self._drop()
            raise StoreError(f"book store refused the connection: {refused[1:].decode(errors='replace')}")
        return protocol

    def _drop(self) -> None:
        protocol, self._protocol = self._protocol, None
        if protocol is not None and protocol.transport is not None:
            protocol.transport.abort()

    async def close(self) -> None:
        self._drop()
