"""``GET /v1/books/{exchange}/{market}/info``: how a book is kept, replica by replica.

Not a hot path (an operator or a dashboard asks now and then), so it reads the store directly:
each replica's head and deep snapshots for what is stored, and the counters its node reports
(resyncs by reason, refreshes of the trusted window, audits and their disagreements), and where
the venue sends one (Kraken), its latest checksum and whether the book gave it.
"""

from __future__ import annotations

from typing import Any

from book_store.codec import Snapshot
from book_store.liveness import Heartbeats
from book_store.reader import BookReader
from book_store.unplaced import UnplacedBooks
from ladder_process.clock import now_ms
from read_functions.app.messages import Request, Response, json_response
from read_functions.app.schemas import REPLICA_COUNTERS, REPLICA_EVENTS
from read_functions.deps import Deps
from read_functions.handlers.reads.rules import authorize_book, best_status

COUNTERS = ("resyncs", *REPLICA_COUNTERS, *REPLICA_EVENTS)


async def get_book_info(request: Request, deps: Deps) -> Response:
    assert request.principal is not None  # the route requires a key
    params = request.path_params
    book = (await authorize_book(deps, request.principal, params["exchange"], params["market"])).key
    reader = BookReader(deps.redis)
    heartbeats = Heartbeats()
    stored = await reader.stored(book, heartbeats)
    counters = await reader.counters(book)
    now = now_ms()
    replicas = []
    for replica, head in sorted(stored.heads.items()):
        deep = stored.deeps.get(replica)
        counted = counters.get(replica, {})
        replicas.append({
            "replica": replica,
            "status": head.status.label,
            "update_id": head.update_id,
            "ingest_time": head.ingest_time,
            "confirmed_time": head.confirmed_time,
            "publish_time": head.publish_time,
            "age_ms": max(0, now - head.known_time),
            "head": _levels(head),
            "deep": None if deep is None else {**_levels(deep), "update_id": deep.update_id,
                                               "publish_time": deep.publish_time},
            **{name: counted.get(name) for name in COUNTERS},
            "checksum": counted.get("checksum"),
        })  # fmt: skip
    unplaced = None if stored.heads else (await UnplacedBooks(deps.redis).reasons([book])).get(book)
    return json_response({
        "exchange": book.exchange,
        "market": book.market,
        "status": best_status(stored.heads, now, deps.settings.max_silence_ms, heartbeats, unplaced),
        **({"reason": unplaced} if unplaced is not None else {}),
        "replicas": replicas,
    })  # fmt: skip


def _levels(snapshot: Snapshot) -> dict[str, Any]:
    """Levels stored a side, and whether the venue may hold more past them."""
    return {
        "bids": snapshot.bid_count,
        "asks": snapshot.ask_count,
        "more_bids": snapshot.more_bids,
        "more_asks": snapshot.more_asks,
    }
