"""The read API's traces and metrics, behind one small object that the rest of the package calls.

Callers use only the methods below (``request_done`` from the dispatcher, ``render`` for
``GET /metrics``); the OpenTelemetry pipeline behind
them is :mod:`ladder_process.telemetry`, configured by the ``OTEL_*`` variables.

The hot path pays a few dict updates and one local histogram record per request (the route's
series is cached; see :meth:`ladder_process.telemetry.setup.Telemetry.histogram`); a request span is
only built when tracing is on, and then after the fact (its start time is known), with the
caller's W3C ``traceparent`` as its parent (the SDK sends one whenever its caller has a span).
A book read's span names what it served: ``ladder.replica``, ``ladder.update_id`` (the venue's
update id of the snapshot, the same number the ingest node's spans and the answer carry) and
``ladder.age_ms``. Metric attributes stay low-cardinality: route
template and status on request metrics, the tenant id on the per-tenant counters (tenants are
few and operator-made); never a market, a key or a request id. Spans carry the rest. Each worker
process keeps its own numbers; ``worker`` labels them.

The metrics are the rows of :data:`REQUEST_METRICS` and :data:`REQUEST_SECONDS` here, and of
``read_functions.deps.WORKER_METRICS`` (the caches and the load); docs/observability.md lists them.
"""

from __future__ import annotations

import os
import time
from contextvars import ContextVar

from opentelemetry.trace import SpanKind, StatusCode

from book_store.codec import Snapshot
from ladder_process.telemetry.histograms import HistogramSeries
from ladder_process.telemetry.metrics import Kind, Metric, counts
from ladder_process.telemetry.setup import Telemetry, caller_context
from read_functions.app.messages import Request
from read_functions.books.cache import book_cache_hit

LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)

served_book: ContextVar[tuple[Snapshot, int] | None] = ContextVar("ladder_served_book", default=None)
"""The snapshot a book read answered with, and the answer's age in ms; set only when tracing is on,
read and cleared by the request's span."""


class ReadTelemetry:
    """Request counters, latency and spans of one read worker, plus values sampled on scrape."""

    def __init__(self, pipeline: Telemetry | None = None) -> None:
        self.worker = str(os.getpid())
        self.pipeline = pipeline or Telemetry.from_env(
            "ladder-read", resource_attributes={"ladder.worker": self.worker}
        )
        self.requests: dict[tuple[str, int], int] = {}
        self.tenant_requests: dict[str, int] = {}
        self.rate_limited: dict[str, int] = {}
        self.truncated: dict[str, int] = {}
        self._tracer = self.pipeline.tracer
        self.tracing = self._tracer is not None
        """Whether requests are traced: the hot path asks before it gathers what a span reports."""
        self._latency_by_route: dict[str, HistogramSeries] = {}
        self.pipeline.observe(REQUEST_METRICS, self)
        self._latency = REQUEST_SECONDS.histogram(self.pipeline)

    def request_done(self, request: Request, route: str, status: int, seconds: float) -> None:
        """Count one answered request (``route`` is its template) and trace it when tracing is on."""
        key = (route, status)
        self.requests[key] = self.requests.get(key, 0) + 1
        principal = request.principal
        tenant = None if principal is None else principal.tenant_id
        if tenant is not None:
            self.tenant_requests[tenant] = self.tenant_requests.get(tenant, 0) + 1
            if status == 429:
                self.rate_limited[tenant] = self.rate_limited.get(tenant, 0) + 1
        latency = self._latency_by_route.get(route)
        if latency is None:
            latency = self._latency_by_route[route] = self._latency.series({"route": route})
        latency.record(seconds)
        if self._tracer is not None:
            hit = book_cache_hit.get()
            if hit is not None:
                book_cache_hit.set(None)  # the next request of this connection starts unknown
            self._trace(request, route, status, seconds, tenant, hit)

    def served(self, snapshot: Snapshot, age_ms: int) -> None:
        """A book read answered with ``snapshot`` (call only when :attr:`tracing`)."""
        served_book.set((snapshot, age_ms))

    def truncated_answer(self, exchange: str) -> None:
        """A book answer said ``truncated`` (rare: a side's trusted window ran short)."""
        self.truncated[exchange] = self.truncated.get(exchange, 0) + 1

    def render(self) -> bytes:
        """The Prometheus text exposition of this worker's metrics."""
        return self.pipeline.render_prometheus({"worker": self.worker})

    def _trace(
        self, request: Request, route: str, status: int, seconds: float, tenant: str | None, hit: bool | None
    ) -> None:
        assert self._tracer is not None
        end_ns = time.time_ns()
        attributes: dict[str, str | int | bool] = {
            "http.request.method": request.method,
            "http.route": route,
            "http.response.status_code": status,
            "ladder.request_id": request.request_id,
        }
        if tenant is not None:
            attributes["ladder.tenant"] = tenant
        params = request.path_params
        for name in ("exchange", "market"):
            value = params.get(name) or request.query.get(name)
            if value:
                attributes[f"ladder.{name}"] = value
        if hit is not None:
            attributes["ladder.cache_hit"] = hit
        served = served_book.get()
        if served is not None:
            served_book.set(None)
            snapshot, age_ms = served
            attributes["ladder.replica"] = snapshot.replica
            attributes["ladder.update_id"] = snapshot.update_id
            attributes["ladder.age_ms"] = age_ms
            attributes["ladder.book_status"] = snapshot.status.label
            attributes["ladder.deep"] = snapshot.deep
        span = self._tracer.start_span(
            f"{request.method} {route}",
            context=caller_context(request.headers),
            kind=SpanKind.SERVER,
            attributes=attributes,
            start_time=end_ns - int(seconds * 1e9),
        )
        if status >= 500:
            span.set_status(StatusCode.ERROR)
        span.end(end_time=end_ns)


REQUEST_METRICS: tuple[Metric[ReadTelemetry], ...] = (
    Metric(
        "ladder_read_requests",
        Kind.COUNTER,
        "Requests answered, by route template and status.",
        ("route", "status"),
        lambda t: counts(t.requests),
    ),
    Metric(
        "ladder_read_tenant_requests",
        Kind.COUNTER,
        "Requests made with a tenant's keys.",
        ("tenant",),
        lambda t: counts(t.tenant_requests),
    ),
    Metric(
        "ladder_read_rate_limited",
        Kind.COUNTER,
        "Requests refused by the tenant's rate limit (429).",
        ("tenant",),
        lambda t: counts(t.rate_limited),
    ),
    Metric(
        "ladder_read_truncated",
        Kind.COUNTER,
        "Book answers with a side short of the asked depth (truncated: true).",
        ("exchange",),
        lambda t: counts(t.truncated),
    ),
)
"""What a read worker counts of the requests it answers (its caches' figures: ``deps.WORKER_METRICS``)."""

REQUEST_SECONDS: Metric[ReadTelemetry] = Metric(
    "ladder_read_request_seconds",
    Kind.HISTOGRAM,
    "Time from request to response, by route template.",
    ("route",),
    unit="s",
    bounds=LATENCY_BUCKETS_S,
)
