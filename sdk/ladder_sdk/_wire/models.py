"""The typed answers of the account, key and operator endpoints (the book lives in `_wire.book`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Market:
    """A market that can be subscribed, as the venue lists it; `kind` is what it trades (`spot`,
    `perpetual`, `future`, `option`; `unknown`, or None from a server that does not say)."""

    exchange: str
    market: str
    status: str
    base: str
    quote: str
    kind: str | None = None


@dataclass(frozen=True)
class Subscription:
    """A tenant's subscription to one book: `replicas` copies kept `depth` levels per side.

    `status` is the book's best replica status when listed. `changed` is what a subscribe call
    changed of a subscription held, `{"depth": (500, 100)}` as (from, to); empty otherwise.
    """

    exchange: str
    market: str
    replicas: int
    depth: int
    created_at: datetime
    status: str | None = None
    changed: Mapping[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class MarketResult:
    """What a bulk call did to one market: `result` is `created`, `updated`, `deleted`, `skipped`
    or `failed`.

    A failed market carries the server's error `code` (e.g. `unknown_market`) and message; a
    subscribed one carries its `subscription`. A pair's subscription (`subscribe_pair`) names
    each result's `exchange`; a venue that lists no market of the pair fails with `market` "".
    It subscribes one name of a venue book: each other name it lists (Coinbase's BTC-USDC beside
    BTC-USD) is `skipped`, costs no market, and carries code `alias` and `alias_of`, the market
    subscribed in its place.
    """

    market: str
    result: str
    subscription: Subscription | None = None
    error_code: str | None = None
    error_message: str | None = None
    exchange: str | None = None
    alias_of: str | None = None

    @property
    def ok(self) -> bool:
        """True unless the market failed (a skipped alias is not a failure)."""
        return self.result != "failed"


class _Results:
    """What every answer of per-market results can say of them."""

    results: tuple[MarketResult, ...]

    @property
    def failed(self) -> tuple[MarketResult, ...]:
        """The markets that did not go through (the others did)."""
        return tuple(r for r in self.results if not r.ok)

    def count(self, result: str) -> int:
        """How many markets ended as `result` (`created`, `updated`, `deleted`, `skipped`, `failed`)."""
        return sum(1 for r in self.results if r.result == result)


@dataclass(frozen=True)
class BulkResult(_Results):
    """The answer of a bulk subscribe or unsubscribe: one `MarketResult` per market, in order."""

    exchange: str
    results: tuple[MarketResult, ...]


@dataclass(frozen=True)
class PairResult(_Results):
    """The answer of `subscribe_pair`: one `MarketResult` per book (and per venue that lists none)."""

    pair: str
    results: tuple[MarketResult, ...]


@dataclass(frozen=True)
class UsageMinute:
    """Requests counted in the minute that starts at `minute`, and of them (with requests refused by
    the rate limit) how many were answered with an error."""

    minute: datetime
    requests: int
    errors: int = 0


@dataclass(frozen=True)
class UsageLimits:
    """The limits an operator set for a tenant (what `Usage` is measured against)."""

    max_markets: int
    max_replicas: int
    max_depth: int
    rate_limit_rps: float
    burst: int
    max_streams: int | None = None
    """Open streams it may hold at once (None from a server that predates the limit)."""


@dataclass(frozen=True)
class Usage:
    """A tenant's request counts (the total and the last 60 minutes) and its use of its limits.

    `markets` is its subscriptions against `limits.max_markets`; `most_replicas` and `deepest`
    are the largest wishes among them; `streams` its open streams against `limits.max_streams`.
    The last five are None from a server that predates them.
    """

    tenant_id: str
    requests_total: int
    minutes: tuple[UsageMinute, ...]
    limits: UsageLimits | None = None
    markets: int | None = None
    most_replicas: int | None = None
    deepest: int | None = None
    streams: int | None = None


@dataclass(frozen=True)
class Account:
    """Whose key this is: `role` "operator" (no tenant) or "tenant" (with its id and name)."""

    role: str
    tenant_id: str | None
    tenant_name: str | None


@dataclass(frozen=True)
class ApiKey:
    """What can be known about a key after it was created: never the secret, only its shape."""

    id: str
    prefix: str
    last4: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True)
class CreatedKey:
    """A key just created: `key` is the secret, shown this once; store it now. repr() hides it."""

    id: str
    key: str = field(repr=False)
    prefix: str | None = None
    last4: str | None = None
    created_at: datetime | None = None
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Tenant:
    """A customer account and its limits."""

    id: str
    name: str
    max_markets: int
    max_replicas: int
    max_depth: int
    rate_limit_rps: float
    burst: int
    disabled: bool
    created_at: datetime
    max_streams: int | None = None
    """Open streams it may hold at once (None from a server that predates the limit)."""


@dataclass(frozen=True)
class NodeAssignment:
    """One replica of one book that a node keeps."""

    exchange: str
    market: str
    replica: int


@dataclass(frozen=True)
class Node:
    """An ingest node as the operator sees it: its last heartbeat and the replicas it keeps.

    `live` says whether the heartbeat is recent enough for the scheduler; `raw` keeps every
    field the server sent, including ones this SDK version does not model.
    """

    id: str
    address: str | None
    heartbeat_at: datetime | None
    live: bool | None
    draining: bool | None
    assignments: tuple[NodeAssignment, ...]
    raw: Mapping[str, object] = field(repr=False)
    stats: Mapping[str, object] | None = field(default=None, repr=False)
    """The node's last counters document (replicas, process CPU and memory, publish latency)."""


@dataclass(frozen=True)
class ReplicaState:
    """One replica of a book as an operator sees it: where it runs, its status and counters.

    Counters are None until the replica's node has reported them.
    """

    replica: int
    node_id: str | None
    status: str
    update_id: int | None
    age_ms: int | None
    resyncs: Mapping[str, int]
    restarts: int | None
    stale_episodes: int | None
    mismatches: int | None
    audit_mismatches: int | None


@dataclass(frozen=True)
class ClusterBook:
    """A book the cluster keeps, and each of its replicas."""

    exchange: str
    market: str
    status: str
    replicas: tuple[ReplicaState, ...]


@dataclass(frozen=True)
class EgressBudget:
    """One venue weight pool behind one egress IP: weight used this minute against the limit."""

    egress_id: str
    pool: str
    used: int
    limit: int
    window_ends_in_ms: int
    closed_for_ms: int
    refusals: Mapping[str, int]
    exchanges: tuple[str, ...]
    nodes: tuple[str, ...]
    weight_spent: int


@dataclass(frozen=True)
class AuditEntry:
    """One operator or key action: who (`actor`) did what (`action`) to what (`target`), and when."""

    at: datetime
    actor: str
    action: str
    target: str
    detail: Mapping[str, object] = field(repr=False)
