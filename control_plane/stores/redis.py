"""The control store on Redis / Valkey (the default, from one machine up to ElastiCache).

Theory of operation: every key carries the one hash tag ``{control}``, so the whole control data
set lives in one cluster slot and every Lua script or MULTI may touch any of it. Control data is
small (tenants, keys, subscriptions, nodes) and rarely written, and the read path caches what it
reads, so one slot is not a bottleneck; in exchange nothing needs a cross-slot protocol.

    <prefix>{control}:tenant:<id>          hash   Tenant fields (+ name_key)
    <prefix>{control}:tenants              zset   tenant id, scored by created_at
    <prefix>{control}:tenant-names         hash   casefolded name -> tenant id
    <prefix>{control}:subs:<tenant>        hash   "exchange|market" -> "replicas:depth:created_at"
    <prefix>{control}:book:<exch|market>   hash   tenant id -> "replicas:depth" (the book's subscribers)
    <prefix>{control}:books                set    "exchange|market" with at least one subscriber
    <prefix>{control}:key:<id>             hash   ApiKey fields
    <prefix>{control}:key-hash:<hash>      string key id
    <prefix>{control}:tenant-keys:<tenant> zset   key id, scored by created_at
    <prefix>{control}:tenant-live-keys:<tenant> zset key id, scored by when it stops working
    <prefix>{control}:key-children:<id>    set    ids of the keys minted with that key
    <prefix>{control}:node:<id>            hash   NodeInfo fields
    <prefix>{control}:nodes                set    node ids
    <prefix>{control}:assign:<node>        set    "exchange|market|replica|depth"
    <prefix>{control}:assigned             set    node ids that have assignments
    <prefix>{control}:generation:desired   string token, new with each write that changes desired_books
    <prefix>{control}:generation:assignments string token, new with each write of an assignment set
    <prefix>{control}:audit-seq            string the last audit event's sequence number
    <prefix>{control}:audit-log            zset   "<seq>|<event JSON>" scored by seq: every scope's events
    <prefix>{control}:audit-log:<scope>    zset   the same members of one scope (a tenant id, or
                                                  "operator"), its newest AUDIT_KEEP kept (they leave both)
    <prefix>{control}:audit                list   the version before scopes (moved to scope "legacy")
    <prefix>{control}:lease:<name>         string owner, with a PX expiry
    <prefix>{control}:pepper               string hex pepper, when the store keeps it
    <prefix>{control}:assignments:<node>   channel: a message whenever the node's set changes

The control loop reads every book's wish and every assignment each round; both are thousands of
hash fields and set members, where what changes them is rare. So each write that changes them
(``put_subscriptions``, a ``delete_subscriptions`` that removes one, ``update_tenant``;
``replace_assignments``, ``remove_node``) sets that read's ``generation:*`` key to a fresh random
token in the same script or MULTI, and ``generations`` reads both keys in one script: the loop
keeps what it read while the tokens stay the same. ``create_tenant`` leaves the desired
generation alone: a new tenant has no subscriptions, so no book's wish changes. Tokens rather
than counters: a store that lost its last writes (a failover) or was emptied and filled again
could count back to a number the loop already saw, with other contents; a random token never
comes back. Node records are not covered: the loop reads them every round anyway (heartbeats).

Values written before depth existed lack it (``"replicas:created_at"``, ``"replicas"``,
``"exchange|market|replica"``, a tenant without ``max_depth``) and read as the defaults of
control_plane.depth; a tenant without ``max_streams`` reads as its default.

The store borrows a ``redis.asyncio.Redis`` (bytes or decoded responses) that its owner closes.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterPipeline
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from book_store.connect import StoreClient
from book_store.schema import BookKey
from control_plane.depth import DEFAULT_DEPTH, DEFAULT_MAX_DEPTH
from control_plane.errors import (
    ConfigurationError,
    ConflictError,
    InvalidRequestError,
    LimitExceededError,
    NotFoundError,
    UnauthorizedError,
)
from control_plane.models import (
    DEFAULT_MAX_STREAMS,
    ApiKey,
    AuditEvent,
    BookWish,
    NodeInfo,
    ReplicaAssignment,
    Subscription,
    Tenant,
)
from control_plane.stores import _redis_scripts as lua
from control_plane.stores._common import (
    book_id,
    desired_from,
    error_boundary,
    max_markets_reached,
    name_key,
    parse_book_id,
    parse_replica_id,
    replica_id,
)
from control_plane.stores.base import AUDIT_LIMIT_MAX, LEGACY_SCOPE, Generations
from ladder_process.errors import StoreError

AUDIT_KEEP = 10_000
"""Audit events each scope keeps (a tenant's, the operator's), newest first."""
HASH_TAG = "{control}"
SCAN_PAGE = 500
"""Fields asked of each HSCAN page of a large hash (a page costs a few ms to parse)."""

_translated = error_boundary("Redis", (RedisConnectionError, RedisTimeoutError), (RedisError,))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _texts(values: Iterable[Any]) -> list[str]:
    return [_text(v) for v in values]


def _fields(raw: Mapping[Any, Any]) -> dict[str, str]:
    return {_text(k): _text(v) for k, v in raw.items()}


def _opt_int(text: str) -> int | None:
    return int(text) if text else None


def _opt_text(value: int | None) -> str:
    return "" if value is None else str(value)


def _tenant_fields(tenant: Tenant) -> dict[str, str]:
    return {
        "id": tenant.id,
        "name": tenant.name,
        "name_key": name_key(tenant.name),
        "max_markets": str(tenant.max_markets),
        "max_replicas": str(tenant.max_replicas),
        "max_depth": str(tenant.max_depth),
        "max_streams": str(tenant.max_streams),
        "rate_limit_rps": repr(tenant.rate_limit_rps),
        "burst": str(tenant.burst),
        "disabled": "1" if tenant.disabled else "0",
        "created_at": str(tenant.created_at),
    }


def _tenant(f: dict[str, str]) -> Tenant:
    return Tenant(
        id=f["id"],
        name=f["name"],
        max_markets=int(f["max_markets"]),
        max_replicas=int(f["max_replicas"]),
        rate_limit_rps=float(f["rate_limit_rps"]),
        burst=int(f["burst"]),
        disabled=f["disabled"] == "1",
        created_at=int(f["created_at"]),
        max_depth=int(f.get("max_depth", DEFAULT_MAX_DEPTH)),
        max_streams=int(f.get("max_streams", DEFAULT_MAX_STREAMS)),
    )


def _audit_event(row: str) -> AuditEvent:
    seq, _, event = row.partition("|")
    fields = json.loads(event)
    return AuditEvent(**{**fields, "scope": fields.get("scope", LEGACY_SCOPE), "id": seq})


def _audit_seq(cursor: str) -> int:
    if not cursor.isdigit():
        raise InvalidRequestError("before must be the id of an audit event")
    return int(cursor)


def _wish(text: str) -> BookWish:
    """One subscriber's ``"replicas:depth"`` (or ``"replicas"``, written before depth existed)."""
    replicas, _, depth = text.partition(":")
    return BookWish(int(replicas), int(depth) if depth else DEFAULT_DEPTH)


def _subscription(tenant_id: str, ref: str, value: str) -> Subscription:
    """A subscription from its field in ``subs:<tenant>`` (``"replicas[:depth]:created_at"``)."""
    book = parse_book_id(ref)
    wish, _, created_at = value.rpartition(":")
    replicas, depth = _wish(wish)
    return Subscription(tenant_id, book.exchange, book.market, replicas, int(created_at), depth)


def _key_fields(key: ApiKey) -> dict[str, str]:
    return {
        "id": key.id,
        "tenant_id": key.tenant_id,
        "prefix": key.prefix,
        "last4": key.last4,
        "key_hash": key.key_hash,
        "created_at": str(key.created_at),
        "last_used_at": _opt_text(key.last_used_at),
        "expires_at": _opt_text(key.expires_at),
        "revoked_at": _opt_text(key.revoked_at),
        "parent_id": key.parent_id or "",
    }


def _key(f: dict[str, str]) -> ApiKey:
    return ApiKey(
        id=f["id"],
        tenant_id=f["tenant_id"],
        prefix=f["prefix"],
        last4=f["last4"],
        key_hash=f["key_hash"],
        created_at=int(f["created_at"]),
        last_used_at=_opt_int(f.get("last_used_at", "")),
        expires_at=_opt_int(f.get("expires_at", "")),
        revoked_at=_opt_int(f.get("revoked_at", "")),
        parent_id=f.get("parent_id") or None,
    )


def _node_fields(node: NodeInfo) -> dict[str, str]:
    return {
        "id": node.id,
        "address": node.address,
        "capacity": str(node.capacity),
        "started_at": str(node.started_at),
        "heartbeat_at": str(node.heartbeat_at),
        "draining": "1" if node.draining else "0",
        "load": repr(node.load),
    }


def _node(f: dict[str, str]) -> NodeInfo:
    return NodeInfo(
        id=f["id"],
        address=f["address"],
        capacity=int(f["capacity"]),
        started_at=int(f["started_at"]),
        heartbeat_at=int(f["heartbeat_at"]),
        draining=f["draining"] == "1",
        load=float(f["load"]),
    )


def _flat(pairs: Mapping[str, str]) -> list[str]:
    return [item for pair in pairs.items() for item in pair]


def _token() -> str:
    """A fresh generation: random, so that no state of the store is ever named like another."""
    return secrets.token_hex(8)


class RedisControlStore:
    """:class:`~control_plane.stores.base.ControlStore` on Redis; see the module docstring."""

    def __init__(self, client: StoreClient, prefix: str = "ladder:") -> None:
        if "{" in prefix or "}" in prefix:
            raise ConfigurationError("LADDER_CONTROL_PREFIX must not contain braces (the hash tag)")
        self._client = client
        self.prefix = prefix
        self._base = f"{prefix}{HASH_TAG}:"
        self._create_tenant = client.register_script(lua.CREATE_TENANT)
        self._update_tenant = client.register_script(lua.UPDATE_TENANT)
        self._put_subscriptions = client.register_script(lua.PUT_SUBSCRIPTIONS)
        self._delete_subscriptions = client.register_script(lua.DELETE_SUBSCRIPTIONS)
        self._create_key = client.register_script(lua.CREATE_KEY)
        self._revoke_key = client.register_script(lua.REVOKE_KEY)
        self._touch_keys = client.register_script(lua.TOUCH_KEYS)
        self._update_if_exists = client.register_script(lua.UPDATE_IF_EXISTS)
        self._try_lease = client.register_script(lua.TRY_LEASE)
        self._release_lease = client.register_script(lua.RELEASE_LEASE)
        self._append_audit = client.register_script(lua.APPEND_AUDIT)
        self._generations = client.register_script(lua.GENERATIONS)

    @property
    def client(self) -> StoreClient:
        """The borrowed client (the assignment client subscribes to notifications on it)."""
        return self._client

    def _announce(self, pipe: Pipeline | ClusterPipeline, node_id: str, what: str) -> None:
        """Tell ``node_id`` its assignments changed, in the transaction that changed them (on a
        cluster with ``SPUBLISH``: the channel carries the store's tag, so it stays in the slot)."""
        if isinstance(pipe, ClusterPipeline):
            pipe.spublish(self.assignment_channel(node_id), what)
        else:
            pipe.publish(self.assignment_channel(node_id), what)

    def _k(self, *parts: str) -> str:
        return self._base + ":".join(parts)

    def assignment_channel(self, node_id: str) -> str:
        """The channel that gets a message whenever ``node_id``'s assignment set changes."""
        return self._k("assignments", node_id)

    # -- tenants ---------------------------------------------------------------------------
    @_translated
    async def create_tenant(self, tenant: Tenant) -> None:
        fields = _tenant_fields(tenant)
        keys = [self._k("tenant", tenant.id), self._k("tenant-names"), self._k("tenants")]
        args = [tenant.id, fields["name_key"], str(tenant.created_at), *_flat(fields)]
        if not await self._create_tenant(keys=keys, args=args):
            raise ConflictError(f"a tenant named {tenant.name!r} already exists")

    @_translated
    async def get_tenant(self, tenant_id: str) -> Tenant | None:
        raw = await self._client.hgetall(self._k("tenant", tenant_id))
        return _tenant(_fields(raw)) if raw else None

    @_translated
    async def list_tenants(self) -> list[Tenant]:
        return await self._tenants(_texts(await self._client.zrange(self._k("tenants"), 0, -1)))

    async def _tenants(self, ids: Collection[str]) -> list[Tenant]:
        async with self._client.pipeline(transaction=False) as pipe:
            for tenant_id in ids:
                pipe.hgetall(self._k("tenant", tenant_id))
            rows = await pipe.execute()
        return [_tenant(_fields(row)) for row in rows if row]

    @_translated
    async def update_tenant(self, tenant: Tenant) -> bool:
        fields = _tenant_fields(tenant)
        keys = [self._k("tenant", tenant.id), self._k("tenant-names"), self._k("generation", "desired")]
        args = [tenant.id, fields["name_key"], _token(), *_flat(fields)]
        outcome = await self._update_tenant(keys=keys, args=args)
        if outcome == -1:
            raise ConflictError(f"a tenant named {tenant.name!r} already exists")
        return bool(outcome)

    # -- API keys ---------------------------------------------------------------------------
    @_translated
    async def create_key(self, key: ApiKey, *, max_usable: int) -> ApiKey:
        parent = key.parent_id or key.id  # without a parent, the script does not read these
        keys = [
            self._k("key", key.id),
            self._k("key-hash", key.key_hash),
            self._k("tenant-keys", key.tenant_id),
            self._k("tenant-live-keys", key.tenant_id),
            self._k("key", parent),
            self._k("key-children", parent),
        ]
        fields = _key_fields(key)
        del fields["expires_at"], fields["parent_id"]
        args: list[str | int] = [
            self._base,
            key.tenant_id,
            key.id,
            key.created_at,
            max_usable,
            key.parent_id or "",
            _opt_text(key.expires_at),
            *_flat(fields),
        ]
        reply = await self._create_key(keys=keys, args=args)
        status = int(reply[0])
        if status == -2:
            raise LimitExceededError(f"a tenant may hold at most {max_usable} usable keys")
        if status == -3:
            raise UnauthorizedError("API key revoked or expired")
        return replace(key, expires_at=_opt_int(_text(reply[1])))

    @_translated
    async def get_key(self, key_id: str) -> ApiKey | None:
        raw = await self._client.hgetall(self._k("key", key_id))
        return _key(_fields(raw)) if raw else None

    @_translated
    async def get_key_by_hash(self, key_hash: str) -> ApiKey | None:
        key_id = await self._client.get(self._k("key-hash", key_hash))
        return None if key_id is None else await self.get_key(_text(key_id))

    @_translated
    async def list_keys(self, tenant_id: str) -> list[ApiKey]:
        ids = _texts(await self._client.zrange(self._k("tenant-keys", tenant_id), 0, -1))
        async with self._client.pipeline(transaction=False) as pipe:
            for key_id in ids:
                pipe.hgetall(self._k("key", key_id))
            rows = await pipe.execute()
        return [_key(_fields(row)) for row in rows if row]

    @_translated
    async def revoke_key(self, key_id: str, at: int, *, spare: str | None = None) -> ApiKey | None:
        args: list[str | int] = [self._base, at, key_id, spare or ""]
        if not await self._revoke_key(keys=[self._k("key", key_id)], args=args):
            return None
        return await self.get_key(key_id)

    @_translated
    async def touch_keys(self, last_used: Mapping[str, int]) -> None:
        if last_used:
            ids = list(last_used)
            keys = [self._k("key", key_id) for key_id in ids]
            await self._touch_keys(keys=keys, args=[last_used[key_id] for key_id in ids])

    # -- subscriptions ----------------------------------------------------------------------
    async def put_subscription(self, subscription: Subscription) -> tuple[Subscription, bool]:
        return (await self.put_subscriptions([subscription]))[0]

    @_translated
    async def put_subscriptions(
        self, subscriptions: Sequence[Subscription]
    ) -> list[tuple[Subscription, bool]]:
        if not subscriptions:
            return []
        tenant_id = subscriptions[0].tenant_id
        books = [book_id(s.book) for s in subscriptions]
        keys = [
            self._k("tenant", tenant_id),
            self._k("subs", tenant_id),
            self._k("books"),
            self._k("generation", "desired"),
        ]
        keys += [self._k("book", book) for book in books]
        args: list[str | int] = [tenant_id]
        for book, s in zip(books, subscriptions, strict=True):
            args += [book, f"{s.replicas}:{s.depth}", s.created_at]
        args.append(_token())
        reply = await self._put_subscriptions(keys=keys, args=args)
        status = int(reply[0])
        if status == -1:
            raise NotFoundError("no such tenant")
        if status == -2:
            raise max_markets_reached(int(reply[1]), int(reply[2]))
        return [
            (replace(s, created_at=int(_text(reply[2 + 2 * i]))), int(reply[1 + 2 * i]) == 1)
            for i, s in enumerate(subscriptions)
        ]

    async def delete_subscription(self, tenant_id: str, book: BookKey) -> bool:
        return (await self.delete_subscriptions(tenant_id, [book]))[0]

    @_translated
    async def delete_subscriptions(self, tenant_id: str, books: Sequence[BookKey]) -> list[bool]:
        if not books:
            return []
        refs = [book_id(book) for book in books]
        keys = [
            self._k("subs", tenant_id),
            self._k("books"),
            self._k("generation", "desired"),
            *(self._k("book", ref) for ref in refs),
        ]
        removed = await self._delete_subscriptions(keys=keys, args=[tenant_id, *refs, _token()])
        return [bool(r) for r in removed]

    @_translated
    async def list_subscriptions(self, tenant_id: str) -> list[Subscription]:
        raw = _fields(await self._client.hgetall(self._k("subs", tenant_id)))
        subscriptions = [_subscription(tenant_id, ref, value) for ref, value in raw.items()]
        return sorted(subscriptions, key=lambda s: s.book)

    @_translated
    async def subscribed_books(self, tenant_id: str) -> frozenset[BookKey]:
        # HSCAN pages, not one HGETALL: the caller's loop parses one page per turn (see the base).
        key, cursor = self._k("subs", tenant_id), 0
        books: set[BookKey] = set()
        while True:
            cursor, page = await self._client.hscan(key, cursor, count=SCAN_PAGE)
            books.update(parse_book_id(_text(ref)) for ref in page)
            if not cursor:
                return frozenset(books)

    @_translated
    async def desired_books(self) -> dict[BookKey, BookWish]:
        books = [_text(b) for b in await self._client.smembers(self._k("books"))]
        async with self._client.pipeline(transaction=False) as pipe:
            for ref in books:
                pipe.hgetall(self._k("book", ref))
            rows = await pipe.execute()
        wishes = [
            (tenant_id, parse_book_id(ref), _wish(wish))
            for ref, row in zip(books, rows, strict=True)
            for tenant_id, wish in _fields(row).items()
        ]
        tenants = await self._tenants({tenant_id for tenant_id, _, _ in wishes})
        return desired_from(wishes, {t.id: t for t in tenants})

    @_translated
    async def book_subscriber_count(self, book: BookKey) -> int:
        return int(await self._client.hlen(self._k("book", book_id(book))))

    # -- ingest nodes -----------------------------------------------------------------------
    @_translated
    async def register_node(self, node: NodeInfo) -> None:
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.delete(self._k("node", node.id))
            pipe.hset(self._k("node", node.id), items=_flat(_node_fields(node)))
            pipe.sadd(self._k("nodes"), node.id)
            await pipe.execute()

    @_translated
    async def heartbeat_node(self, node_id: str, at: int, load: float) -> bool:
        args = ["heartbeat_at", str(at), "load", repr(load)]
        return bool(await self._update_if_exists(keys=[self._k("node", node_id)], args=args))

    @_translated
    async def set_draining(self, node_id: str, draining: bool) -> bool:
        args = ["draining", "1" if draining else "0"]
        return bool(await self._update_if_exists(keys=[self._k("node", node_id)], args=args))

    @_translated
    async def list_nodes(self) -> list[NodeInfo]:
        ids = sorted(_text(i) for i in await self._client.smembers(self._k("nodes")))
        async with self._client.pipeline(transaction=False) as pipe:
            for node_id in ids:
                pipe.hgetall(self._k("node", node_id))
            rows = await pipe.execute()
        return [_node(_fields(row)) for row in rows if row]

    @_translated
    async def remove_node(self, node_id: str) -> None:
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.delete(self._k("node", node_id), self._k("assign", node_id))
            pipe.srem(self._k("nodes"), node_id)
            pipe.srem(self._k("assigned"), node_id)
            pipe.set(self._k("generation", "assignments"), _token())
            self._announce(pipe, node_id, "removed")
            await pipe.execute()

    # -- assignments ------------------------------------------------------------------------
    @_translated
    async def replace_assignments(self, node_id: str, replicas: Collection[ReplicaAssignment]) -> None:
        members = sorted(replica_id(r) for r in replicas)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.delete(self._k("assign", node_id))
            if members:
                pipe.sadd(self._k("assign", node_id), *members)
                pipe.sadd(self._k("assigned"), node_id)
            else:
                pipe.srem(self._k("assigned"), node_id)
            pipe.set(self._k("generation", "assignments"), _token())
            self._announce(pipe, node_id, "changed")
            await pipe.execute()

    @_translated
    async def get_assignments(self, node_id: str) -> list[ReplicaAssignment]:
        members = await self._client.smembers(self._k("assign", node_id))
        return sorted(parse_replica_id(_text(m), node_id) for m in members)

    @_translated
    async def list_assignments(self) -> list[ReplicaAssignment]:
        nodes = [_text(n) for n in await self._client.smembers(self._k("assigned"))]
        async with self._client.pipeline(transaction=False) as pipe:
            for node_id in nodes:
                pipe.smembers(self._k("assign", node_id))
            rows = await pipe.execute()
        return sorted(
            parse_replica_id(_text(m), node_id) for node_id, row in zip(nodes, rows, strict=True) for m in row
        )

    @_translated
    async def generations(self) -> Generations:
        keys = [self._k("generation", "desired"), self._k("generation", "assignments")]
        desired, assignments = await self._generations(keys=keys, args=[_token(), _token()])
        return Generations(_text(desired), _text(assignments))

    # -- audit ------------------------------------------------------------------------------
    @_translated
    async def append_audit(self, event: AuditEvent) -> None:
        fields = {k: v for k, v in event.to_json().items() if k != "id"}
        keys = [self._k("audit-seq"), self._k("audit-log"), self._k("audit-log", event.scope),
                self._k("audit"), self._k("audit-log", LEGACY_SCOPE)]  # fmt: skip
        await self._append_audit(keys=keys, args=[json.dumps(fields, separators=(",", ":")), AUDIT_KEEP])

    @_translated
    async def list_audit(
        self, limit: int, *, before: str | None = None, scope: str | None = None
    ) -> list[AuditEvent]:
        count = max(0, min(limit, AUDIT_LIMIT_MAX))
        if count == 0:
            return []
        log = self._k("audit-log") if scope is None else self._k("audit-log", scope)
        newest = "+inf" if before is None else f"({_audit_seq(before)}"
        rows = cast(list[bytes], await self._client.zrevrangebyscore(log, newest, "-inf", start=0, num=count))
        return [_audit_event(_text(row)) for row in rows]

    # -- scheduler lease --------------------------------------------------------------------
    @_translated
    async def try_lease(self, name: str, owner: str, now_ms: int, ttl_ms: int) -> bool:
        # Redis expires the lease on its own clock; now_ms is only needed by stores without TTLs.
        return bool(await self._try_lease(keys=[self._k("lease", name)], args=[owner, ttl_ms]))

    @_translated
    async def release_lease(self, name: str, owner: str) -> None:
        await self._release_lease(keys=[self._k("lease", name)], args=[owner])

    @_translated
    async def lease_held(self, name: str, now_ms: int) -> bool:
        return bool(await self._client.exists(self._k("lease", name)))  # expired: gone (PX)

    # -- pepper -----------------------------------------------------------------------------
    @_translated
    async def ensure_pepper(self, candidate: bytes) -> bytes:
        """The pepper kept in the store: ``candidate`` if none was kept yet, else the kept one.

        Lets a deployment without ``LADDER_PEPPER`` keep its keys valid across restarts. The
        pepper then lives next to the hashes it protects, so production should set it instead.
        """
        await self._client.set(self._k("pepper"), candidate.hex(), nx=True)
        kept = await self._client.get(self._k("pepper"))
        if kept is None:
            raise StoreError("the control store lost the pepper it just stored")
        return bytes.fromhex(_text(kept))

    async def close(self) -> None:
        """Nothing to release: the client belongs to whoever passed it in."""
