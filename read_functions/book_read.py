"""Reading one book for a caller: validation, entitlement, replica choice and freshness rules.

Shared by the book routes, the UBDCC routes and the stream, so every way of reading a book
applies the same rules: the market must exist in the catalog (404), the tenant must subscribe
to it (403; the operator reads everything), and only a replica that is ``synced`` and heard from
within ``max_silence_ms`` is ever served (503 ``book_not_synced`` otherwise).
"""

from __future__ import annotations

import functools

from book_store.codec import BookStatus, Snapshot
from book_store.keys import BookKey
from book_store.reader import choose_replica
from control_plane.errors import BookNotSyncedError, ForbiddenError
from control_plane.models import Principal
from read_functions.book_cache import Entry
from read_functions.deps import Deps

NOT_SYNCED_RETRY_S = 1.0


@functools.lru_cache(maxsize=16384)
def book_key(exchange: str, market: str) -> BookKey:
    """A validated key, made once per book name (an invalid name raises and is not cached)."""
    return BookKey(exchange, market)


async def authorize_book(deps: Deps, principal: Principal, exchange: str, market: str) -> BookKey:
    """The book, once it is known to exist and the caller may read it."""
    book = book_key(exchange, market)
    await deps.catalog.market(exchange, market)
    tenant_id = principal.tenant_id
    if tenant_id is not None and not await deps.access.entitled(tenant_id, exchange, market):
        raise ForbiddenError(f"not subscribed to {exchange} {market}: POST /v1/subscriptions first")
    return book


def synced_replica(deps: Deps, entry: Entry, now_ms: int) -> Snapshot:
    """The replica to serve, or BookNotSyncedError."""
    snapshot = entry.served(now_ms, deps.settings.max_silence_ms)
    if snapshot is None:
        book = entry.book
        raise BookNotSyncedError(
            f"no replica of {book.exchange} {book.market} is synced right now; retry shortly",
            NOT_SYNCED_RETRY_S,
        )
    return snapshot


def best_status(replicas: dict[int, Snapshot], now_ms: int, max_silence_ms: int) -> str:
    """How a book is doing: ``synced``, ``resyncing``, ``stale`` (all silent) or ``starting`` (none)."""
    if not replicas:
        return "starting"
    if choose_replica(replicas.values(), now_ms, max_silence_ms) is not None:
        return BookStatus.SYNCED.label
    heard = [s for s in replicas.values() if now_ms - s.publish_time <= max_silence_ms]
    if not heard:
        return BookStatus.STALE.label
    return max(heard, key=lambda s: s.publish_time).status.label
