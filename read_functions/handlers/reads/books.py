"""``GET /v1/books/{exchange}/{market}`` and its ``/bids`` and ``/asks`` variants: the hot path.

A steady-state read costs no store round trip: the key, tenant, entitlement, catalog and book
all come from memory, and the body is pre-rendered bytes around one formatted ``age_ms``.
"""

from __future__ import annotations

import zlib

from control_plane.errors import BookNotSyncedError, BookTooOldError
from ladder_process.clock import now_ms
from read_functions.app.messages import JSON, Request, Response
from read_functions.app.negotiation import accepts_gzip, etag_matches
from read_functions.app.params import int_param
from read_functions.books.render import Side
from read_functions.deps import Deps
from read_functions.handlers.reads.rules import (
    authorize_book,
    cached_entry,
    deeper_view,
    raise_if_unplaced,
    synced_replica,
)

MAX_AGE_LIMIT_MS = 86_400_000

TOO_OLD_RETRY_S = 1.0
"""Retry-After of book_too_old: a busy book is fresher within a second, a quiet one once its node
confirms it again (which the reader cannot foresee), so the hint is the shortest useful wait."""


async def get_book(request: Request, deps: Deps) -> Response:
    return await _read(request, deps, Side.BOTH)


async def get_bids(request: Request, deps: Deps) -> Response:
    return await _read(request, deps, Side.BIDS)


async def get_asks(request: Request, deps: Deps) -> Response:
    return await _read(request, deps, Side.ASKS)


async def _read(request: Request, deps: Deps, side: Side) -> Response:
    query = request.query
    settings = deps.settings
    depth = settings.default_depth
    max_age_ms = None
    if query:
        depth = int_param(query, "depth", lo=1, hi=settings.max_depth) or depth
        max_age_ms = int_param(query, "max_age_ms", lo=0, hi=MAX_AGE_LIMIT_MS)
    params = request.path_params
    assert request.principal is not None  # the route requires a key
    ref = await authorize_book(deps, request.principal, params["exchange"], params["market"])
    entry = await cached_entry(deps, ref)
    now = now_ms()
    # Past this point only the entry and its view are touched, not the snapshot: see Entry.served.
    try:
        head = synced_replica(deps, entry, now)
    except BookNotSyncedError:
        await raise_if_unplaced(deps, entry)
        raise
    view = entry.view(head, depth, side)
    since = view.known_time
    served = head
    if view.truncated:
        view, since, served = deeper_view(deps, entry, head, view, depth, side, now)
        if view.truncated:
            deps.telemetry.truncated_answer(ref.key.exchange)
    age_ms = max(0, now - since)
    if deps.telemetry.tracing:
        deps.telemetry.served(served, age_ms)
    if max_age_ms is not None and age_ms > max_age_ms:
        raise BookTooOldError(
            f"the freshest synced replica of {ref.key.exchange} {ref.key.market} is {age_ms} ms old "
            f"(max_age_ms={max_age_ms})",
            TOO_OLD_RETRY_S,
        )
    headers = {"ETag": view.etag, "Cache-Control": "no-cache"}
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None and etag_matches(if_none_match, view.etag):
        return Response(304, b"", None, headers)
    body = view.body(age_ms)
    accept_encoding = request.headers.get("accept-encoding")
    if accept_encoding is not None and accepts_gzip(accept_encoding):
        compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
        body = compressor.compress(body) + compressor.flush()
        headers["Content-Encoding"] = "gzip"
        headers["Vary"] = "Accept-Encoding"
    return Response(200, body, JSON, headers)
