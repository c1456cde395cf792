"""The ingest node's traces and metrics: the hooks its runtime calls, and what they feed.

Theory of operation
-------------------
The node is handed one :class:`IngestTelemetry` (``python -m ingest_nodes`` builds it from the
``OTEL_*`` variables, see :mod:`ladder_process.telemetry`; anything else gets a disabled one) and
passes it to the runtime objects it builds. Nothing is counted twice: the runtime counts each fact
once in its plain stats (:mod:`ingest_nodes.ops.stats`), and the observable instruments read those
stats, and the node's replicas, when metrics are collected (a table of rows,
:mod:`ladder_process.telemetry.metrics`). The hooks below are for what only telemetry keeps: spans
and the publish-latency histograms. The publish histograms are local too
(:meth:`ladder_process.telemetry.setup.Telemetry.histogram`): one bisection per published
snapshot, merged into the collected metrics.

Publish latency is measured from a frame's ``ingest_time`` (stamped on receipt, ms) to the end of
the store pipeline that wrote and published the snapshot carrying it. Each replica contributes
its oldest frame not yet published, once per pipeline; a snapshot handed to the writer while a
pipeline is in flight is counted with that pipeline, so under load a figure may read early by at
most one pipeline's duration. Republishes that carry no new frame (keepalives, status changes) are
not counted.

The metrics are the rows of :data:`INGEST_METRICS` (counters and gauges, each with the reader of
the stats it reports) and the two publish histograms; docs/observability.md lists them all.

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
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Protocol

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Span, StatusCode, set_span_in_context, use_span

from book_store.codec import BookStatus
from book_store.schema import BookKey, ReplicaId
from ingest_nodes.core.engine import BookEngine
from ingest_nodes.ops.stats import ReplicaStats, SnapshotStats
from ladder_process.clock import now_ms
from ladder_process.telemetry.histograms import HistogramSeries, bucket_quantile
from ladder_process.telemetry.metrics import Kind, LabelValues, Metric, Reading, value
from ladder_process.telemetry.sampling import DURATION_MS
from ladder_process.telemetry.setup import Telemetry

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
        self.node: NodeFacts | None = None

        telemetry.observe(INGEST_METRICS, self)
        self._latency = PUBLISH_LATENCY.histogram(telemetry)
        self._batch_seconds = PUBLISH_BATCH_SECONDS.histogram(telemetry).series({})

    # -- hooks ------------------------------------------------------------------------------------

    def watch(self, node: NodeFacts) -> None:
        """The node whose replicas the gauges report."""
        self.node = node

    def published(self, replica: PublishedFacts, ingest_time: int | None, last_publish_ms: int) -> None:
        """A snapshot of ``replica`` goes to the writer (the one before it went at ``last_publish_ms``)."""
        if self._resync_spans and replica.engine.synced:
            self._end_resync((replica.book, replica.replica), "synced", replica.engine.update_id)
        if not self._enabled or ingest_time is None or ingest_time < last_publish_ms:
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
                # its duration as an attribute too: the default sampler keeps slow batches by it
                attributes={
                    "ladder.snapshots": count,
                    "ladder.new_frames": len(pending),
                    DURATION_MS: round(seconds * 1000, 3),
                },
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

    def kept_stats(self) -> list[tuple[str, ReplicaStats]]:
        """The stats of every replica this node has kept, with its exchange: the retired ones (summed
        per exchange), then each live one."""
        if self.node is None:
            return []
        live = [(replica.book.exchange, replica.stats) for replica in list(self.node.replicas.values())]
        return [*list(self.node.retired.items()), *live]


# -- the metrics: one row each ----------------------------------------------------------------------


def _per_exchange(
    t: IngestTelemetry, count: Callable[[ReplicaStats], Iterable[tuple[int, tuple[str, ...]]]]
) -> Reading:
    """Replica counts summed per exchange (live replicas and retired ones) and the further labels
    ``count`` gives each. A row sums only its own counts: a node keeps thousands of replicas."""
    totals: dict[LabelValues, int] = {}
    for exchange, stats in t.kept_stats():
        for n, labels in count(stats):
            if n:
                key = (exchange, *labels)
                totals[key] = totals.get(key, 0) + n
    return [(n, key) for key, n in totals.items()]


def _exchanges(t: IngestTelemetry) -> list[tuple[str, ExchangeFacts]]:
    return [] if t.node is None else list(t.node.exchanges.items())


def _replicas(t: IngestTelemetry) -> list[ReplicaFacts]:
    return [] if t.node is None else list(t.node.replicas.values())


def _statuses(t: IngestTelemetry) -> Iterable[tuple[ReplicaFacts, BookStatus]]:
    return [] if t.node is None else t.node.statuses(now_ms())


def _refusals(t: IngestTelemetry) -> Reading:
    return [(n, (e, status)) for e, r in _exchanges(t) for status, n in list(r.stats.http_status.items())]


def _books(t: IngestTelemetry) -> Reading:
    counts: dict[tuple[str, str], int] = {}
    for replica, status in _statuses(t):
        key = (replica.book.exchange, status.label)
        counts[key] = counts.get(key, 0) + 1
    return [(n, key) for key, n in counts.items()]


def _book_labels(replica: ReplicaFacts) -> LabelValues:
    return replica.book.exchange, replica.book.market, replica.replica


def _update_ids(t: IngestTelemetry) -> Reading:
    return [
        (update_id, _book_labels(replica))
        for replica in _replicas(t)
        if (update_id := replica.engine.update_id) is not None
    ]


def _checksums(t: IngestTelemetry) -> Reading:
    return [
        (checksum, _book_labels(replica))
        for replica in _replicas(t)
        if (checksum := replica.engine.checksum) is not None
    ]


def _checksums_matched(t: IngestTelemetry) -> Reading:
    return [
        (int(matched), _book_labels(replica))
        for replica in _replicas(t)
        if (matched := replica.engine.checksum_matched) is not None
    ]


def _ages(t: IngestTelemetry) -> Reading:
    now = now_ms()
    return [(max(0, now - replica.last_event_ms) / 1000, _book_labels(replica)) for replica in _replicas(t)]


def _weight_used(t: IngestTelemetry) -> Reading:
    now = time.time()
    return [(runtime.budget.venue_used(now), (exchange,)) for exchange, runtime in _exchanges(t)]


EXCHANGE = ("exchange",)
BOOK = ("exchange", "market", "replica")

INGEST_METRICS: tuple[Metric[IngestTelemetry], ...] = (
    Metric(
        "ladder_ingest_events",
        Kind.COUNTER,
        "Diff events delivered to books.",
        EXCHANGE,
        lambda t: _per_exchange(t, lambda s: [(s.events, ())]),
    ),
    Metric(
        "ladder_ingest_resyncs",
        Kind.COUNTER,
        "Book resyncs by cause; reason=crossed counts crossed books.",
        ("exchange", "reason"),
        lambda t: _per_exchange(t, lambda s: [(n, (reason,)) for reason, n in s.resyncs.items()]),
    ),
    Metric(
        "ladder_ingest_fresh_snapshots",
        Kind.COUNTER,
        "Background snapshots that replaced a served book: refresh or audit.",
        ("exchange", "kind"),
        lambda t: _per_exchange(t, lambda s: [(s.refreshes_done, ("refresh",)), (s.audits, ("audit",))]),
    ),
    Metric(
        "ladder_ingest_audit_mismatches",
        Kind.COUNTER,
        "Audits whose fresh snapshot disagreed with the served book.",
        EXCHANGE,
        lambda t: _per_exchange(t, lambda s: [(s.audit_mismatches, ())]),
    ),
    Metric(
        "ladder_ingest_stall_checks",
        Kind.COUNTER,
        "Suspect silences checked against the venue, by verdict: quiet or stalled.",
        ("exchange", "verdict"),
        lambda t: _per_exchange(t, lambda s: [(s.quiet_checks, ("quiet",)), (s.stalls, ("stalled",))]),
    ),
    Metric(
        "ladder_ingest_snapshot_fetches",
        Kind.COUNTER,
        "REST depth snapshots fetched, by outcome.",
        ("exchange", "outcome"),
        lambda t: _per_exchange(
            t, lambda s: [(s.snapshots + s.background_snapshots, ("ok",)), (s.snapshot_failures, ("failed",))]
        ),
    ),
    Metric(
        "ladder_ingest_weight_spent",
        Kind.COUNTER,
        "Venue request weight spent.",
        EXCHANGE,
        lambda t: [(r.stats.weight_spent, (e,)) for e, r in _exchanges(t) if r.stats.weight_spent],
    ),
    Metric(
        "ladder_ingest_publish_batches",
        Kind.COUNTER,
        "Store pipelines that wrote snapshots.",
        read=lambda t: value(t.batches),
    ),
    Metric(
        "ladder_ingest_published_snapshots",
        Kind.COUNTER,
        "Snapshots written and published.",
        read=lambda t: value(t.snapshots),
    ),
    Metric(
        "ladder_ingest_venue_refusals",
        Kind.COUNTER,
        "Venue REST answers other than 200, by status (429 and 418 must stay at zero).",
        ("exchange", "status"),
        lambda t: [
            (n, (e, status)) for e, r in _exchanges(t) for status, n in list(r.stats.http_status.items())
        ],
    ),
    Metric(
        "ladder_ingest_books",
        Kind.GAUGE,
        "Book replicas kept, by published status.",
        ("exchange", "status"),
        _books,
    ),
    Metric(
        "ladder_ingest_weight_used",
        Kind.GAUGE,
        "Request weight the venue reports used in the current minute (X-MBX-USED-WEIGHT-1M).",
        EXCHANGE,
        _weight_used,
    ),
    Metric(
        "ladder_ingest_weight_limit",
        Kind.GAUGE,
        "Request weight a minute this node's budget allows.",
        EXCHANGE,
        lambda t: [(runtime.budget.limit, (exchange,)) for exchange, runtime in _exchanges(t)],
    ),
    Metric(
        "ladder_book_update_id",
        Kind.GAUGE,
        "The venue update id each synced book replica is at.",
        BOOK,
        _update_ids,
    ),
    Metric(
        "ladder_book_synced",
        Kind.GAUGE,
        "1 while a book replica is published as synced, else 0.",
        BOOK,
        lambda t: [(int(status is BookStatus.SYNCED), _book_labels(r)) for r, status in _statuses(t)],
    ),
    Metric(
        "ladder_book_checksum",
        Kind.GAUGE,
        "The venue's checksum last verified against each book replica (Kraken; none where the venue "
        "sends none).",
        BOOK,
        _checksums,
    ),
    Metric(
        "ladder_book_checksum_matched",
        Kind.GAUGE,
        "1 when a book replica gave the venue's checksum, 0 when it did not (it then resyncs: "
        'ladder_ingest_resyncs_total{reason="checksum"}).',
        BOOK,
        _checksums_matched,
    ),
    Metric(
        "ladder_book_age_seconds",
        Kind.GAUGE,
        "Time since each book replica last heard from its venue.",
        BOOK,
        _ages,
        unit="s",
    ),
)
"""Every counter and gauge of an ingest node, read from its stats and replicas at collection."""

PUBLISH_LATENCY: Metric[IngestTelemetry] = Metric(
    "ladder_ingest_publish_latency_seconds",
    Kind.HISTOGRAM,
    "Frame received -> the snapshot carrying it written and published.",
    EXCHANGE,
    unit="s",
    bounds=LATENCY_BUCKETS_S,
)
PUBLISH_BATCH_SECONDS: Metric[IngestTelemetry] = Metric(
    "ladder_ingest_publish_batch_seconds",
    Kind.HISTOGRAM,
    "Round trip of one store pipeline of snapshots.",
    unit="s",
    bounds=LATENCY_BUCKETS_S,
)
HISTOGRAMS = (PUBLISH_LATENCY, PUBLISH_BATCH_SECONDS)
