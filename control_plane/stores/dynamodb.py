"""The control store on DynamoDB (the serverless deployment), through boto3.

Theory of operation: one table (hash key ``pk``, range key ``sk``, index ``gsi1`` on
``gsi1pk``/``gsi1sk`` projecting everything, TTL attribute ``expires_at`` in epoch seconds; the
schema terraform deploys and :func:`create_table` reproduces) holds every item:

    pk                       sk            gsi1pk                gsi1sk
    TENANT#<id>              TENANT        TENANTS               <created_at>#<id>    + market_count
    TENANTNAME#<name_key>    NAME          -                     -                    tenant_id
    TENANT#<id>              SUB#<book>    SUBS                  <book>|<tenant id>
    KEY#<id>                 KEY           TENANTKEYS#<tenant>   <created_at>#<id>    + children: [S]
    TENANT#<id>              LIVEKEYS      -                     -                    live, version
    KEYHASH#<hash>           KEYHASH       -                     -                    key_id
    NODE#<id>                NODE          NODES                 <id>
    NODE#<id>                ASSIGN        ASSIGNMENTS           <id>                 replicas: [S]
    AUDIT                    <at>#<ns>#<r> -                     -                    expires_at (TTL)
    LEASE#<name>             LEASE         -                     -                    owner, until

``<book>`` is ``exchange|market``; each of ``replicas`` is ``exchange|market|replica|depth``.
Atomic steps are conditional writes or TransactWriteItems: a tenant's ``market_count`` moves in
the same transaction as its subscription item, under the condition
``market_count < max_markets``; a name item is claimed with ``attribute_not_exists``. A tenant's
``LIVEKEYS`` item maps each usable key to when it stops working (``live``); a new key is written
in the same transaction as that map, under the condition that its ``version`` is the one read, and
a minted key under the condition that its parent's revocation is the one its expiry was bounded
by (the parent's ``children`` gains it in that step, so a revocation always finds it).
A transaction that loses a race with another (``TransactionConflict``) is retried.

``expires_at`` is reserved for TTL (seconds); an API key's own expiry is ``key_expires_at`` (ms).
Lists that come from ``gsi1`` (tenants, keys, nodes, subscriptions of all tenants) are
eventually consistent, as GSIs are; single items are read with ``ConsistentRead``.

``generations`` answers unknown: the two reads it would vouch for (``desired_books`` and
``list_assignments``) come from ``gsi1``, which may still lag behind a write that a counter item
(read consistently) already shows, so the control loop could keep a stale read under the new
generation until the next write. The loop reads both every round here, as before.

boto3 blocks, so every call runs in a worker thread (``asyncio.to_thread``).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import secrets
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import boto3
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError

from book_store.schema import BookKey
from control_plane.errors import (
    ConflictError,
    InvalidRequestError,
    LimitExceededError,
    NotFoundError,
    UnauthorizedError,
)
from control_plane.models import (
    ApiKey,
    AuditEvent,
    BookWish,
    NodeInfo,
    ReplicaAssignment,
    Subscription,
    Tenant,
)
from control_plane.stores._common import (
    SEPARATOR,
    book_id,
    desired_from,
    error_boundary,
    max_markets_reached,
    name_key,
    parse_replica_id,
    replica_id,
)
from control_plane.stores._dynamo_items import (
    Item,
    api_key_from,
    audit_from,
    bool_attr,
    key_item,
    name_item,
    name_item_key,
    node_from,
    num_attr,
    primary_key,
    str_attr,
    subscription_from,
    tenant_fields,
    tenant_from,
    tenant_item,
    time_key,
)
from control_plane.stores.base import AUDIT_LIMIT_MAX, Generations
from ladder_process.errors import StoreError

AUDIT_RETENTION_S = 90 * 24 * 3600
_AUDIT_SK = re.compile(r"\d+#\d{20}#[0-9a-f]{8}")
_NEVER = 2**63 - 1
"""A key without an end, in the live-keys map (DynamoDB numbers have no infinity)."""
_TRANSACTION_ATTEMPTS = 8

_T = TypeVar("_T")

_translated = error_boundary("DynamoDB", (HTTPClientError,), (BotoCoreError, ClientError))


class _Cancelled(StoreError):
    """A transaction was cancelled; ``reasons`` has one code per item (``None`` = that item was fine)."""

    def __init__(self, reasons: list[str | None]) -> None:
        super().__init__(f"a control store transaction was cancelled: {reasons}")
        self.reasons = reasons

    @property
    def conflict(self) -> bool:
        return "TransactionConflict" in self.reasons

    def failed(self, index: int) -> bool:
        return self.reasons[index] == "ConditionalCheckFailed"


def _until(key: ApiKey) -> int:
    until = key.usable_until
    return _NEVER if until is None else until


def _live_keys_put(tenant_id: str, live: Mapping[str, int], version: int | None) -> Item:
    """Write the tenant's live-keys map if its version is still ``version`` (None: no map yet)."""
    put: Item = {
        "Item": {
            **primary_key(f"TENANT#{tenant_id}", "LIVEKEYS"),
            "live": {"M": {key_id: num_attr(until) for key_id, until in live.items()}},
            "version": num_attr(0 if version is None else version + 1),
        },
        "ConditionExpression": "attribute_not_exists(pk)",
    }
    if version is not None:
        put["ConditionExpression"] = "version = :version"
        put["ExpressionAttributeValues"] = {":version": num_attr(version)}
    return put


def _adopt(parent: ApiKey, child_id: str) -> Item:
    """Record ``child_id`` among the parent's children, if its revocation is still the one read."""
    update: Item = {
        "Key": primary_key(f"KEY#{parent.id}", "KEY"),
        "UpdateExpression": "ADD children :child",
        "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(revoked_at)",
        "ExpressionAttributeValues": {":child": {"SS": [child_id]}},
    }
    if parent.revoked_at is not None:
        update["ConditionExpression"] = "revoked_at = :revoked"
        update["ExpressionAttributeValues"][":revoked"] = num_attr(parent.revoked_at)
    return update


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _subscription_item(sub: Subscription) -> Item:
    ref = book_id(sub.book)
    return {
        **primary_key(f"TENANT#{sub.tenant_id}", f"SUB#{ref}"),
        "gsi1pk": str_attr("SUBS"),
        "gsi1sk": str_attr(f"{ref}{SEPARATOR}{sub.tenant_id}"),
        "tenant_id": str_attr(sub.tenant_id),
        "exchange": str_attr(sub.exchange),
        "market": str_attr(sub.market),
        "replicas": num_attr(sub.replicas),
        "depth": num_attr(sub.depth),
        "created_at": num_attr(sub.created_at),
    }


class DynamoControlStore:
    """:class:`~control_plane.stores.base.ControlStore` on one DynamoDB table."""

    def __init__(
        self, table_name: str, *, endpoint_url: str | None = None, region: str = "us-east-1"
    ) -> None:
        self._table = table_name
        self._client: Any = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name=region)

    async def _run(self, call: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        return await asyncio.to_thread(call, *args, **kwargs)

    # -- low-level helpers (run in a worker thread) ------------------------------------------
    def _get(self, pk: str, sk: str) -> Item | None:
        reply = self._client.get_item(TableName=self._table, Key=primary_key(pk, sk), ConsistentRead=True)
        item: Item | None = reply.get("Item")
        return item

    def _query(self, **kwargs: Any) -> list[Item]:
        items: list[Item] = []
        while True:
            reply = self._client.query(TableName=self._table, **kwargs)
            items.extend(reply.get("Items", []))
            if "LastEvaluatedKey" not in reply:
                return items
            kwargs["ExclusiveStartKey"] = reply["LastEvaluatedKey"]

    def _query_index(self, gsi1pk: str, begins_with: str | None = None) -> list[Item]:
        condition = "gsi1pk = :pk"
        values: Item = {":pk": str_attr(gsi1pk)}
        if begins_with is not None:
            condition += " AND begins_with(gsi1sk, :prefix)"
            values[":prefix"] = str_attr(begins_with)
        return self._query(
            IndexName="gsi1", KeyConditionExpression=condition, ExpressionAttributeValues=values
        )

    def _transact(self, *items: Item) -> None:
        """Run a transaction; raise _Cancelled with the per-item reasons if a condition failed."""
        requests = [{op: {**body, "TableName": self._table}} for item in items for op, body in item.items()]
        try:
            self._client.transact_write_items(TransactItems=requests)
        except ClientError as exc:
            if _error_code(exc) != "TransactionCanceledException":
                raise
            reasons = [r.get("Code") for r in exc.response.get("CancellationReasons", [])]
            raise _Cancelled([None if code in (None, "None") else code for code in reasons]) from exc

    def _conditional(self, call: Callable[..., Any], **kwargs: Any) -> Any:
        """Run a conditional write; None when its condition failed, else the reply."""
        try:
            return call(TableName=self._table, **kwargs)
        except ClientError as exc:
            if _error_code(exc) == "ConditionalCheckFailedException":
                return None
            raise

    def _retrying(self, attempt: Callable[[], _T]) -> _T:
        """Run ``attempt`` until it stops losing races with concurrent transactions."""
        for tries in range(1, _TRANSACTION_ATTEMPTS):
            try:
                return attempt()
            except _Cancelled as exc:
                if not exc.conflict:
                    raise
            # This runs in a worker thread (asyncio.to_thread), never on the event loop.
            time.sleep(random.uniform(0.005, 0.02) * tries)
        return attempt()

    # -- tenants ---------------------------------------------------------------------------
    @_translated
    async def create_tenant(self, tenant: Tenant) -> None:
        def create() -> None:
            claim = name_item(name_key(tenant.name), tenant.id)
            try:
                self._retrying(
                    lambda: self._transact(
                        {"Put": {"Item": claim, "ConditionExpression": "attribute_not_exists(pk)"}},
                        {
                            "Put": {
                                "Item": tenant_item(tenant),
                                "ConditionExpression": "attribute_not_exists(pk)",
                            }
                        },
                    )
                )
            except _Cancelled as exc:
                if exc.failed(0):
                    raise ConflictError(f"a tenant named {tenant.name!r} already exists") from None
                raise

        await self._run(create)

    @_translated
    async def get_tenant(self, tenant_id: str) -> Tenant | None:
        item = await self._run(self._get, f"TENANT#{tenant_id}", "TENANT")
        return None if item is None else tenant_from(item)

    @_translated
    async def list_tenants(self) -> list[Tenant]:
        return [tenant_from(item) for item in await self._run(self._query_index, "TENANTS")]

    @_translated
    async def update_tenant(self, tenant: Tenant) -> bool:
        return await self._run(self._update_tenant, tenant)

    def _update_tenant(self, tenant: Tenant) -> bool:
        fields = tenant_fields(tenant)
        names = {f"#{name}": name for name in fields}
        values = {f":{name}": value for name, value in fields.items()}
        update = {
            "Key": primary_key(f"TENANT#{tenant.id}", "TENANT"),
            "UpdateExpression": "SET " + ", ".join(f"#{name} = :{name}" for name in fields),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        for _ in range(_TRANSACTION_ATTEMPTS):
            current = self._get(f"TENANT#{tenant.id}", "TENANT")
            if current is None:
                return False
            old_key, new_key = current["name_key"]["S"], fields["name_key"]["S"]
            if old_key == new_key:
                done = self._conditional(
                    self._client.update_item, ConditionExpression="attribute_exists(pk)", **update
                )
                return done is not None
            owner = {":owner": str_attr(tenant.id)}
            try:
                self._transact(
                    {
                        "Put": {
                            "Item": name_item(new_key, tenant.id),
                            "ConditionExpression": "attribute_not_exists(pk) OR tenant_id = :owner",
                            "ExpressionAttributeValues": owner,
                        }
                    },
                    {
                        "Delete": {
                            "Key": name_item_key(old_key),
                            "ConditionExpression": "tenant_id = :owner",
                            "ExpressionAttributeValues": owner,
                        }
                    },
                    {
                        "Update": {
                            **update,
                            "ConditionExpression": "#name_key = :old_name_key",
                            "ExpressionAttributeValues": {**values, ":old_name_key": str_attr(old_key)},
                        }
                    },
                )
                return True
            except _Cancelled as exc:
                if exc.failed(0):
                    raise ConflictError(f"a tenant named {tenant.name!r} already exists") from None
                # The tenant changed under us (or a conflict): read it again and retry.
        raise ConflictError("the tenant is being changed concurrently; try again")

    # -- API keys ---------------------------------------------------------------------------
    @_translated
    async def create_key(self, key: ApiKey, *, max_usable: int) -> ApiKey:
        return await self._run(self._create_key, key, max_usable)

    def _create_key(self, key: ApiKey, max_usable: int) -> ApiKey:
        hash_item = {**primary_key(f"KEYHASH#{key.key_hash}", "KEYHASH"), "key_id": str_attr(key.id)}
        for tries in range(1, _TRANSACTION_ATTEMPTS + 1):
            stored, guards = key, []
            if key.parent_id is not None:
                parent_item = self._get(f"KEY#{key.parent_id}", "KEY")
                parent = None if parent_item is None else api_key_from(parent_item)
                if parent is None or not parent.usable_at(key.created_at):
                    raise UnauthorizedError("API key revoked or expired")
                ends = [t for t in (key.expires_at, parent.usable_until) if t is not None]
                stored = replace(key, expires_at=min(ends) if ends else None)
                guards.append({"Update": _adopt(parent, key.id)})
            live, version = self._live_keys(key.tenant_id, key.created_at)
            if len(live) >= max_usable:
                raise LimitExceededError(f"a tenant may hold at most {max_usable} usable keys")
            live[key.id] = _until(stored)
            try:
                self._transact(
                    {"Put": {"Item": key_item(stored), "ConditionExpression": "attribute_not_exists(pk)"}},
                    {"Put": {"Item": hash_item, "ConditionExpression": "attribute_not_exists(pk)"}},
                    {"Put": _live_keys_put(key.tenant_id, live, version)},
                    *guards,
                )
                return stored
            except _Cancelled as exc:
                if exc.failed(0) or exc.failed(1):
                    raise
            # Another key was added or revoked, or the parent revoked, meanwhile: read again.
            time.sleep(random.uniform(0.005, 0.02) * tries)
        raise ConflictError("the tenant's keys are being changed concurrently; try again")

    def _live_keys(self, tenant_id: str, now: int) -> tuple[dict[str, int], int | None]:
        """The tenant's keys usable at ``now`` with when each stops working, and the map's version
        (None before the tenant had one: then it is built from the tenant's keys)."""
        item = self._get(f"TENANT#{tenant_id}", "LIVEKEYS")
        if item is None:
            keys = (api_key_from(i) for i in self._query_index(f"TENANTKEYS#{tenant_id}"))
            return {k.id: _until(k) for k in keys if k.usable_at(now)}, None
        live = {key_id: int(value["N"]) for key_id, value in item["live"]["M"].items()}
        return {key_id: until for key_id, until in live.items() if until > now}, int(item["version"]["N"])

    def _shorten_live_key(self, key: ApiKey) -> None:
        """Bring the revoked ``key``'s end in its tenant's live map forward (kept for the count)."""
        for tries in range(1, _TRANSACTION_ATTEMPTS + 1):
            item = self._get(f"TENANT#{key.tenant_id}", "LIVEKEYS")
            if item is None:
                return  # built from the keys themselves on the next create
            live = {key_id: int(value["N"]) for key_id, value in item["live"]["M"].items()}
            if live.get(key.id, 0) <= _until(key):
                return
            live[key.id] = _until(key)
            put = _live_keys_put(key.tenant_id, live, int(item["version"]["N"]))
            if self._conditional(self._client.put_item, **put) is not None:
                return
            time.sleep(random.uniform(0.005, 0.02) * tries)
        raise ConflictError("the tenant's keys are being changed concurrently; try again")

    @_translated
    async def get_key(self, key_id: str) -> ApiKey | None:
        item = await self._run(self._get, f"KEY#{key_id}", "KEY")
        return None if item is None else api_key_from(item)

    @_translated
    async def get_key_by_hash(self, key_hash: str) -> ApiKey | None:
        def lookup() -> ApiKey | None:
            pointer = self._get(f"KEYHASH#{key_hash}", "KEYHASH")
            item = None if pointer is None else self._get(f"KEY#{pointer['key_id']['S']}", "KEY")
            return None if item is None else api_key_from(item)

        return await self._run(lookup)

    @_translated
    async def list_keys(self, tenant_id: str) -> list[ApiKey]:
        return [api_key_from(item) for item in await self._run(self._query_index, f"TENANTKEYS#{tenant_id}")]

    @_translated
    async def revoke_key(self, key_id: str, at: int, *, spare: str | None = None) -> ApiKey | None:
        def revoke_one(target: str) -> Item | None:
            """The key's item after moving its revocation to ``at``; None if it did not move."""
            reply = self._conditional(
                self._client.update_item,
                Key=primary_key(f"KEY#{target}", "KEY"),
                UpdateExpression="SET revoked_at = :at",
                ConditionExpression=(
                    "attribute_exists(pk) AND (attribute_not_exists(revoked_at) OR revoked_at > :at)"
                ),
                ExpressionAttributeValues={":at": num_attr(at)},
                ReturnValues="ALL_NEW",
            )
            return None if reply is None else dict(reply["Attributes"])

        def revoke() -> ApiKey | None:
            # A key whose revocation did not move already ends by ``at``, and so does everything
            # minted from it (a minted key never outlives its parent): the walk stops there.
            pending = [key_id]
            while pending:
                item = revoke_one(pending.pop())
                if item is not None:
                    self._shorten_live_key(api_key_from(item))
                    children = item.get("children", {}).get("SS", [])
                    if spare in children:
                        self._client.update_item(
                            TableName=self._table,
                            Key=primary_key(f"KEY#{item['id']['S']}", "KEY"),
                            UpdateExpression="DELETE children :spared",
                            ExpressionAttributeValues={":spared": {"SS": [spare]}},
                        )
                    pending.extend(child for child in children if child != spare)
            item = self._get(f"KEY#{key_id}", "KEY")
            return None if item is None else api_key_from(item)

        return await self._run(revoke)

    @_translated
    async def touch_keys(self, last_used: Mapping[str, int]) -> None:
        def touch() -> None:
            for key_id, at in last_used.items():
                self._conditional(
                    self._client.update_item,
                    Key=primary_key(f"KEY#{key_id}", "KEY"),
                    UpdateExpression="SET last_used_at = :at",
                    ConditionExpression=(
                        "attribute_exists(pk) AND (attribute_not_exists(last_used_at) OR last_used_at < :at)"
                    ),
                    ExpressionAttributeValues={":at": num_attr(at)},
                )

        if last_used:
            await self._run(touch)

    # -- subscriptions ----------------------------------------------------------------------
    @_translated
    async def put_subscription(self, subscription: Subscription) -> tuple[Subscription, bool]:
        return await self._run(self._put_subscription, subscription)

    @_translated
    async def put_subscriptions(
        self, subscriptions: Sequence[Subscription]
    ) -> list[tuple[Subscription, bool]]:
        return await self._run(self._put_subscriptions, subscriptions) if subscriptions else []

    def _put_subscription(self, sub: Subscription) -> tuple[Subscription, bool]:
        pk = f"TENANT#{sub.tenant_id}"
        count_it = {
            "Update": {
                "Key": primary_key(pk, "TENANT"),
                "UpdateExpression": "SET market_count = market_count + :one",
                "ConditionExpression": "attribute_exists(pk) AND market_count < max_markets",
                "ExpressionAttributeValues": {":one": num_attr(1)},
            }
        }
        create = {"Put": {"Item": _subscription_item(sub), "ConditionExpression": "attribute_not_exists(pk)"}}
        for _ in range(_TRANSACTION_ATTEMPTS):
            try:
                self._retrying(lambda: self._transact(create, count_it))
                return sub, True
            except _Cancelled as exc:
                if not exc.failed(0) and exc.failed(1):
                    if self._get(pk, "TENANT") is None:
                        raise NotFoundError("no such tenant") from None
                    raise max_markets_reached(1, 0) from None
                if not exc.failed(0):
                    raise
            stored = self._update_wish(sub)
            if stored is not None:
                return stored, False
            # Deleted between our two steps: try to create it again.
        raise ConflictError("the subscription is being changed concurrently; try again")

    def _put_subscriptions(self, subs: Sequence[Subscription]) -> list[tuple[Subscription, bool]]:
        """Reserve room for every market the call adds in one conditional write of the tenant's
        ``market_count`` (the atomic check), then write the items; a market another call created
        in between gives its reservation back and is updated instead."""
        pk = f"TENANT#{subs[0].tenant_id}"
        existing = {item["sk"]["S"] for item in self._subscription_items(pk)}
        adding = {s.book for s in subs if f"SUB#{book_id(s.book)}" not in existing}
        self._reserve_markets(pk, len(adding))
        results: list[tuple[Subscription, bool]] = []
        for sub in subs:
            if sub.book in adding:
                item = _subscription_item(sub)
                if self._conditional(
                    self._client.put_item, Item=item, ConditionExpression="attribute_not_exists(pk)"
                ):
                    results.append((sub, True))
                    continue
                self._reserve_markets(pk, -1)
            stored = self._update_wish(sub)
            results.append((stored, False) if stored is not None else self._put_subscription(sub))
        return results

    def _reserve_markets(self, pk: str, markets: int) -> None:
        """Move the tenant's ``market_count`` by ``markets`` if it stays within ``max_markets``
        (a negative move always fits); NotFoundError for an unknown tenant."""
        for tries in range(1, _TRANSACTION_ATTEMPTS + 1):
            tenant = self._get(pk, "TENANT")
            if tenant is None:
                raise NotFoundError("no such tenant")
            if markets == 0:
                return
            limit, count = int(tenant["max_markets"]["N"]), int(tenant["market_count"]["N"])
            if markets > 0 and count + markets > limit:
                raise max_markets_reached(markets, max(limit - count, 0))
            if self._conditional(
                self._client.update_item,
                Key=primary_key(pk, "TENANT"),
                UpdateExpression="SET market_count = :moved",
                ConditionExpression="max_markets = :limit AND market_count = :count",
                ExpressionAttributeValues={
                    ":moved": num_attr(count + markets),
                    ":limit": num_attr(limit),
                    ":count": num_attr(count),
                },
            ):
                return
            time.sleep(random.uniform(0.005, 0.02) * tries)  # in a worker thread, never on the loop
        raise ConflictError("the tenant's subscriptions are being changed concurrently; try again")

    def _update_wish(self, sub: Subscription) -> Subscription | None:
        """Set an existing subscription's replicas and depth; None if it does not exist."""
        reply = self._conditional(
            self._client.update_item,
            Key=primary_key(f"TENANT#{sub.tenant_id}", f"SUB#{book_id(sub.book)}"),
            UpdateExpression="SET replicas = :replicas, #depth = :depth",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={"#depth": "depth"},  # DEPTH is a DynamoDB reserved word
            ExpressionAttributeValues={":replicas": num_attr(sub.replicas), ":depth": num_attr(sub.depth)},
            ReturnValues="ALL_NEW",
        )
        return None if reply is None else subscription_from(reply["Attributes"])

    def _subscription_items(self, pk: str) -> list[Item]:
        return self._query(
            KeyConditionExpression="pk = :pk AND begins_with(sk, :sub)",
            ExpressionAttributeValues={":pk": str_attr(pk), ":sub": str_attr("SUB#")},
            ConsistentRead=True,
        )

    @_translated
    async def delete_subscription(self, tenant_id: str, book: BookKey) -> bool:
        return await self._run(self._delete_subscription, tenant_id, book)

    @_translated
    async def delete_subscriptions(self, tenant_id: str, books: Sequence[BookKey]) -> list[bool]:
        return await self._run(lambda: [self._delete_subscription(tenant_id, book) for book in books])

    def _delete_subscription(self, tenant_id: str, book: BookKey) -> bool:
        pk, sk = f"TENANT#{tenant_id}", f"SUB#{book_id(book)}"
        try:
            self._retrying(
                lambda: self._transact(
                    {"Delete": {"Key": primary_key(pk, sk), "ConditionExpression": "attribute_exists(pk)"}},
                    {
                        "Update": {
                            "Key": primary_key(pk, "TENANT"),
                            "UpdateExpression": "SET market_count = market_count - :one",
                            "ConditionExpression": "attribute_exists(pk)",
                            "ExpressionAttributeValues": {":one": num_attr(1)},
                        }
                    },
                )
            )
            return True
        except _Cancelled as exc:
            if exc.failed(0):
                return False
            raise

    @_translated
    async def list_subscriptions(self, tenant_id: str) -> list[Subscription]:
        items = await self._run(self._subscription_items, f"TENANT#{tenant_id}")
        return sorted((subscription_from(item) for item in items), key=lambda s: s.book)

    async def subscribed_books(self, tenant_id: str) -> frozenset[BookKey]:
        return frozenset(s.book for s in await self.list_subscriptions(tenant_id))

    @_translated
    async def desired_books(self) -> dict[BookKey, BookWish]:
        items = await self._run(self._query_index, "SUBS")
        wishes = [(s.tenant_id, s.book, BookWish(s.replicas, s.depth)) for s in map(subscription_from, items)]
        tenants = await self.list_tenants()
        return desired_from(wishes, {t.id: t for t in tenants})

    @_translated
    async def book_subscriber_count(self, book: BookKey) -> int:
        items = await self._run(self._query_index, "SUBS", book_id(book) + SEPARATOR)
        return len(items)

    # -- ingest nodes -----------------------------------------------------------------------
    @_translated
    async def register_node(self, node: NodeInfo) -> None:
        item = {
            **primary_key(f"NODE#{node.id}", "NODE"),
            "gsi1pk": str_attr("NODES"),
            "gsi1sk": str_attr(node.id),
            "id": str_attr(node.id),
            "address": str_attr(node.address),
            "capacity": num_attr(node.capacity),
            "started_at": num_attr(node.started_at),
            "heartbeat_at": num_attr(node.heartbeat_at),
            "draining": bool_attr(node.draining),
            "load": num_attr(float(node.load)),
        }
        await self._run(self._client.put_item, TableName=self._table, Item=item)

    async def _update_node(self, node_id: str, fields: Item) -> bool:
        reply = await self._run(
            self._conditional,
            self._client.update_item,
            Key=primary_key(f"NODE#{node_id}", "NODE"),
            UpdateExpression="SET " + ", ".join(f"#{name} = :{name}" for name in fields),
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={f"#{name}": name for name in fields},
            ExpressionAttributeValues={f":{name}": value for name, value in fields.items()},
        )
        return reply is not None

    @_translated
    async def heartbeat_node(self, node_id: str, at: int, load: float) -> bool:
        return await self._update_node(node_id, {"heartbeat_at": num_attr(at), "load": num_attr(float(load))})

    @_translated
    async def set_draining(self, node_id: str, draining: bool) -> bool:
        return await self._update_node(node_id, {"draining": bool_attr(draining)})

    @_translated
    async def list_nodes(self) -> list[NodeInfo]:
        return [node_from(item) for item in await self._run(self._query_index, "NODES")]

    @_translated
    async def remove_node(self, node_id: str) -> None:
        await self._run(
            self._transact,
            {"Delete": {"Key": primary_key(f"NODE#{node_id}", "NODE")}},
            {"Delete": {"Key": primary_key(f"NODE#{node_id}", "ASSIGN")}},
        )

    # -- assignments ------------------------------------------------------------------------
    @_translated
    async def replace_assignments(self, node_id: str, replicas: Collection[ReplicaAssignment]) -> None:
        key = primary_key(f"NODE#{node_id}", "ASSIGN")
        if not replicas:
            await self._run(self._client.delete_item, TableName=self._table, Key=key)
            return
        item = {
            **key,
            "gsi1pk": str_attr("ASSIGNMENTS"),
            "gsi1sk": str_attr(node_id),
            "node_id": str_attr(node_id),
            "replicas": {"L": [str_attr(replica_id(r)) for r in sorted(replicas)]},
        }
        await self._run(self._client.put_item, TableName=self._table, Item=item)

    @staticmethod
    def _replicas(item: Item) -> list[ReplicaAssignment]:
        node_id = item["node_id"]["S"]
        return [parse_replica_id(value["S"], node_id) for value in item["replicas"]["L"]]

    @_translated
    async def get_assignments(self, node_id: str) -> list[ReplicaAssignment]:
        item = await self._run(self._get, f"NODE#{node_id}", "ASSIGN")
        return [] if item is None else sorted(self._replicas(item))

    @_translated
    async def list_assignments(self) -> list[ReplicaAssignment]:
        items = await self._run(self._query_index, "ASSIGNMENTS")
        return sorted(replica for item in items for replica in self._replicas(item))

    async def generations(self) -> Generations:
        """Unknown, always (see the module docstring): no round trip either."""
        return Generations(None, None)

    # -- audit ------------------------------------------------------------------------------
    @_translated
    async def append_audit(self, event: AuditEvent) -> None:
        item = {
            # Events of one millisecond keep their order by the wall clock's nanoseconds.
            **primary_key("AUDIT", f"{time_key(event.at)}#{time.time_ns():020d}#{secrets.token_hex(4)}"),
            "at": num_attr(event.at),
            "actor": str_attr(event.actor),
            "action": str_attr(event.action),
            "target": str_attr(event.target),
            "scope": str_attr(event.scope),
            "detail": str_attr(json.dumps(dict(event.detail), separators=(",", ":"))),
            "expires_at": num_attr(event.at // 1000 + AUDIT_RETENTION_S),
        }
        await self._run(self._client.put_item, TableName=self._table, Item=item)

    @_translated
    async def list_audit(
        self, limit: int, *, before: str | None = None, scope: str | None = None
    ) -> list[AuditEvent]:
        count = max(0, min(limit, AUDIT_LIMIT_MAX))
        if count == 0:
            return []
        if before is not None and not _AUDIT_SK.fullmatch(before):
            raise InvalidRequestError("before must be the id of an audit event")
        return await self._run(self._audit_page, count, before, scope)

    def _audit_page(self, count: int, before: str | None, scope: str | None) -> list[AuditEvent]:
        """Newest first, older than ``before``; a scope's events are filtered from the whole log
        page by page (events expire by age, AUDIT_RETENTION_S, so no scope can push another out)."""
        condition, values = "pk = :pk", {":pk": str_attr("AUDIT")}
        if before is not None:
            condition, values = condition + " AND sk < :before", {**values, ":before": str_attr(before)}
        query: dict[str, Any] = {"TableName": self._table, "KeyConditionExpression": condition,
                                 "ScanIndexForward": False, "ConsistentRead": True}  # fmt: skip
        if scope is not None:
            query["FilterExpression"] = "#scope = :scope"
            query["ExpressionAttributeNames"] = {"#scope": "scope"}
            values[":scope"] = str_attr(scope)
        events: list[AuditEvent] = []
        while len(events) < count:
            reply = self._client.query(**query, ExpressionAttributeValues=values, Limit=count - len(events))
            events += [audit_from(item) for item in reply.get("Items", [])]
            if "LastEvaluatedKey" not in reply:
                break
            query["ExclusiveStartKey"] = reply["LastEvaluatedKey"]
        return events

    # -- scheduler lease --------------------------------------------------------------------
    @_translated
    async def try_lease(self, name: str, owner: str, now_ms: int, ttl_ms: int) -> bool:
        until = now_ms + ttl_ms
        item = {
            **primary_key(f"LEASE#{name}", "LEASE"),
            "owner": str_attr(owner),
            "until": num_attr(until),
            "expires_at": num_attr(until // 1000 + 3600),
        }
        reply = await self._run(
            self._conditional,
            self._client.put_item,
            Item=item,
            ConditionExpression="attribute_not_exists(pk) OR #owner = :owner OR #until < :now",
            ExpressionAttributeNames={"#owner": "owner", "#until": "until"},
            ExpressionAttributeValues={":owner": str_attr(owner), ":now": num_attr(now_ms)},
        )
        return reply is not None

    @_translated
    async def release_lease(self, name: str, owner: str) -> None:
        await self._run(
            self._conditional,
            self._client.delete_item,
            Key=primary_key(f"LEASE#{name}", "LEASE"),
            ConditionExpression="#owner = :owner",
            ExpressionAttributeNames={"#owner": "owner"},
            ExpressionAttributeValues={":owner": str_attr(owner)},
        )

    @_translated
    async def lease_held(self, name: str, now_ms: int) -> bool:
        item = await self._run(self._get, f"LEASE#{name}", "LEASE")
        return item is not None and int(item["until"]["N"]) >= now_ms

    async def close(self) -> None:
        await self._run(self._client.close)


async def create_table(
    table_name: str, *, endpoint_url: str | None = None, region: str = "us-east-1"
) -> None:
    """Create the control table with exactly the schema terraform deploys (tests, local use)."""

    def create() -> None:
        client: Any = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name=region)
        try:
            client.create_table(
                TableName=table_name,
                AttributeDefinitions=[
                    {"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "gsi1pk", "gsi1sk")
                ],
                KeySchema=[
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"},
                ],
                GlobalSecondaryIndexes=[
                    {
                        "IndexName": "gsi1",
                        "KeySchema": [
                            {"AttributeName": "gsi1pk", "KeyType": "HASH"},
                            {"AttributeName": "gsi1sk", "KeyType": "RANGE"},
                        ],
                        "Projection": {"ProjectionType": "ALL"},
                    }
                ],
                BillingMode="PAY_PER_REQUEST",
            )
            client.get_waiter("table_exists").wait(TableName=table_name)
            client.update_time_to_live(
                TableName=table_name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"},
            )
        finally:
            client.close()

    await asyncio.to_thread(create)
