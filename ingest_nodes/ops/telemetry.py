"""The ingest node's traces and metrics: the hooks its runtime calls, and what they feed.

Theory of operation
-------------------
The node is handed one :class:`IngestTelemetry` (``python -m ingest_nodes`` builds it from the
``OTEL_*`` variables, see :mod:`ladder_process.telemetry`; anything else gets a disabled one) and
passes it to the runtime objects it builds. Nothing is counted twice: the runtime counts each fact
once in its plain stats (:mod:`ingest_nodes.ops.stats`), and the observable instruments read those
stats, and the node's replicas, when metrics are collected. The hooks below are for what only
telemetry keeps: spans and the publish-latency histograms. The publish histograms are
local too (:meth:`ladder_process.telemetry.Telemetry.histogram`): one bisection per published snapshot,
merged into the collected metrics.

Publish latency is measured from a frame's ``ingest_time`` (stamped on receipt, ms) to the end of
the store pipeline that wrote and published the snapshot carrying it. Each replica contributes
its oldest frame not yet published, once per pipeline; a snapshot handed to the writer while a
pipeline is in flight is counted with that pipeline, so under load a figure may read early by at
most one pipeline's duration. Republishes that carry no new frame (keepalives, status changes) are
not counted.

Metrics, as Prometheus names them:

=================================================  ==============================================
``ladder_ingest_events_total{exchange}``            diff events delivered to books
``ladder_ingest_publish_latency_seconds{exchange}`` frame received -> snapshot written and published
``ladder_ingest_publish_batches_total``             store pipelines written ...
``ladder_ingest_published_snapshots_total``         ... and the snapshots they carried
``ladder_ingest_publish_batch_seconds``             one pipeline's round trip
``ladder_ingest_resyncs_total{exchange,reason}``    resyncs by cause (``reason="crossed"``: crossed books)
``ladder_ingest_fresh_snapshots_total{...}``        background snapshots swapped in, by ``kind``
                                                    (``refresh``: the trusted window ran short;
                                                    ``audit``: the periodic comparison)
``ladder_ingest_audit_mismatches_total{exchange}``  audits that disagreed with the served book
``ladder_ingest_stall_checks_total{...}``           suspect silences checked, by ``verdict``
                                                    (``quiet``: confirmed; ``stalled``: made stale)
``ladder_ingest_snapshot_fetches_total{...}``       REST snapshots by ``outcome`` (ok, failed)
``ladder_ingest_weight_spent_total{exchange}``      venue request weight spent
``ladder_ingest_weight_used{exchange}``             weight the venue says this minute used (its
                                                    ``X-MBX-USED-WEIGHT-1M``, all nodes on one IP)
``ladder_ingest_weight_limit{exchange}``            the weight a minute this node's budget allows
``ladder_ingest_venue_refusals_total{...}``         REST answers other than 200, by ``status``
``ladder_ingest_books{exchange,status}``            replicas by published status (``stale`` included)
``ladder_book_age_seconds{exchange,market,replica}`` time since the book last heard from its venue
``ladder_book_update_id{exchange,market,replica}``  the venue update id the replica is at (synced ones)
``ladder_book_synced{exchange,market,replica}``     1 while the replica publishes ``synced``, else 0
=================================================  ==============================================

Spans: ``ladder.publish_batch`` (one per pipeline), ``ladder.resync`` (from the cause until the book
is synced again, or its replica stops; a replica's first sync is one too, with reason ``start``; it
ends with the ``ladder.update_id`` the book synced at, the venue status of its last snapshot and the
weight its snapshots cost) and ``ladder.snapshot_fetch``
(a child of the resync; current while the request runs, so the REST client and the snapshot
scheduler add ``http.response.status_code``, ``ladder.venue_used_weight`` and ``ladder.weight``).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Protocol

from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Span, StatusCode, set_span_in_context, use_span

from book_store.codec import BookStatus
from book_store.schema import BookKey, ReplicaId
from ingest_nodes.core.engine import BookEngine
from ingest_nodes.ops.stats import ReplicaStats, SnapshotStats
from ladder_process.clock import now_ms
from ladder_process.telemetry import HistogramSeries, Telemetry, bucket_quantile

LATENCY_BUCKETS_S = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
LATENCY_WINDOW_S = 60.0
"""The node's reported publish-latency percentiles cover about this much recent time."""
LATENCY_QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}


class PublishedFacts(Protocol):
    """A replica whose snapshot goes to the writer, as the latency histograms read it."""

    @property
    def book(self) -> BookKey: ...

    @property
    def replica(self) -> int: ...

    @property
    def last_publish_ms(self) -> int: ...

    @property
    def engine(self) -> BookEngine: ...


class ReplicaFacts(PublishedFacts, Protocol):
    """A replica, as spans and gauges read it."""

    @property
    def last_event_ms(self) -> int: ...

    @property
    def stats(self) -> ReplicaStats: ...

    @property
    def snapshot_limit(self) -> int: ...


class BudgetFacts(Protocol):
    """An exchange's weight budget, as the gauges read it."""

    @property
    def limit(self) -> int: ...

    def venue_used(self, now_s: float) -> int: ...


class ExchangeFacts(Protocol):
    """An exchange's runtime on the node, as telemetry reads it."""

    @property
    def stats(self) -> SnapshotStats: ...

    @property
    def budget(self) -> BudgetFacts: ...


class NodeFacts(Protocol):
    """The node, as the observable instruments read it."""

    @property
    def replicas(self) -> Mapping[ReplicaId, ReplicaFacts]: ...

    @property
    def retired(self) -> Mapping[str, ReplicaStats]:
        """Per exchange, the summed stats of the replicas that stopped on this node."""

    def statuses(self, now_ms: int) -> Iterable[tuple[ReplicaFacts, BookStatus]]:
        """Every replica with the status it is published with at ``now_ms``."""

    @property
    def exchanges(self) -> Mapping[str, ExchangeFacts]: ...


class IngestTelemetry:
    """Counts, latency and spans of one ingest process."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry
        self._tracer = telemetry.tracer
        self._enabled = telemetry.enabled
        self.batches = 0
        self.snapshots = 0
        self._pending: dict[ReplicaId, tuple[int, HistogramSeries]] = {}
        self._exchange_latency: dict[str, HistogramSeries] = {}
        self._latency_marks: dict[str, deque[tuple[float, list[int]]]] = {}
        self._resync_spans: dict[ReplicaId, Span] = {}
        self._resync_weight: dict[ReplicaId, int] = {}
        self._node: NodeFacts | None = None

        meter = telemetry.meter
        meter.create_observable_counter(
            "ladder_ingest_events",
            [self._observe_events],
            description="Diff events delivered to books.",
        )
        meter.create_observable_counter(
            "ladder_ingest_resyncs",
            [self._observe_resyncs],
            description="Book resyncs by cause; reason=crossed counts crossed books.",
        )
        meter.create_observable_counter(
            "ladder_ingest_fresh_snapshots",
            [self._observe_fresh_snapshots],
            description="Background snapshots that replaced a served book: refresh or audit.",
        )
        meter.create_observable_counter(
            "ladder_ingest_audit_mismatches",
            [self._observe_audit_mismatches],
            description="Audits whose fresh snapshot disagreed with the served book.",
        )
        meter.create_observable_counter(
            "ladder_ingest_stall_checks",
            [self._observe_stall_checks],
            description="Suspect silences checked against the venue, by verdict: quiet or stalled.",
        )
        meter.create_observable_counter(
            "ladder_ingest_snapshot_fetches",
            [self._observe_fetches],
            description="REST depth snapshots fetched, by outcome.",
        )
        meter.create_observable_counter(
            "ladder_ingest_weight_spent",
            [self._observe_weight],
            description="Venue request weight spent.",
        )
        meter.create_observable_counter(
            "ladder_ingest_publish_batches",
            [self._observe_batches],
            description="Store pipelines that wrote snapshots.",
        )
        meter.create_observable_counter(
            "ladder_ingest_published_snapshots",
            [self._observe_snapshots],
            description="Snapshots written and published.",
        )
        meter.create_observable_counter(
            "ladder_ingest_venue_refusals",
            [self._observe_refusals],
            description="Venue REST answers other than 200, by status (429 and 418 must stay at zero).",
        )
        meter.create_observable_gauge(
            "ladder_ingest_books",
            [self._observe_books],
            description="Book replicas kept, by published status.",
        )
        meter.create_observable_gauge(
            "ladder_ingest_weight_used",
            [self._observe_weight_used],
            description="Request weight the venue reports used in the current minute (X-MBX-USED-WEIGHT-1M).",
        )
        meter.create_observable_gauge(
            "ladder_ingest_weight_limit",
            [self._observe_weight_limit],
            description="Request weight a minute this node's budget allows.",
        )
        meter.create_observable_gauge(
            "ladder_book_update_id",
            [self._observe_update_ids],
            description="The venue update id each synced book replica is at.",
        )
        meter.create_observable_gauge(
            "ladder_book_synced",
            [self._observe_synced],
            description="1 while a book replica is published as synced, else 0.",
        )
        meter.create_observable_gauge(
            "ladder_book_age_seconds",
            [self._observe_age],
            unit="s",
            description="Time since each book replica last heard from its venue.",
        )
        self._latency = telemetry.histogram(
            "ladder_ingest_publish_latency_seconds",
            unit="s",
            description="Frame received -> the snapshot carrying it written and published.",
            bounds=LATENCY_BUCKETS_S,
        )
        self._batch_seconds = telemetry.histogram(
            "ladder_ingest_publish_batch_seconds",
            unit="s",
            description="Round trip of one store pipeline of snapshots.",
            bounds=LATENCY_BUCKETS_S,
        ).series({})

    # -- hooks ------------------------------------------------------------------------------------

    def watch(self, node: NodeFacts) -> None:
        """The node whose replicas the gauges report."""
        self._node = node

    def published(self, replica: PublishedFacts, ingest_time: int | None) -> None:
        """A snapshot of ``replica`` goes to the writer; called before ``last_publish_ms`` moves."""
        if self._resync_spans and replica.engine.synced:
            self._end_resync((replica.book, replica.replica), "synced", replica.engine.update_id)
        if not self._enabled or ingest_time is None or ingest_time < replica.last_publish_ms:
            return
        key = (replica.book, replica.replica)
        if key not in self._pending:
            self._pending[key] = (ingest_time, self._latency_of(replica.book.exchange))

    def flushed(self, count: int, seconds: float) -> None:
        """The writer's ``on_flush``: a pipeline of ``count`` snapshots took ``seconds``."""
        self.batches += 1
        self.snapshots += count
        if not self._enabled:
            return
        end_s = time.time()
        self._batch_seconds.record(seconds)
        pending, self._pending = self._pending, {}
        for ingest_ms, latency in pending.values():
            latency.record(max(0.0, end_s - ingest_ms / 1000))
        if self._tracer is not None:
            end_ns = int(end_s * 1e9)
            span = self._tracer.start_span(
                "ladder.publish_batch",
                start_time=end_ns - int(seconds * 1e9),
                attributes={"ladder.snapshots": count, "ladder.new_frames": len(pending)},
            )
            span.end(end_time=end_ns)

    def started(self, replica: ReplicaFacts) -> None:
        """A replica begins on this node: its first sync is traced as a resync with reason ``start``
        (and not counted as one)."""
        self._trace_resync(replica, "start")

    def resync(self, replica: ReplicaFacts, reason: str) -> None:
        """The replica's book was thrown away for ``reason`` (its stats count it)."""
        self._trace_resync(replica, reason)

    def _trace_resync(self, replica: ReplicaFacts, reason: str) -> None:
        if self._tracer is None:
            return
        key = (replica.book, replica.replica)
        span = self._resync_spans.get(key)
        if span is not None:
            span.add_event("ladder.resync_again", {"ladder.reason": reason})
            return
        self._resync_spans[key] = self._tracer.start_span(
            "ladder.resync",
            attributes={
                "ladder.exchange": replica.book.exchange,
                "ladder.market": replica.book.market,
                "ladder.replica": replica.replica,
                "ladder.reason": reason,
            },
        )

    @contextmanager
    def snapshot_fetch(self, replica: ReplicaFacts) -> Iterator[None]:
        """Around one REST snapshot request of ``replica``'s book (its stats count the outcome)."""
        exchange = replica.book.exchange
        span: Span | None = None
        parent: Span | None = None
        scope: AbstractContextManager[object] = nullcontext()
        if self._tracer is not None:
            parent = self._resync_spans.get((replica.book, replica.replica))
            span = self._tracer.start_span(
                "ladder.snapshot_fetch",
                context=None if parent is None else set_span_in_context(parent),
                attributes={
                    "ladder.exchange": exchange,
                    "ladder.market": replica.book.market,
                    "ladder.limit": replica.snapshot_limit,
                },
            )
            scope = use_span(span, record_exception=False, set_status_on_exception=False)
        try:
            with scope:
                yield
        except Exception as exc:
            if span is not None:
                span.record_exception(exc)
                span.set_status(StatusCode.ERROR, type(exc).__name__)
            raise
        finally:
            if span is not None:
                span.end()
                if parent is not None and isinstance(span, ReadableSpan):
                    self._fetched_in_resync((replica.book, replica.replica), parent, span)

    def stopped(self, replica: ReplicaFacts) -> None:
        """The replica stopped: close its open resync span."""
        if self._resync_spans:
            self._end_resync((replica.book, replica.replica), "stopped")

    def publish_latency(self, now_s: float) -> dict[str, dict[str, float | int | None]]:
        """Per exchange, frame received -> published over about the last minute, in ms:
        ``count`` and bucket-bound percentiles (what the node reports to the store each interval).

        Each call marks the histogram's counts; the window is the difference from the oldest mark
        at most :data:`LATENCY_WINDOW_S` old, so a node that got slow shows it within a minute.
        """
        summary: dict[str, dict[str, float | int | None]] = {}
        for exchange, series in self._exchange_latency.items():
            counts = list(series.bucket_counts)
            marks = self._latency_marks.get(exchange)
            if marks is None:
                marks = self._latency_marks[exchange] = deque([(now_s, [0] * len(counts))])
            marks.append((now_s, counts))
            while len(marks) > 2 and now_s - marks[1][0] >= LATENCY_WINDOW_S:
                marks.popleft()
            window = [now - then for now, then in zip(counts, marks[0][1], strict=True)]
            entry: dict[str, float | int | None] = {"count": sum(window)}
            for name, q in LATENCY_QUANTILES.items():
                bound = bucket_quantile(series.bounds, window, q)
                entry[name] = None if bound is None else round(bound * 1000, 3)
            summary[exchange] = entry
        return summary

    # -- internals --------------------------------------------------------------------------------

    def _latency_of(self, exchange: str) -> HistogramSeries:
        series = self._exchange_latency.get(exchange)
        if series is None:
            series = self._exchange_latency[exchange] = self._latency.series({"exchange": exchange})
        return series

    def _fetched_in_resync(self, key: ReplicaId, resync: Span, fetch: ReadableSpan) -> None:
        """The resync's span sums its snapshots' weight and keeps the venue's last status."""
        attributes = fetch.attributes or {}
        weight = attributes.get("ladder.weight")
        if isinstance(weight, int):
            self._resync_weight[key] = total = self._resync_weight.get(key, 0) + weight
            resync.set_attribute("ladder.weight", total)
        status = attributes.get("http.response.status_code")
        if isinstance(status, int):
            resync.set_attribute("ladder.venue_status", status)

    def _end_resync(self, key: ReplicaId, outcome: str, update_id: int | None = None) -> None:
        span = self._resync_spans.pop(key, None)
        self._resync_weight.pop(key, None)
        if span is not None:
            span.set_attribute("ladder.outcome", outcome)
            if update_id is not None:
                span.set_attribute("ladder.update_id", update_id)
            span.end()

    def _replica_totals(self) -> dict[str, ReplicaStats]:
        """Per exchange, the stats of every replica this node has kept: live ones and retired."""
        if self._node is None:
            return {}
        totals: dict[str, ReplicaStats] = {}
        for exchange, retired in list(self._node.retired.items()):
            totals.setdefault(exchange, ReplicaStats()).add(retired)
        for replica in list(self._node.replicas.values()):
            totals.setdefault(replica.book.exchange, ReplicaStats()).add(replica.stats)
        return totals

    def _observe_events(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(s.events, {"exchange": e}) for e, s in self._replica_totals().items() if s.events]

    def _observe_resyncs(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(count, {"exchange": exchange, "reason": reason})
            for exchange, stats in self._replica_totals().items()
            for reason, count in stats.resyncs.items()
        ]

    def _observe_fresh_snapshots(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(count, {"exchange": exchange, "kind": kind})
            for exchange, stats in self._replica_totals().items()
            for kind, count in (("refresh", stats.refreshes_done), ("audit", stats.audits))
            if count
        ]

    def _observe_audit_mismatches(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(s.audit_mismatches, {"exchange": e})
            for e, s in self._replica_totals().items()
            if s.audit_mismatches
        ]

    def _observe_stall_checks(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(count, {"exchange": exchange, "verdict": verdict})
            for exchange, stats in self._replica_totals().items()
            for verdict, count in (("quiet", stats.quiet_checks), ("stalled", stats.stalls))
            if count
        ]

    def _observe_fetches(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(count, {"exchange": exchange, "outcome": outcome})
            for exchange, stats in self._replica_totals().items()
            for outcome, count in (
                ("ok", stats.snapshots + stats.background_snapshots),
                ("failed", stats.snapshot_failures),
            )
            if count
        ]

    def _observe_weight(self, _options: CallbackOptions) -> Iterable[Observation]:
        if self._node is None:
            return []
        return [
            Observation(runtime.stats.weight_spent, {"exchange": exchange})
            for exchange, runtime in list(self._node.exchanges.items())
            if runtime.stats.weight_spent
        ]

    def _observe_batches(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(self.batches)]

    def _observe_snapshots(self, _options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(self.snapshots)]

    def _observe_refusals(self, _options: CallbackOptions) -> Iterable[Observation]:
        if self._node is None:
            return []
        return [
            Observation(count, {"exchange": exchange, "status": status})
            for exchange, runtime in list(self._node.exchanges.items())
            for status, count in list(runtime.stats.http_status.items())
        ]

    def _observe_books(self, _options: CallbackOptions) -> Iterable[Observation]:
        if self._node is None:
            return []
        counts: dict[tuple[str, str], int] = {}
        for replica, status in self._node.statuses(now_ms()):
            key = (replica.book.exchange, status.label)
            counts[key] = counts.get(key, 0) + 1
        return [Observation(n, {"exchange": e, "status": s}) for (e, s), n in counts.items()]

    def _observe_weight_used(self, _options: CallbackOptions) -> Iterable[Observation]:
        if self._node is None:
            return []
        now = time.time()
        return [
            Observation(runtime.budget.venue_used(now), {"exchange": exchange})
            for exchange, runtime in list(self._node.exchanges.items())
        ]

    def _observe_weight_limit(self, _options: CallbackOptions) -> Iterable[Observation]:
        if self._node is None:
            return []
        return [
            Observation(runtime.budget.limit, {"exchange": exchange})
            for exchange, runtime in list(self._node.exchanges.items())
        ]

    def _observe_update_ids(self, _options: CallbackOptions) -> Iterable[Observation]:
        if self._node is None:
            return []
        return [
            Observation(
                update_id, {"exchange": book.exchange, "market": book.market, "replica": replica.replica}
            )
            for replica in list(self._node.replicas.values())
            for book in (replica.book,)
            if (update_id := replica.engine.update_id) is not None
        ]

    def _observe_synced(self, _options: CallbackOptions) -> Iterable[Observation]:
        if self._node is None:
            return []
        return [
            Observation(
                int(status is BookStatus.SYNCED),
                {"exchange": book.exchange, "market": book.market, "replica": replica.replica},
            )
            for replica, status in self._node.statuses(now_ms())
            for book in (replica.book,)
        ]

    def _observe_age(self, _options: CallbackOptions) -> Iterable[Observation]:
        if self._node is None:
            return []
        now = now_ms()
        return [
            Observation(
                max(0, now - replica.last_event_ms) / 1000,
                {"exchange": book.exchange, "market": book.market, "replica": replica.replica},
            )
            for replica in list(self._node.replicas.values())
            for book in (replica.book,)
        ]
