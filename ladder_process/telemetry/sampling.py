"""Which traces a process keeps by default: what an operator looks for, and a small share of the rest.

Recording every span floods a collector: an ingest node writes a publish batch span per event-loop
turn (11,601 of them in 70 s for 26 replicas of the fake venue), a read worker one per request.
:class:`LadderSampler` keeps, of the spans that start a trace,

- every error: a request answered 5xx, or any span that starts with ``error.type`` set;
- every span an operator goes looking for (``KEPT_NAMES``: a resync and the snapshots under it, a
  replica moved to another node);
- every slow publish: a ``ladder.publish_batch`` that took ``SLOW_PUBLISH_MS`` or more;
- and ``ratio`` of the rest (``DEFAULT_RATIO``), by trace id, so one trace is kept whole or not.

It judges spans as they start, which works because Ladder's request and publish spans are made
once their outcome is known (they are started with a past start time). Wrapped in ``ParentBased``,
a span with a parent follows it: a request whose caller's trace is sampled is recorded, one whose
caller's is not is not, so a caller's sampling decision holds across the system.

It is the default when ``OTEL_TRACES_SAMPLER`` is unset (or ``parentbased_ladder``); the standard
samplers stay available by name, with ``OTEL_TRACES_SAMPLER_ARG`` their ratio (``ladder``'s too).
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult, TraceIdRatioBased
from opentelemetry.trace import Link, SpanKind
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes

DEFAULT_RATIO = 0.01
SLOW_PUBLISH_MS = 25.0
"""A publish batch this slow is kept: ten times a busy node's usual flush, and the stream target's
p99 budget (10 ms) spent twice over."""
KEPT_NAMES = frozenset({"ladder.resync", "ladder.snapshot_fetch", "ladder.replica_move"})
"""Spans kept whatever the ratio (a snapshot fetch outside a resync is a refresh or an audit)."""
PUBLISH_BATCH = "ladder.publish_batch"
DURATION_MS = "ladder.duration_ms"
"""The attribute a publish batch span carries its duration in, for this sampler to judge."""


class LadderSampler(Sampler):
    """Keeps errors, resyncs and moves, slow publishes, and ``ratio`` of the rest (see the module)."""

    def __init__(self, ratio: float = DEFAULT_RATIO) -> None:
        self._rest = TraceIdRatioBased(ratio)
        self.ratio = ratio

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        if name in KEPT_NAMES or _failed(attributes) or _slow(name, attributes):
            return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes, trace_state)
        return self._rest.should_sample(parent_context, trace_id, name, kind, attributes, links, trace_state)

    def get_description(self) -> str:
        kept = ", ".join(sorted(KEPT_NAMES))
        return f"LadderSampler{{errors, {kept}, publishes >= {SLOW_PUBLISH_MS} ms, rest {self.ratio}}}"


def _failed(attributes: Attributes) -> bool:
    if not attributes:
        return False
    status = attributes.get("http.response.status_code")
    return (isinstance(status, int) and status >= 500) or "error.type" in attributes


def _slow(name: str, attributes: Attributes) -> bool:
    if name != PUBLISH_BATCH or not attributes:
        return False
    duration = attributes.get(DURATION_MS)
    return isinstance(duration, int | float) and duration >= SLOW_PUBLISH_MS
