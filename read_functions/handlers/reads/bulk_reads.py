"""Reads of many books in one request: ``GET /v1/tops`` and ``GET /v1/books?markets=...``.

Both answer from the book cache: the books not cached yet are loaded together in one batch (one
``SUBSCRIBE`` and one pipeline for all of them), after which a request costs no store round trip.
Each book in an answer is its own atomic snapshot of one replica, with its own ``age_ms``; the
books are not a snapshot of one instant. A book that cannot be served (not synced, not
subscribed, unknown) is answered in its place, so one bad book never fails the others.
"""

from __future__ import annotations

import orjson

from book_store.schema import BookKey, InvalidBookIdError
from control_plane.accounts.auth import require_tenant
from control_plane.errors import ApiError, BookNotSyncedError, InvalidRequestError
from control_plane.validation import require_exchange
from ladder_process.clock import now_ms
from ladder_process.errors import LadderError
from ladder_process.redaction import redact
from read_functions.app.messages import JSON, Request, Response
from read_functions.app.params import int_param
from read_functions.books.entry import Entry
from read_functions.books.render import Side
from read_functions.deps import Deps
from read_functions.handlers.reads.rules import authorize_book, best_status, deeper_view, synced_replica

MAX_BOOKS_PER_READ = 100
"""The most markets one ``GET /v1/books?markets=`` names (an answer of 100 books 100 deep is ~0.6 MB)."""


async def get_tops(request: Request, deps: Deps) -> Response:
    """``GET /v1/tops[?exchange=...]``: the best bid and ask of every book the tenant subscribes to."""
    assert request.principal is not None
    tenant_id = require_tenant(request.principal)
    exchange = request.query.get("exchange")
    if exchange is not None:
        require_exchange(exchange)
    subscribed = sorted(
        book for book in await deps.access.entitlements(tenant_id) if exchange is None or book[0] == exchange
    )
    refs = deps.refs
    entries = await deps.books.entries([refs.get(e, m).key for e, m in subscribed])
    now = now_ms()
    silence = deps.settings.max_silence_ms
    parts: list[bytes] = []
    for entry in entries:
        head = entry.served(now, silence)
        if head is None:
            parts.append(entry.unsynced_top(best_status(entry.replicas, now, silence, entry.heartbeats)))
            continue
        top = entry.top_view(head)
        parts.append(b"%b%d%b" % (top.head, max(0, now - top.since), top.tail))
    return Response(200, b'{"tops":[%b]}' % b",".join(parts), JSON, {"Cache-Control": "no-cache"})


async def get_books(request: Request, deps: Deps) -> Response:
    """``GET /v1/books?exchange=...&markets=A,B,C[&depth=N]``: several books, each as one book read."""
    assert request.principal is not None
    query = request.query
    exchange = require_exchange(query.get("exchange"))
    markets = list(dict.fromkeys(m for m in (query.get("markets") or "").split(",") if m))
    if not markets:
        raise InvalidRequestError("markets must name at least one market (comma-separated)")
    if len(markets) > MAX_BOOKS_PER_READ:
        raise InvalidRequestError(f"markets may name at most {MAX_BOOKS_PER_READ} markets")
    settings = deps.settings
    depth = int_param(query, "depth", lo=1, hi=settings.max_depth) or settings.default_depth
    parts: dict[str, bytes] = {}
    readable: list[BookKey] = []
    for market in markets:
        try:
            readable.append((await authorize_book(deps, request.principal, exchange, market)).key)
        except (ApiError, InvalidBookIdError) as error:  # a store fault fails the whole request
            parts[market] = _failed(exchange, market, error)
    now = now_ms()
    for entry in await deps.books.entries(readable):
        parts[entry.book.market] = _book_part(deps, entry, depth, now)
    body = b'{"books":[%b]}' % b",".join(parts[m] for m in markets)
    return Response(200, body, JSON, {"Cache-Control": "no-cache"})


def _book_part(deps: Deps, entry: Entry, depth: int, now: int) -> bytes:
    """One book of the answer: what ``GET /v1/books/{exchange}/{market}`` would answer."""
    try:
        head = synced_replica(deps, entry, now)
    except BookNotSyncedError as error:
        return _failed(entry.book.exchange, entry.book.market, error)
    view = entry.view(head, depth, Side.BOTH)
    since = view.known_time
    if view.truncated:
        view, since, _ = deeper_view(deps, entry, head, view, depth, Side.BOTH, now)
        if view.truncated:
            deps.telemetry.truncated_answer(entry.book.exchange)
    return view.body(max(0, now - since))


def _failed(exchange: str, market: str, error: LadderError) -> bytes:
    """A book of the answer that cannot be served, with the error a read of it alone would give (a
    market that is a pasted key is not echoed)."""
    return orjson.dumps(
        {
            "exchange": redact(exchange),
            "market": redact(market),
            "error": {"code": error.code, "message": str(error)},
        }
    )
