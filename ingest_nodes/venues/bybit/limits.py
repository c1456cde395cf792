"""Bybit's published limits, as data ("Connect", "Rate Limit Rules", "Orderbook" pages of the v5 docs).

Public WebSocket, per IP: at most 500 connections opened in 5 minutes per domain, at most 1000
market-data connections per market (spot, linear, ...); a spot subscribe request carries at most
10 topics, and one connection's topics may add up to 21,000 characters; a ``{"op":"ping"}`` every
20 seconds keeps a connection alive. REST, per IP: 600 requests in 5 seconds across ``api.bybit.com``
(over it: 403 "access too frequent" and a ban of at least 10 minutes).

Ladder subscribes the 1000-level channel (pushed every 200 ms): it is the depth whose ``u`` the REST
``/v5/market/orderbook`` answer carries, so a REST book (at most 1000 levels) can check and audit
a streamed one at the same ``u``.
"""

from __future__ import annotations

from typing import Final

BOOK_DEPTH: Final = 1000
CONNECTS_PER_S: Final = 1.0
"""Connection attempts a second this node makes (the venue allows 500 in 5 minutes per IP)."""
STREAMS_PER_CONNECTION: Final = 200
"""About 5,000 characters of topics, well inside the venue's 21,000."""
SPOT_TOPICS_PER_REQUEST: Final = 10
KEEPALIVE_S: Final = 20.0
CONTROL_MESSAGES_PER_S: Final = 10
"""Bybit names no per-second message limit for public connections."""
REST_REQUESTS_PER_MINUTE: Final = 2400
"""A third of the venue's 600 per 5 s, counted in the shared per-minute budget."""
CATEGORIES: Final = ("spot", "linear")
