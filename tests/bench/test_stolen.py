"""The host's steal, as ``bench binance`` reads it: CPU seconds so far, never going back."""

from __future__ import annotations

from bench.harness import stolen_seconds


def test_stolen_seconds_count_up_from_zero() -> None:
    first = stolen_seconds()
    assert first >= 0.0
    assert stolen_seconds() >= first
