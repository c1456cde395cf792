"""Binance's published request weights and snapshot limits, as data.

Spot ``GET /api/v3/depth`` accepts any limit from 1 to 5000 and charges by tier; USD-M futures
``GET /fapi/v1/depth`` accepts only the listed limits. A shallower snapshot costs less weight, so a
book's snapshot limit is the cheapest one that covers the depth Ladder publishes for it.
"""

from __future__ import annotations

# (largest limit of the tier, weight), ascending.
SPOT_DEPTH_WEIGHTS: tuple[tuple[int, int], ...] = ((100, 5), (500, 25), (1000, 50), (5000, 250))
FUTURES_DEPTH_WEIGHTS: tuple[tuple[int, int], ...] = (
    (5, 2), (10, 2), (20, 2), (50, 2), (100, 5), (500, 10), (1000, 20),
)  # fmt: skip
SPOT_EXCHANGE_INFO_WEIGHT = 20
FUTURES_EXCHANGE_INFO_WEIGHT = 1
SPOT_WEIGHT_PER_MINUTE = 6000
FUTURES_WEIGHT_PER_MINUTE = 2400
SPOT_CONTROL_MESSAGES_PER_S = 5
FUTURES_CONTROL_MESSAGES_PER_S = 10
MAX_STREAMS_PER_CONNECTION = 1024


def depth_weight(tiers: tuple[tuple[int, int], ...], limit: int) -> int:
    """The weight one depth request with ``limit`` costs."""
    for largest, weight in tiers:
        if limit <= largest:
            return weight
    return tiers[-1][1]
