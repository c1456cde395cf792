"""Creating, listing and revoking API keys (by the operator, or by a tenant for itself).

A key is generated here, returned once, and stored only as its peppered hash. Revocation takes a
grace period so that a tenant can rotate: create a new key, revoke the old one with
``grace_s``, switch clients over while both work. Revoking never extends a key's life: an earlier
revocation time always wins.

A tenant's key may mint keys for its tenant. A minted key records its parent and never outlives
it: the store bounds its expiry by the parent's and revokes it with the parent, so revoking a
leaked key also takes away every key minted with it. Rotation still works: the key that revokes
its parent (the successor, minted from it) is spared and detached, and only it, so a key an
attacker minted with the leaked one dies with it. The store counts usable keys in the same
step that adds one, so parallel requests cannot pass the limit together.
"""

from __future__ import annotations

from collections.abc import Callable

from control_plane.accounts.api_keys import display_parts, generate_key, hash_key
from control_plane.accounts.audit import AuditLog
from control_plane.errors import NotFoundError
from control_plane.ids import KEY_ID_PREFIX, TENANT_ID_PREFIX, new_id
from control_plane.models import ApiKey, Principal
from control_plane.stores.base import ControlStore
from control_plane.validation import require_id, require_int
from ladder_process.clock import Clock

MAX_USABLE_KEYS_PER_TENANT = 50
MAX_EXPIRES_IN_S = 10 * 365 * 24 * 3600
MAX_GRACE_S = 30 * 24 * 3600


class KeyAdmin:
    def __init__(
        self,
        store: ControlStore,
        pepper: bytes,
        audit: AuditLog,
        clock: Clock,
        on_revoke: Callable[[], None],
    ) -> None:
        self._store = store
        self._pepper = pepper
        self._audit = audit
        self._clock = clock
        self._on_revoke = on_revoke

    async def _require_tenant(self, tenant_id: object) -> str:
        checked = require_id("tenant", tenant_id, TENANT_ID_PREFIX)
        if await self._store.get_tenant(checked) is None:
            raise NotFoundError("no such tenant")
        return checked

    async def create(
        self, tenant_id: object, expires_in_s: object = None, *, actor: Principal
    ) -> tuple[ApiKey, str]:
        """A new key for the tenant: ``(record, key)``; the key is never retrievable again."""
        self._audit.admit(actor)
        owner = await self._require_tenant(tenant_id)
        lifetime = (
            None
            if expires_in_s is None
            else require_int("expires_in_s", expires_in_s, lo=1, hi=MAX_EXPIRES_IN_S)
        )
        now = self._clock()
        secret = generate_key()
        prefix, last4 = display_parts(secret)
        requested = ApiKey(
            id=new_id(KEY_ID_PREFIX),
            tenant_id=owner,
            prefix=prefix,
            last4=last4,
            key_hash=hash_key(secret, self._pepper),
            created_at=now,
            last_used_at=None,
            expires_at=None if lifetime is None else now + lifetime * 1000,
            revoked_at=None,
            parent_id=None if actor.is_admin else actor.key_id,
        )
        key = await self._store.create_key(requested, max_usable=MAX_USABLE_KEYS_PER_TENANT)
        await self._audit.record(
            actor, "key.create", key.id, tenant_id=owner, expires_at=key.expires_at, parent_id=key.parent_id
        )
        return key, secret

    async def list_for(self, tenant_id: object) -> list[ApiKey]:
        return await self._store.list_keys(await self._require_tenant(tenant_id))

    async def revoke(
        self, tenant_id: str | None, key_id: object, grace_s: object = None, *, actor: Principal
    ) -> ApiKey:
        """Revoke now, or after ``grace_s``. ``tenant_id`` None means the operator (any key);
        otherwise the key must be that tenant's, and another tenant's key is "not found"."""
        self._audit.admit(actor)
        checked = require_id("key", key_id, KEY_ID_PREFIX)
        grace = 0 if grace_s is None else require_int("grace_s", grace_s, lo=0, hi=MAX_GRACE_S)
        key = await self._store.get_key(checked)
        if key is None or (tenant_id is not None and key.tenant_id != tenant_id):
            raise NotFoundError("no such key")
        # A key minted from this one that revokes it is its successor (a rotation): it is spared.
        spare = None if actor.is_admin or actor.key_id == checked else actor.key_id
        revoked = await self._store.revoke_key(checked, self._clock() + grace * 1000, spare=spare)
        if revoked is None:
            raise NotFoundError("no such key")
        self._on_revoke()
        await self._audit.record(
            actor, "key.revoke", key.id, tenant_id=key.tenant_id, revoked_at=revoked.revoked_at
        )
        return revoked
