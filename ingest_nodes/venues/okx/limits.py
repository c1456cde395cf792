"""OKX's published limits, as data (``Overview / WebSocket`` and the market-data endpoint pages).

Public WebSocket: 3 connection requests a second per IP; 480 ``subscribe`` / ``unsubscribe`` /
``login`` requests an hour per connection; a connection with no push for 30 seconds is cut, so
the client sends the text ``ping`` (the venue answers ``pong``) when it has heard nothing for less
than that; the docs advise fewer than 30 channels of 50 or 400 levels per connection.
REST (per IP): ``/api/v5/market/books`` 40 requests per 2 s, ``/api/v5/public/instruments`` 20 per
2 s. The ``books`` channel carries the best 400 levels a side.
"""

from __future__ import annotations

from typing import Final

BOOKS_CHANNEL: Final = "books"
BOOKS_DEPTH: Final = 400
CONNECTS_PER_S: Final = 1.0
"""Connection attempts a second one node makes: the venue allows 3 per IP, so up to three nodes
behind one IP stay inside it (more need their own IPs)."""
REQUESTS_PER_HOUR: Final = 480
STREAMS_PER_CONNECTION: Final = 29
KEEPALIVE_S: Final = 20.0
CONTROL_MESSAGES_PER_S: Final = 5
"""OKX names no per-second message limit for public connections; requests are few and batched."""
REST_REQUESTS_PER_MINUTE: Final = 600
"""Half of ``books``' 40 per 2 s, counted in the shared per-minute budget (one weight a request)."""
HEARTBEAT_MS: Final = 60_000
"""A book with no change gets an empty update about this often (the venue's liveness word)."""
