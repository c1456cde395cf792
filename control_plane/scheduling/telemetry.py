"""The control process's traces and metrics: one observation per scheduling round.

``run_control`` wraps each round in :meth:`ControlTelemetry.round` of the instance it is handed;
``python -m control_plane`` builds one from the ``OTEL_*`` variables (see
:mod:`ladder_process.telemetry`) and serves it on ``LADDER_METRICS_PORT``; anything else that runs
the loop gets a disabled one.

The metrics are the rows of :data:`CONTROL_METRICS` and :data:`ROUND_SECONDS`; rounds count by
outcome: ``planned``, ``standby`` (another process holds the lease) or ``failed`` (the store failed).

Spans: ``ladder.schedule_round`` with the same figures as attributes, and under it one
``ladder.replica_move`` per replica the plan changes: ``ladder.kind`` is ``placed`` (a new replica),
``moved`` (the same replica index on another node) or ``dropped``, with the book, the replica index
and ``ladder.from_node`` / ``ladder.to_node``. A round that changes more than
:data:`MAX_MOVE_SPANS` replicas (the first plan of a large fleet) traces that many and says how many
it left out in ``ladder.moves_untraced``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry.trace import Span, StatusCode, Tracer, set_span_in_context

from control_plane.models import ReplicaAssignment
from control_plane.scheduling.scheduler import Plan
from ladder_process.telemetry.metrics import Kind, Metric, counts, value
from ladder_process.telemetry.setup import Telemetry

ROUND_BUCKETS_S = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
MAX_MOVE_SPANS = 200

PlanObserver = Callable[[Plan | None], None]


class ControlTelemetry:
    """What the scheduling loop did, round by round."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry
        self.rounds: dict[str, int] = {}
        self.moves: dict[str, int] = {}
        self.replicas: dict[str, int] = {}
        self.nodes_in_use = 0
        telemetry.observe(CONTROL_METRICS, self)
        self._seconds = ROUND_SECONDS.histogram(telemetry).series({})

    @contextmanager
    def round(self) -> Iterator[PlanObserver]:
        """Around one round; the block passes the round's plan (None: standby) to the observer."""
        started = time.perf_counter()
        start_ns = time.time_ns()
        plans: list[Plan | None] = []
        outcome = "failed"
        try:
            yield plans.append
            outcome = "standby" if not plans or plans[0] is None else "planned"
        finally:
            seconds = time.perf_counter() - started
            self.rounds[outcome] = self.rounds.get(outcome, 0) + 1
            self._seconds.record(seconds)
            plan = plans[0] if plans else None
            if plan is not None:
                self._observe_plan(plan)
            self._trace(outcome, plan, start_ns, seconds)

    def _observe_plan(self, plan: Plan) -> None:
        self.moves["added"] = self.moves.get("added", 0) + len(plan.added)
        self.moves["removed"] = self.moves.get("removed", 0) + len(plan.removed)
        self.replicas["assigned"] = len(plan.assignments)
        self.replicas["unplaced"] = sum(plan.unplaced.values())
        self.nodes_in_use = len({a.node_id for a in plan.assignments})

    def _trace(self, outcome: str, plan: Plan | None, start_ns: int, seconds: float) -> None:
        tracer = self.telemetry.tracer
        if tracer is None:
            return
        attributes: dict[str, str | int] = {"ladder.outcome": outcome}
        if plan is not None:
            attributes.update({
                "ladder.added": len(plan.added),
                "ladder.removed": len(plan.removed),
                "ladder.unplaced": sum(plan.unplaced.values()),
            })  # fmt: skip
        span = tracer.start_span("ladder.schedule_round", attributes=attributes, start_time=start_ns)
        end_ns = start_ns + int(seconds * 1e9)
        if outcome == "failed":
            span.set_status(StatusCode.ERROR)
        if plan is not None:
            _trace_moves(tracer, span, plan, end_ns)
        span.end(end_time=end_ns)


def _trace_moves(tracer: Tracer, round_span: Span, plan: Plan, at_ns: int) -> None:
    """One child span of ``round_span`` per replica the plan places, moves or drops."""
    gone = {(a.exchange, a.market, a.replica): a for a in plan.removed}
    moves: list[tuple[str, ReplicaAssignment, ReplicaAssignment | None, ReplicaAssignment | None]] = []
    for added in sorted(plan.added):
        replaced = gone.pop((added.exchange, added.market, added.replica), None)
        moves.append(("placed" if replaced is None else "moved", added, replaced, added))
    moves.extend(("dropped", removed, removed, None) for removed in sorted(gone.values()))
    if len(moves) > MAX_MOVE_SPANS:
        round_span.set_attribute("ladder.moves_untraced", len(moves) - MAX_MOVE_SPANS)
    context = set_span_in_context(round_span)
    for kind, replica, old, new in moves[:MAX_MOVE_SPANS]:
        attributes: dict[str, str | int] = {
            "ladder.kind": kind,
            "ladder.exchange": replica.exchange,
            "ladder.market": replica.market,
            "ladder.replica": replica.replica,
            "ladder.depth": replica.depth,
        }
        if old is not None:
            attributes["ladder.from_node"] = old.node_id
        if new is not None:
            attributes["ladder.to_node"] = new.node_id
        move = tracer.start_span("ladder.replica_move", context, attributes=attributes, start_time=at_ns)
        move.end(end_time=at_ns)


CONTROL_METRICS: tuple[Metric[ControlTelemetry], ...] = (
    Metric(
        "ladder_control_rounds",
        Kind.COUNTER,
        "Scheduling rounds by outcome.",
        ("outcome",),
        lambda t: counts(t.rounds),
    ),
    Metric(
        "ladder_control_moves",
        Kind.COUNTER,
        "Replica assignments added and removed.",
        ("kind",),
        lambda t: counts(t.moves),
    ),
    Metric(
        "ladder_control_replicas",
        Kind.GAUGE,
        "Replicas assigned and unplaced after the last plan.",
        ("state",),
        lambda t: counts(t.replicas),
    ),
    Metric(
        "ladder_control_nodes_in_use",
        Kind.GAUGE,
        "Nodes carrying replicas.",
        read=lambda t: value(t.nodes_in_use),
    ),
)

ROUND_SECONDS: Metric[ControlTelemetry] = Metric(
    "ladder_control_round_seconds",
    Kind.HISTOGRAM,
    "Duration of one scheduling round.",
    unit="s",
    bounds=ROUND_BUCKETS_S,
)
