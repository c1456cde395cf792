"""Scheduling rounds as the control process reports them: outcome counts, moves, gauges and a span."""

from __future__ import annotations

import pytest

from book_store.schema import BookKey
from control_plane.models import BookWish, NodeInfo
from control_plane.scheduling.scheduler import plan_assignments
from control_plane.scheduling.telemetry import ControlTelemetry
from ladder_process.errors import StoreError
from tests.telemetry.helpers import recorded


def test_a_planned_a_standby_and_a_failed_round() -> None:
    record = recorded("ladder-control-test")
    control = ControlTelemetry(record.telemetry)
    nodes = [NodeInfo(f"n{i}", "", 10, 0, 0, draining=False, load=0.0) for i in range(2)]
    wanted = {
        BookKey("binance.com", "BTCUSDT"): BookWish(2, 100),
        BookKey("binance.com", "ETHBTC"): BookWish(3, 100),
    }
    plan = plan_assignments(wanted, nodes, [], set())
    assert plan.added

    with control.round() as observe:
        observe(plan)
    with control.round() as observe:
        observe(None)
    with pytest.raises(StoreError), control.round():
        raise StoreError("store down")

    for outcome in ("planned", "standby", "failed"):
        assert record.value("ladder_control_rounds", outcome=outcome) == 1
    assert record.value("ladder_control_moves", kind="added") == len(plan.added)
    assert record.value("ladder_control_replicas", state="assigned") == len(plan.assignments)
    assert record.value("ladder_control_replicas", state="unplaced") == sum(plan.unplaced.values())
    assert record.value("ladder_control_nodes_in_use") == 2
    histogram = record.histogram("ladder_control_round_seconds")
    assert histogram is not None and histogram.count == 3
    spans = record.finished("ladder.schedule_round")
    assert [s.attributes["ladder.outcome"] for s in spans if s.attributes] == ["planned", "standby", "failed"]
    assert spans[0].attributes is not None and spans[0].attributes["ladder.added"] == len(plan.added)
    assert not spans[2].status.is_ok
