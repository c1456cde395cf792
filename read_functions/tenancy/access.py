"""Who is calling and what they may read, answered from memory on the read path.

Keys and tenants come from the control plane through refreshing caches that are
never more than ``max_age_s`` (1 s) old: a revoked key, a disabled tenant or a changed rate limit
reaches every worker within that time, whoever made the change, while a key in steady use never
waits for the store. The control service given here must not cache on its own
(``cache_ttl_ms=0``), or the two ages would add up.

Entitlements (the set of books a tenant subscribes to) are one entry per tenant, and a tenant may
subscribe to thousands of books, so reloading the set every second would cost more than serving
its reads. Subscriptions only change through this API, so the worker that changes one announces
it on the :data:`CHANGES` channel (see :func:`subscriptions_changed` and friends) and every worker
drops the affected entries at once; a worker whose change feed dropped (it may have missed an
announcement) drops them all. ``entitlements_max_age_s`` (60 s) bounds the age of a set anyway,
for a change made behind the API's back.

Only well-formed keys (prefix, length and checksum right: :func:`looks_like_key`) are looked up
and cached, so whatever else a caller sends costs no store call and no memory; it can only be
the admin key, which the control plane recognises from its hash. Failed authentications are
counted per source address (:mod:`read_functions.tenancy.auth_failures`): a source that keeps failing may
no longer have unknown keys looked up.
"""

from __future__ import annotations

from control_plane.accounts.api_keys import looks_like_key
from control_plane.errors import UnauthorizedError
from control_plane.models import Principal, Tenant
from control_plane.service import ControlService
from read_functions.tenancy.auth_failures import FailedAuthentications
from read_functions.tenancy.refreshing_cache import RefreshingCache

CHANGES = "ladder:read:changes"
"""The channel on which read workers announce changes of keys, tenants and subscriptions."""

_MISSING_KEY = "missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'"


class Access:
    """Principals, tenants and entitlements, each at most ``max_age_s`` old."""

    def __init__(
        self,
        control: ControlService,
        *,
        max_age_s: float = 1.0,
        entitlements_max_age_s: float = 60.0,
        failures: FailedAuthentications | None = None,
    ) -> None:
        self.control = control
        self.failures = failures or FailedAuthentications()
        self._principals: RefreshingCache[str, Principal] = RefreshingCache(
            control.auth.authenticate, max_age_s=max_age_s
        )
        self._tenants: RefreshingCache[str, Tenant] = RefreshingCache(
            control.tenants.get, max_age_s=max_age_s
        )
        # One entry per tenant (its whole set of books), not per (tenant, book): a tenant reading
        # 2000 books costs one refresh per period, not 2000.
        self._books: RefreshingCache[str, frozenset[tuple[str, str]]] = RefreshingCache(
            self._subscribed_books, max_age_s=entitlements_max_age_s
        )
        self._caches = (self._principals, self._tenants, self._books)

    @property
    def cached_keys(self) -> int:
        """Keys this worker holds an answer for (well-formed ones only)."""
        return len(self._principals)

    def start(self) -> None:
        for cache in self._caches:
            cache.start()

    async def close(self) -> None:
        for cache in self._caches:
            await cache.close()

    async def principal(self, key: str | None, *, source: str) -> Principal:
        """The caller behind ``key``, sent from address ``source``: UnauthorizedError /
        ForbiddenError as the control plane says, AuthenticationsLimitedError (429) while
        ``source`` is over its budget of failures and the key is not known here."""
        principals = self._principals
        if key and principals.holds(key):  # the hot path: a key in use, answered from memory
            return await principals.get(key)
        try:
            if not key:
                raise UnauthorizedError(_MISSING_KEY)
            if not looks_like_key(key):
                return await self.control.auth.authenticate(key)  # the admin key, or refused: no store
            if key not in principals:  # known within the last minute: not a guess
                self.failures.check(source)
            return await principals.get(key)
        except UnauthorizedError:
            self.failures.failed(source)
            raise

    async def tenant(self, tenant_id: str) -> Tenant:
        return await self._tenants.get(tenant_id)

    async def entitlements(self, tenant_id: str) -> frozenset[tuple[str, str]]:
        """The ``(exchange, market)`` books the tenant subscribes to.

        A set is replaced, never changed, when the tenant's subscriptions change or its age runs
        out: a caller may keep what it found in one while this returns that same object."""
        return await self._books.get(tenant_id)

    def apply(self, change: bytes) -> None:
        """Drop what an announced change (:func:`keys_changed` and friends) makes stale."""
        kind, _, tenant_id = change.decode(errors="replace").partition(":")
        if kind == "keys":
            self._principals.clear()
        elif kind == "tenant":
            self._tenants.forget(tenant_id)
            self._principals.clear()  # a disabled tenant's keys must stop working
        elif kind == "subscriptions":
            self._books.forget(tenant_id)
        elif kind == "all":
            for cache in self._caches:
                cache.clear()

    def missed_changes(self) -> None:
        """The change feed dropped: an announcement may be lost, so forget everything."""
        self.apply(b"all")

    async def _subscribed_books(self, tenant_id: str) -> frozenset[tuple[str, str]]:
        return await self.control.subscriptions.books_of(tenant_id)  # BookKeys: (exchange, market) tuples


def keys_changed() -> bytes:
    """A key was revoked (which one does not matter: principals are cheap to reload)."""
    return b"keys"


def tenant_changed(tenant_id: str) -> bytes:
    return f"tenant:{tenant_id}".encode()


def subscriptions_changed(tenant_id: str) -> bytes:
    return f"subscriptions:{tenant_id}".encode()
