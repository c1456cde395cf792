"""Plain counters of an ingest node, kept where the work happens and read by whoever reports them.

Every runtime object owns one small mutable stats value and bumps it in place: a counter is an
attribute increment on the hot path, never a call. The node turns them into one JSON document
(``NodeStats.to_json``) for the store and the logs; telemetry can read the same attributes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass(slots=True)
class ReplicaStats:
    """What happened to one book replica since it started on this node."""

    events: int = 0
    """Diff events the venue delivered to the served book."""
    resyncs: Counter[str] = field(default_factory=Counter)
    """Times the book (or its sync progress) was thrown away, by reason: ``gap``, ``crossed``,
    ``disconnect``, ``buffer_overflow``, ``bad_level``, ``replica_mismatch``, ``handover``, ``stall``."""
    last_resync: tuple[str, int] | None = None
    """The last resync's reason and when it happened (ms), None before the first."""
    snapshots: int = 0
    """REST snapshots that synced the served book from scratch."""
    background_snapshots: int = 0
    """REST snapshots fetched in the background (refreshes and audits; the book kept serving)."""
    snapshot_failures: int = 0
    """REST snapshot requests that failed (refused, timed out, unreadable)."""
    handovers: int = 0
    """Connection changes (rollover, venue shutdown) that kept the book synced without a snapshot."""
    stale_episodes: int = 0
    """Times the published status turned ``stale`` (a stalled stream, or silence no check cleared)."""
    last_stale: tuple[str, int] | None = None
    """Why and when (ms) the status last turned ``stale``, None before the first time."""
    stall_checks: int = 0
    """Suspect silences checked against the venue's book id (see ``stall_checks``) ..."""
    quiet_checks: int = 0
    """... of which found the venue where the book was (a quiet market) ..."""
    stalls: int = 0
    """... and of which found events missing: the stream had stalled."""
    resnapshots: int = 0
    """Fresh snapshots (refreshes and audits) that replaced the served book."""
    refreshes: int = 0
    """Fresh snapshots started because the trusted window shrank towards the published depth ..."""
    refreshes_done: int = 0
    """... and of those, how many synced beside the served book and were compared with it."""
    audits: int = 0
    """Audits done: a fresh snapshot compared with the served book."""
    audit_mismatches: int = 0
    """Audits whose fresh snapshot disagreed with the served book at an equal update id."""
    last_audit_ms: int | None = None
    """When the last audit was done (None: never)."""
    mismatches: int = 0
    """Disagreements with another replica, or with a re-snapshot, at an equal update id."""
    checksum: int | None = None
    """The venue's checksum last verified against the book (Kraken; None: the venue sends none) ..."""
    checksum_matched: bool | None = None
    """... and whether the book gave it (a mismatch is a resync, reason ``checksum``). Taken from the
    served engine when the counters are reported."""
    lag_ms: int = 0
    """How long after the venue's time the newest event reached the node (clock offset included;
    ``ingest_nodes.core.lag``) ..."""
    max_lag_ms: int = 0
    """... and the most it ever was."""
    lagging_episodes: int = 0
    """Times the book turned lagging (published stale while its events ran behind)."""

    @property
    def restarts(self) -> int:
        return sum(self.resyncs.values())

    def add(self, other: ReplicaStats) -> None:
        """Add ``other``'s counts to these (node totals)."""
        self.events += other.events
        self.resyncs.update(other.resyncs)
        self.last_resync = _later(self.last_resync, other.last_resync)
        self.last_stale = _later(self.last_stale, other.last_stale)
        self.snapshots += other.snapshots
        self.background_snapshots += other.background_snapshots
        self.snapshot_failures += other.snapshot_failures
        self.handovers += other.handovers
        self.stale_episodes += other.stale_episodes
        self.stall_checks += other.stall_checks
        self.quiet_checks += other.quiet_checks
        self.stalls += other.stalls
        self.resnapshots += other.resnapshots
        self.refreshes += other.refreshes
        self.refreshes_done += other.refreshes_done
        self.audits += other.audits
        self.audit_mismatches += other.audit_mismatches
        if other.last_audit_ms is not None:
            self.last_audit_ms = max(self.last_audit_ms or 0, other.last_audit_ms)
        self.mismatches += other.mismatches
        self.lag_ms = max(self.lag_ms, other.lag_ms)
        self.max_lag_ms = max(self.max_lag_ms, other.max_lag_ms)
        self.lagging_episodes += other.lagging_episodes

    def to_json(self) -> dict[str, object]:
        return {
            "events": self.events,
            "resyncs": dict(self.resyncs),
            "restarts": self.restarts,
            "last_resync": _event(self.last_resync),
            "last_stale": _event(self.last_stale),
            "snapshots": self.snapshots,
            "background_snapshots": self.background_snapshots,
            "snapshot_failures": self.snapshot_failures,
            "handovers": self.handovers,
            "stale_episodes": self.stale_episodes,
            "stall_checks": self.stall_checks,
            "quiet_checks": self.quiet_checks,
            "stalls": self.stalls,
            "resnapshots": self.resnapshots,
            "refreshes": self.refreshes,
            "refreshes_done": self.refreshes_done,
            "audits": self.audits,
            "audit_mismatches": self.audit_mismatches,
            "last_audit_ms": self.last_audit_ms,
            "mismatches": self.mismatches,
            "checksum": None
            if self.checksum is None
            else {"venue": self.checksum, "matched": self.checksum_matched},
            "lag_ms": self.lag_ms,
            "max_lag_ms": self.max_lag_ms,
            "lagging_episodes": self.lagging_episodes,
        }


def _later(one: tuple[str, int] | None, other: tuple[str, int] | None) -> tuple[str, int] | None:
    """The later of two ``(reason, at_ms)`` events (either may be None)."""
    if one is None or (other is not None and other[1] > one[1]):
        return other
    return one


def _event(event: tuple[str, int] | None) -> dict[str, object] | None:
    return None if event is None else {"reason": event[0], "at_ms": event[1]}


@dataclass(slots=True)
class NodeTally:
    """A node's replica counters summed, and per exchange how many replicas it keeps and has synced."""

    totals: ReplicaStats = field(default_factory=ReplicaStats)
    kept: Counter[str] = field(default_factory=Counter)
    synced: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    """Replicas by the status they are published with (``synced``, ``resyncing``, ``stale``, ...)."""

    def count(self, exchange: str, stats: ReplicaStats, synced: bool, status: str) -> None:
        self.totals.add(stats)
        self.kept[exchange] += 1
        self.synced[exchange] += synced
        self.statuses[status] += 1


@dataclass(slots=True)
class ConnectionStats:
    """One venue connection, over every socket it opened."""

    connects: int = 0
    disconnects: int = 0
    """Sockets that ended, for any reason (each one restarts the sync of the books it carried)."""
    rollovers: int = 0
    """Times a successor connection took this one's books over (age limit or venue shutdown)."""
    shutdown_notices: int = 0
    frames: int = 0
    unreadable_frames: int = 0
    subscribe_errors: int = 0
    refusals: int = 0
    """Sessions the venue refused (bad credentials, connection limit)."""
    quota_waits: int = 0
    """Times a request waited for the venue's hourly request quota (OKX: 480 an hour a socket)."""
    sequence_breaks: int = 0
    """Times the venue's numbering of the connection's messages broke (Coinbase): each resynced
    every book of the connection."""

    def add(self, other: ConnectionStats) -> None:
        """Add ``other``'s counts to these (totals over connections)."""
        self.connects += other.connects
        self.disconnects += other.disconnects
        self.rollovers += other.rollovers
        self.shutdown_notices += other.shutdown_notices
        self.frames += other.frames
        self.unreadable_frames += other.unreadable_frames
        self.subscribe_errors += other.subscribe_errors
        self.refusals += other.refusals
        self.quota_waits += other.quota_waits
        self.sequence_breaks += other.sequence_breaks

    def to_json(self) -> dict[str, object]:
        return {
            "connects": self.connects,
            "disconnects": self.disconnects,
            "rollovers": self.rollovers,
            "shutdown_notices": self.shutdown_notices,
            "frames": self.frames,
            "unreadable_frames": self.unreadable_frames,
            "subscribe_errors": self.subscribe_errors,
            "refusals": self.refusals,
            "quota_waits": self.quota_waits,
            "sequence_breaks": self.sequence_breaks,
        }


@dataclass(slots=True)
class SnapshotStats:
    """One exchange's snapshot traffic from this node: weight, answers, refusals."""

    requested: int = 0
    fetched: int = 0
    failed: int = 0
    weight_spent: int = 0
    check_weight: int = 0
    """Of ``weight_spent``, what stall checks cost (see ``stall_checks``)."""
    waits: int = 0
    """Times the budget said "not now" (window used up, or closed by the venue)."""
    http_status: Counter[int] = field(default_factory=Counter)
    """Non-200 answers by status (429 and 418 must stay at zero)."""
    max_in_flight: int = 0
    fetch_seconds: float = 0.0
    """Time spent in snapshot requests, summed (divide by fetched + failed for the mean)."""

    def refused(self, status: int) -> None:
        """The venue answered ``status`` instead of 200."""
        self.http_status[status] += 1

    def to_json(self) -> dict[str, object]:
        return {
            "requested": self.requested,
            "fetched": self.fetched,
            "failed": self.failed,
            "weight_spent": self.weight_spent,
            "check_weight": self.check_weight,
            "waits": self.waits,
            "http_status": {str(k): v for k, v in self.http_status.items()},
            "max_in_flight": self.max_in_flight,
            "fetch_seconds": round(self.fetch_seconds, 3),
        }
