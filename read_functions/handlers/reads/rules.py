"""Reading one book for a caller: validation, entitlement, replica choice and freshness rules.

Shared by the book routes, the UBDCC routes and the stream, so every way of reading a book
applies the same rules: the market must exist in the catalog (404), the tenant must subscribe
to it (403; the operator reads everything), and only a replica that is ``synced`` and heard from
within ``max_silence_ms`` (itself, or through its node's heartbeat) is ever served (503
``book_not_synced`` otherwise; ``venue_refused`` when every replica heard from says the venue
refuses its key, which no retry soon will fix).

A replica is chosen by its head snapshot. An ask deeper than the head holds is answered from the
same replica's deep snapshot when it may be served (see ``Entry.deep_of``), else from the head,
which then says ``truncated``.
"""

from __future__ import annotations

import weakref

from book_store.codec import BookStatus, Snapshot
from book_store.liveness import Heartbeats
from book_store.reader import choose_replica, heard
from book_store.unplaced import UnplacedBooks
from control_plane.errors import BookNotSyncedError, BookUnplacedError, ForbiddenError, VenueRefusedError
from control_plane.models import Principal
from read_functions.books.entry import Entry
from read_functions.books.read_memo import ReadMemo
from read_functions.books.render import BookView, Side
from read_functions.deps import Deps

NOT_SYNCED_RETRY_S = 1.0
REFUSED_RETRY_S = 30.0


async def authorize_book(deps: Deps, principal: Principal, exchange: str, market: str) -> ReadMemo:
    """The book, once it is known to exist and the caller may read it.

    Each check is skipped while the ref holds the very object that last answered it (see
    :mod:`read_functions.books.read_memo`): a repeat read of a book touches the ref, not the catalog or
    the tenant's entitlements."""
    ref = deps.refs.get(exchange, market)
    listing = deps.catalog.listing(exchange)
    if listing is None or weakref.ref(listing) is not ref.listed_in:
        await deps.catalog.market(exchange, market)
        listing = deps.catalog.listing(exchange)
        ref.listed_in = weakref.ref(listing) if listing is not None and market in listing else None
    tenant_id = principal.tenant_id
    if tenant_id is not None:
        entitlements = await deps.access.entitlements(tenant_id)
        answered_by = weakref.ref(entitlements)
        if answered_by is not ref.entitled_in:
            if (exchange, market) not in entitlements:
                raise ForbiddenError(f"not subscribed to {exchange} {market}: POST /v1/subscriptions first")
            ref.entitled_in = answered_by
    return ref


async def cached_entry(deps: Deps, ref: ReadMemo) -> Entry:
    """The book's cache entry; a live one is kept on the ref, so the next read needs no look-up."""
    last = None if ref.entry is None else ref.entry()
    entry = await deps.books.entry(ref.key, last)
    if entry is not last:
        ref.entry = weakref.ref(entry) if entry.live else None
    return entry


def synced_replica(deps: Deps, entry: Entry, now_ms: int) -> Snapshot:
    """The replica to serve, or BookNotSyncedError."""
    snapshot = entry.served(now_ms, deps.settings.max_silence_ms)
    if snapshot is None:
        book = entry.book
        silence = deps.settings.max_silence_ms
        beats = entry.heartbeats
        said = [s.status for s in entry.replicas.values() if now_ms - heard(s, beats) <= silence]
        if said and all(status is BookStatus.REFUSED for status in said):
            raise VenueRefusedError(
                f"{book.exchange} refuses Ladder's venue key for {book.market} (bad, missing, or over "
                "its connection limit); the operator has been told",
                REFUSED_RETRY_S,
            )
        raise BookNotSyncedError(
            f"no replica of {book.exchange} {book.market} is synced right now; retry shortly",
            NOT_SYNCED_RETRY_S,
        )
    return snapshot


async def raise_if_unplaced(deps: Deps, entry: Entry) -> None:
    """For a book no replica of which has published anything: BookUnplacedError with the
    scheduler's reason, when it has one (only ever asked on the way to a 503)."""
    if entry.replicas:
        return
    reason = (await UnplacedBooks(deps.redis).reasons([entry.book])).get(entry.book)
    if reason is not None:
        book = entry.book
        raise BookUnplacedError(f"{book.exchange} {book.market}: {reason}", REFUSED_RETRY_S)


def deeper_view(
    deps: Deps, entry: Entry, head: Snapshot, view: BookView, depth: int, side: Side, now_ms: int
) -> tuple[BookView, int, Snapshot]:
    """For a head ``view`` that is truncated: the deep snapshot's view if it may be served, else
    ``view``; the time the answer's age counts from; and the snapshot served (see
    :func:`deep_or_head`)."""
    snapshot, since = deep_or_head(deps, entry, head, now_ms)
    if snapshot is head:
        return view, view.known_time, head
    return entry.view(snapshot, depth, side), since, snapshot


def deep_or_head(deps: Deps, entry: Entry, head: Snapshot, now_ms: int) -> tuple[Snapshot, int]:
    """The deep snapshot of ``head``'s replica if it may be served, else ``head``; and the time an
    answer from it counts its age from (a deep snapshot at the head's update id is as current as
    the head, which vouches that nothing changed since)."""
    deep = entry.deep_of(head, now_ms, deps.settings.max_silence_ms)
    if deep is None:
        return head, head.known_time
    return deep, head.known_time if deep.update_id == head.update_id else deep.known_time


def deepest(deps: Deps, entry: Entry, head: Snapshot, now_ms: int) -> Snapshot:
    """The deepest snapshot of ``head``'s replica that may be served (for routes that read every
    level a book holds)."""
    if not (head.more_bids or head.more_asks):
        return head
    return entry.deep_of(head, now_ms, deps.settings.max_silence_ms) or head


def best_status(
    replicas: dict[int, Snapshot],
    now_ms: int,
    max_silence_ms: int,
    heartbeats: Heartbeats | None,
    unplaced: str | None = None,
) -> str:
    """How a book is doing: ``synced``, ``resyncing``, ``stale`` (all silent), ``refused`` (the venue
    refuses the key), ``unplaced`` (no replica could be placed: ``unplaced`` says why) or
    ``starting`` (none yet)."""
    if not replicas:
        return "starting" if unplaced is None else "unplaced"
    if choose_replica(replicas.values(), now_ms, max_silence_ms, heartbeats) is not None:
        return BookStatus.SYNCED.label
    said = [s for s in replicas.values() if now_ms - heard(s, heartbeats) <= max_silence_ms]
    if not said:
        return BookStatus.STALE.label
    return max(said, key=lambda s: s.publish_time).status.label
