"""The control plane's value types, and the JSON shape each one has in the HTTP API.

Every type is a frozen dataclass so that stores, the scheduler and caches can share instances
without copying. ``to_json`` returns exactly the fields docs/api.md documents; anything secret
(an API key's hash) is neither rendered nor part of ``repr``. Times are integer milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from book_store.schema import BookKey
from control_plane.depth import DEFAULT_DEPTH, DEFAULT_MAX_DEPTH

JsonScalar = str | int | float | bool | None

DEFAULT_MAX_STREAMS = 100
"""Open streams a tenant may hold at once, unless its operator sets ``max_streams`` (and every tenant
created before the limit existed)."""


@dataclass(frozen=True, slots=True)
class Tenant:
    """A customer: its limits and whether it may use the service at all."""

    id: str
    name: str
    max_markets: int
    max_replicas: int
    rate_limit_rps: float
    burst: int
    disabled: bool
    created_at: int
    max_depth: int = DEFAULT_MAX_DEPTH  # last, with a default: code written before it still builds
    max_streams: int = DEFAULT_MAX_STREAMS

    def to_json(self) -> dict[str, JsonScalar]:
        return {
            "id": self.id,
            "name": self.name,
            "max_markets": self.max_markets,
            "max_replicas": self.max_replicas,
            "max_depth": self.max_depth,
            "max_streams": self.max_streams,
            "rate_limit_rps": self.rate_limit_rps,
            "burst": self.burst,
            "disabled": self.disabled,
            "created_at": self.created_at,
        }


@dataclass(frozen=True, slots=True)
class ApiKey:
    """What the server keeps of an API key: never the key, only its peppered hash."""

    id: str
    tenant_id: str
    prefix: str
    last4: str
    key_hash: str = field(repr=False)
    created_at: int
    last_used_at: int | None
    expires_at: int | None
    revoked_at: int | None
    parent_id: str | None = None
    """The tenant key that minted this one (None when the operator did): this key never outlives it."""

    @property
    def usable_until(self) -> int | None:
        """When the key stops working (the earlier of expiry and revocation), or None for never."""
        ends = [t for t in (self.expires_at, self.revoked_at) if t is not None]
        return min(ends) if ends else None

    def usable_at(self, now_ms: int) -> bool:
        """True while the key is neither expired nor past its revocation time."""
        expired = self.expires_at is not None and self.expires_at <= now_ms
        revoked = self.revoked_at is not None and self.revoked_at <= now_ms
        return not (expired or revoked)

    def to_json(self) -> dict[str, JsonScalar]:
        return {
            "id": self.id,
            "prefix": self.prefix,
            "last4": self.last4,
            "created_at": self.created_at,
            "last_used_at": self.last_used_at,
            "expires_at": self.expires_at,
            "revoked_at": self.revoked_at,
            "parent_id": self.parent_id,
        }


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: a tenant's key, or the operator (admin key, no tenant)."""

    tenant_id: str | None
    key_id: str | None
    is_admin: bool

    @property
    def actor(self) -> str:
        """How the audit log names this caller (a keyless caller, e.g. a compat listener, by tenant)."""
        if self.is_admin:
            return "operator"
        return f"key:{self.key_id}" if self.key_id else f"tenant:{self.tenant_id}"

    def to_json(self) -> dict[str, JsonScalar]:
        return {"tenant_id": self.tenant_id, "key_id": self.key_id, "is_admin": self.is_admin}


OPERATOR = Principal(tenant_id=None, key_id=None, is_admin=True)


@dataclass(frozen=True, slots=True)
class Subscription:
    """A tenant's wish to read one book, kept alive with ``replicas`` copies ``depth`` levels deep."""

    tenant_id: str
    exchange: str
    market: str
    replicas: int
    created_at: int
    depth: int = DEFAULT_DEPTH  # last, with a default: code written before it still builds

    @property
    def book(self) -> BookKey:
        return BookKey(self.exchange, self.market)

    def to_json(self) -> dict[str, JsonScalar]:
        return {
            "exchange": self.exchange,
            "market": self.market,
            "replicas": self.replicas,
            "depth": self.depth,
            "created_at": self.created_at,
        }


class BookWish(NamedTuple):
    """What is wished of a book: this many replicas, each this deep (levels per side).

    One subscriber's wish, or (``ControlStore.desired_books``) the most of each over the book's
    enabled subscribers.
    """

    replicas: int
    depth: int


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """An ingest node as it registered and last reported.

    ``capacity`` is the most replicas the node will keep; ``load`` is the node's own measure of
    work (venue messages per second), used only to break ties between equally filled nodes.
    """

    id: str
    address: str
    capacity: int
    started_at: int
    heartbeat_at: int
    draining: bool
    load: float

    def to_json(self) -> dict[str, JsonScalar]:
        return {
            "id": self.id,
            "address": self.address,
            "capacity": self.capacity,
            "started_at": self.started_at,
            "heartbeat_at": self.heartbeat_at,
            "draining": self.draining,
            "load": self.load,
        }


@dataclass(frozen=True, slots=True, order=True)
class ReplicaAssignment:
    """Replica ``replica`` of one book, kept by node ``node_id`` ``depth`` levels deep.

    ``depth`` is last so that ordering stays by book, replica and node; a depth change keeps the
    replica (same node, same index): the node adjusts it in place.
    """

    exchange: str
    market: str
    replica: int
    node_id: str
    depth: int = DEFAULT_DEPTH

    @property
    def book(self) -> BookKey:
        return BookKey(self.exchange, self.market)

    def to_json(self) -> dict[str, JsonScalar]:
        return {
            "exchange": self.exchange,
            "market": self.market,
            "replica": self.replica,
            "node_id": self.node_id,
        }


OPERATOR_SCOPE = "operator"
"""The audit scope of the operator's own actions (a tenant's are in its id's)."""


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One operator or key action: who (``actor``) did what (``action``) to what (``target``).

    ``scope`` is whose log keeps it: the acting tenant's id, or ``"operator"``; each scope has a
    retention of its own, so no tenant's actions can push another's, or the operator's, out.
    ``id`` is where the store keeps it (set when read back; a page of events continues before the
    last one's)."""

    at: int
    actor: str
    action: str
    target: str
    detail: Mapping[str, JsonScalar] = field(default_factory=dict)
    scope: str = OPERATOR_SCOPE
    id: str | None = None

    def to_json(self) -> dict[str, JsonScalar | dict[str, JsonScalar]]:
        return {
            "id": self.id,
            "at": self.at,
            "actor": self.actor,
            "scope": self.scope,
            "action": self.action,
            "target": self.target,
            "detail": dict(self.detail),
        }
