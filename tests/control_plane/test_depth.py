"""The depth table: one row per exchange Ladder knows, each no deeper than the venue's snapshots."""

from __future__ import annotations

import pytest

from control_plane.depth import DEFAULT_DEPTH, MAX_DEPTH_LIMIT, VENUE_MAX_DEPTH, venue_max_depth
from control_plane.errors import InvalidRequestError
from control_plane.validation import require_depth
from ingest_nodes.venues.registry import KNOWN_EXCHANGES


def test_every_known_exchange_has_a_maximum_and_the_limit_is_the_deepest() -> None:
    assert set(VENUE_MAX_DEPTH) == set(KNOWN_EXCHANGES)
    assert MAX_DEPTH_LIMIT == 5000
    assert venue_max_depth("binance.com-futures") == venue_max_depth("binance.com-futures-testnet") == 1000
    assert {venue_max_depth(e) for e in ("binance.com", "binance.com-testnet", "binance.us")} == {5000}
    assert venue_max_depth("alpaca-crypto") == 5000
    assert venue_max_depth("unlisted.example") == DEFAULT_DEPTH


@pytest.mark.parametrize(
    ("exchange", "depth"),
    [("binance.com", 1), ("binance.com", 5000), ("binance.us", 5000), ("binance.com-futures", 1000)],
)
def test_depths_within_the_venue_maximum_pass(exchange: str, depth: int) -> None:
    assert require_depth(exchange, depth) == depth


@pytest.mark.parametrize(
    ("exchange", "depth", "message"),
    [
        ("binance.com-futures", 1001, "at most 1000 on binance.com-futures"),
        ("binance.com-futures-testnet", 5000, "at most 1000 on binance.com-futures-testnet"),
        ("binance.com", 5001, "between 1 and 5000"),
        ("alpaca-crypto", 0, "between 1 and 5000"),
        ("binance.com", -3, "between 1 and 5000"),
        ("binance.com", 100.0, "integer"),
        ("binance.com", "100", "integer"),
        ("binance.com", True, "integer"),
        ("binance.com", None, "integer"),
    ],
)
def test_other_depths_are_refused_naming_the_limit(exchange: str, depth: object, message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        require_depth(exchange, depth)
