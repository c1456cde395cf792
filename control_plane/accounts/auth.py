"""Turning a presented API key into a Principal, fast enough for the read path.

Theory of operation: the presented key is hashed with the pepper once. The admin key is held
only as its hash too, so comparing against it is a constant-time comparison of two equal-length
digests. Anything that is not the admin key must pass the offline format/checksum test before
the store is asked about it.

A successful look-up (key record + tenant record) is cached for ``cache_ttl_ms`` (1 s by
default): a revocation, expiry change or tenant change made by another process takes effect
within that time, and one made through this process at once (``forget``). Expiry and revocation
times are checked against the clock on every call, cached or not, so a grace period ends on time.

``last_used_at`` is not written per request: uses are collected and written in one batch by
``flush_last_used`` (call it every second or so).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from control_plane.accounts.api_keys import MAX_PRESENTED_LENGTH, hash_key, looks_like_key, same_hash
from control_plane.errors import ForbiddenError, UnauthorizedError
from control_plane.models import OPERATOR, ApiKey, Principal, Tenant
from control_plane.stores.base import ControlStore
from ladder_process.clock import Clock


@dataclass(frozen=True, slots=True)
class _Entry:
    key: ApiKey
    tenant: Tenant
    fetched_at: int


class Authenticator:
    def __init__(
        self,
        store: ControlStore,
        pepper: bytes,
        admin_key: str | None,
        *,
        clock: Clock,
        cache_ttl_ms: int = 1000,
        cache_size: int = 100_000,
    ) -> None:
        self._store = store
        self._pepper = pepper
        self._admin_hash = hash_key(admin_key, pepper) if admin_key else None
        self._clock = clock
        self._ttl_ms = cache_ttl_ms
        self._size = cache_size
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._last_used: dict[str, int] = {}

    async def authenticate(self, presented: str | None) -> Principal:
        """The caller behind ``presented``; UnauthorizedError or ForbiddenError otherwise."""
        if not presented:
            raise UnauthorizedError(
                "missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'"
            )
        if len(presented) > MAX_PRESENTED_LENGTH:
            raise UnauthorizedError("invalid API key")
        presented_hash = hash_key(presented, self._pepper)
        if self._admin_hash is not None and same_hash(presented_hash, self._admin_hash):
            return OPERATOR
        if not looks_like_key(presented):
            raise UnauthorizedError("invalid API key")

        now = self._clock()
        entry = await self._lookup(presented_hash, now)
        if not entry.key.usable_at(now):
            raise UnauthorizedError("API key revoked or expired")
        if entry.tenant.disabled:
            raise ForbiddenError("the tenant is disabled")
        self._last_used[entry.key.id] = now
        return Principal(tenant_id=entry.tenant.id, key_id=entry.key.id, is_admin=False)

    async def _lookup(self, presented_hash: str, now: int) -> _Entry:
        entry = self._cache.get(presented_hash)
        if entry is not None and now - entry.fetched_at < self._ttl_ms:
            return entry
        key = await self._store.get_key_by_hash(presented_hash)
        if key is None or not same_hash(key.key_hash, presented_hash):
            self._cache.pop(presented_hash, None)
            raise UnauthorizedError("invalid API key")
        tenant = await self._store.get_tenant(key.tenant_id)
        if tenant is None:
            raise UnauthorizedError("invalid API key")
        entry = _Entry(key, tenant, now)
        if self._ttl_ms > 0:
            self._cache[presented_hash] = entry
            self._cache.move_to_end(presented_hash)
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return entry

    def forget(self) -> None:
        """Drop every cached look-up (after this process revoked a key or changed a tenant)."""
        self._cache.clear()

    async def flush_last_used(self) -> None:
        """Write the collected ``last_used_at`` times in one batch."""
        if self._last_used:
            batch, self._last_used = self._last_used, {}
            await self._store.touch_keys(batch)


def require_admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise ForbiddenError("this route needs the admin key")


def require_tenant(principal: Principal) -> str:
    """The caller's tenant id; the admin key has none, so tenant routes refuse it."""
    if principal.tenant_id is None:
        raise ForbiddenError("this route needs a tenant's API key, not the admin key")
    return principal.tenant_id
