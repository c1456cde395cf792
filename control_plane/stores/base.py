"""The control store contract: only the operations the control plane performs.

Two implementations pass one contract test suite: Redis/Valkey (the default, one process to
ElastiCache) and DynamoDB (the serverless deployment). Whatever must not race is one atomic
operation of the store itself, never a read-then-write in Python:

- ``put_subscription(s)`` checks the tenant's ``max_markets`` in the same step that adds markets;
- ``create_tenant`` / ``update_tenant`` claim the tenant's name in the same step;
- ``replace_assignments`` swaps a node's whole replica set at once;
- ``create_key`` counts the tenant's usable keys against the limit, and bounds a minted key by
  its parent's life, in the same step that adds it;
- ``revoke_key`` only ever moves a revocation time earlier, for the key and every key minted from
  it (and from those); ``touch_keys`` only later;
- ``try_lease`` gives the scheduler lease to one control process at a time;
- every write that changes what ``desired_books`` or ``list_assignments`` returns gives that read
  a new *generation* in the same step, so ``generations`` can tell the control loop, in one cheap
  read, whether what it read last round is still what the store holds (a settled fleet then costs
  the loop neither the two big reads nor a plan). A store that cannot vouch for its reads that way
  answers None (unknown) and the loop reads everything, every round.

Stores raise ``control_plane.errors`` for the caller's mistakes they detect atomically
(``ConflictError``, ``LimitExceededError``, ``NotFoundError``) and ``ladder_process.errors.StoreError``
(or ``StoreUnavailableError``) when the backend fails; no backend exception escapes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from book_store.schema import BookKey
from control_plane.models import (
    ApiKey,
    AuditEvent,
    BookWish,
    NodeInfo,
    ReplicaAssignment,
    Subscription,
    Tenant,
)

AUDIT_LIMIT_MAX = 1000
LEGACY_SCOPE = "legacy"
"""The audit scope of events recorded before events had scopes."""


@dataclass(frozen=True, slots=True)
class Generations:
    """Names of the store's current state of two reads, compared only for equality.

    ``desired``: of ``desired_books`` (subscriptions and the tenant fields that cap them);
    ``assignments``: of ``list_assignments``. Equal names mean the read would return what it
    returned when the name was read just before it; None means the store cannot tell.
    """

    desired: str | None
    assignments: str | None


class ControlStore(Protocol):
    # -- tenants ---------------------------------------------------------------------------
    async def create_tenant(self, tenant: Tenant) -> None:
        """Add a tenant; ConflictError if another tenant has the same name (case-insensitive)."""

    async def get_tenant(self, tenant_id: str) -> Tenant | None: ...

    async def list_tenants(self) -> list[Tenant]:
        """Every tenant, oldest first."""

    async def update_tenant(self, tenant: Tenant) -> bool:
        """Overwrite a tenant's fields; False if it does not exist; ConflictError on a taken name."""

    # -- API keys ---------------------------------------------------------------------------
    async def create_key(self, key: ApiKey, *, max_usable: int) -> ApiKey:
        """Add a key; the stored record, returned, ends no later than its parent (``parent_id``).

        LimitExceededError when the tenant already holds ``max_usable`` keys usable at
        ``key.created_at``; UnauthorizedError when the parent is not usable then (or unknown).
        """

    async def get_key(self, key_id: str) -> ApiKey | None: ...

    async def get_key_by_hash(self, key_hash: str) -> ApiKey | None: ...

    async def list_keys(self, tenant_id: str) -> list[ApiKey]:
        """The tenant's keys, revoked and expired ones included, oldest first."""

    async def revoke_key(self, key_id: str, at: int, *, spare: str | None = None) -> ApiKey | None:
        """Set ``revoked_at`` to ``at`` unless it is already earlier, and the same for every key
        minted from it, transitively; the key after, or None.

        ``spare`` (a key minted from it that revokes it: a rotation) is detached from its parent
        instead, with the keys minted from it, and no longer follows the parent's revocation."""

    async def touch_keys(self, last_used: Mapping[str, int]) -> None:
        """Raise each key's ``last_used_at`` to the given time (batched; unknown ids ignored)."""

    # -- subscriptions ----------------------------------------------------------------------
    async def put_subscription(self, subscription: Subscription) -> tuple[Subscription, bool]:
        """Create or update (``replicas``, ``depth``) a subscription: ``(stored, created)``.

        Creating counts against the tenant's ``max_markets`` atomically: LimitExceededError when
        the tenant already has that many markets, NotFoundError when the tenant does not exist.
        An update keeps ``created_at``.
        """

    async def put_subscriptions(
        self, subscriptions: Sequence[Subscription]
    ) -> list[tuple[Subscription, bool]]:
        """``put_subscription`` for many books of one tenant (distinct books), in order.

        The markets it would create are checked against ``max_markets`` together, in one atomic
        step: all of them fit, or LimitExceededError and nothing is created or updated.
        """

    async def delete_subscription(self, tenant_id: str, book: BookKey) -> bool:
        """Remove a subscription; False if there was none."""

    async def delete_subscriptions(self, tenant_id: str, books: Sequence[BookKey]) -> list[bool]:
        """``delete_subscription`` for many books of one tenant, in order."""

    async def list_subscriptions(self, tenant_id: str) -> list[Subscription]:
        """The tenant's subscriptions, ordered by book."""

    async def subscribed_books(self, tenant_id: str) -> frozenset[BookKey]:
        """The books the tenant subscribes to, without the details: what read workers check
        entitlements against. A tenant may hold thousands, so a store that can reads them in
        pages, giving the caller's event loop a turn between pages."""

    async def desired_books(self) -> dict[BookKey, BookWish]:
        """Per subscribed book, the most replicas and the deepest depth any enabled subscriber asked for.

        Each subscriber's wish is capped by its tenant's current ``max_replicas`` and
        ``max_depth``; disabled tenants' subscriptions keep no book alive (nor deep).
        """

    async def book_subscriber_count(self, book: BookKey) -> int:
        """How many tenants subscribe to ``book`` (a book lives while this is not zero)."""

    # -- ingest nodes -----------------------------------------------------------------------
    async def register_node(self, node: NodeInfo) -> None:
        """Add or replace a node's record (a restarted node registers again)."""

    async def heartbeat_node(self, node_id: str, at: int, load: float) -> bool:
        """Record that the node is alive; False if it is not registered (it should register)."""

    async def set_draining(self, node_id: str, draining: bool) -> bool: ...

    async def list_nodes(self) -> list[NodeInfo]:
        """Every registered node, live or not, ordered by id."""

    async def remove_node(self, node_id: str) -> None:
        """Forget a node and its assignment set."""

    # -- assignments ------------------------------------------------------------------------
    async def replace_assignments(self, node_id: str, replicas: Collection[ReplicaAssignment]) -> None:
        """Make ``replicas`` the node's whole assignment set, atomically, and notify the node."""

    async def get_assignments(self, node_id: str) -> list[ReplicaAssignment]:
        """The node's assignment set, sorted."""

    async def list_assignments(self) -> list[ReplicaAssignment]:
        """Every node's assignments, sorted."""

    async def generations(self) -> Generations:
        """The current generations of ``desired_books`` and ``list_assignments``, in one round trip.

        A reader that reads the generations *before* the data may keep the data for as long as
        the generations stay the same: a write between the two reads only makes the next
        generation differ, never a stale read look current.
        """

    # -- audit ------------------------------------------------------------------------------
    async def append_audit(self, event: AuditEvent) -> None:
        """Record an event in its scope's log; each scope is bounded on its own (its oldest events
        are dropped, or expire), so no scope's events push another's out."""

    async def list_audit(
        self, limit: int, *, before: str | None = None, scope: str | None = None
    ) -> list[AuditEvent]:
        """Up to ``limit`` (at most AUDIT_LIMIT_MAX) events, newest first, each with its ``id``:
        of every scope, or of ``scope`` only; only those older than the event ``before`` names (a
        page continues from the last one's id; InvalidRequestError for an id this store never gave)."""

    # -- scheduler lease --------------------------------------------------------------------
    async def try_lease(self, name: str, owner: str, now_ms: int, ttl_ms: int) -> bool:
        """Take or extend the lease ``name`` for ``owner``; False while someone else holds it."""

    async def release_lease(self, name: str, owner: str) -> None:
        """Give the lease up if ``owner`` holds it, so another process need not wait for expiry."""

    async def lease_held(self, name: str, now_ms: int) -> bool:
        """Whether anyone holds the lease ``name`` at ``now_ms`` (a draining node asks whether a
        control process runs to move its replicas)."""

    async def close(self) -> None:
        """Release what the store opened itself (a client passed in is left to its owner)."""
