"""Consolidated streams: one pair's books on several venues, merged, sent again whenever one changes.

``GET /v1/stream/consolidated?pair=BTC-USDT&venues=..&quotes=..&depth=N&max_age_ms=M&top=true``
upgrades to a WebSocket on which every message is what ``GET /v1/consolidated/{pair}`` (or, with
``top=true``, one pair's entry of ``/v1/consolidated/tops``) would answer at that moment: the same
books merged, each at its own ``update_id``, the same ``left_out``. It is the snapshot mode of a
book stream (:mod:`read_functions.handlers.reads.stream`): the stream watches every book it names,
a change of any of them only sets the flag, and the sender renders the newest merge, so a slow
client gets the newest consolidated book next and never a backlog. A merge nothing changed in (a
republish of the same snapshot, a change of a book that stays left out) is not sent again.

Which books it names is decided as a read decides it (:func:`~read_functions.handlers.reads.
consolidated.books_of`) when the stream opens and again at every recheck: a subscription dropped
moves that book to ``left_out`` (``forbidden``), or ends the stream with 4403 when the stream named
no venue and the tenant holds no book of the pair any more; one added joins the merge.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from book_store.schema import BookKey
from control_plane.errors import InvalidRequestError
from control_plane.models import Principal
from read_functions.app.messages import Request, Response
from read_functions.app.params import int_param
from read_functions.books.consolidated import ConsolidatedView
from read_functions.books.entry import Entry
from read_functions.deps import Deps
from read_functions.handlers.reads.books import MAX_AGE_LIMIT_MS
from read_functions.handlers.reads.consolidated import (
    MAX_DEPTH,
    Ask,
    Books,
    ask_of,
    books_of,
    merged,
    pair_param,
)
from read_functions.handlers.reads.stream import ConflatingStream, upgrade_key

_FLAGS = {"true": True, "false": False}


@dataclass(frozen=True, slots=True)
class ConsolidatedPlan:
    """What an authorized consolidated stream merges, and for whom."""

    ask: Ask
    depth: int
    max_age_ms: int | None
    top: bool
    principal: Principal
    key: str | None
    source: str  # the client's address, for the key's recheck


async def open_consolidated_stream(request: Request, deps: Deps) -> Response:
    """``GET /v1/stream/consolidated``: validate and authorize; the adapter then upgrades."""
    query = request.query
    top = _FLAGS.get(query.get("top", "false"))
    if top is None:
        raise InvalidRequestError("top must be true or false")
    depth = 1 if top else int_param(query, "depth", lo=1, hi=MAX_DEPTH) or deps.settings.default_depth
    max_age_ms = int_param(query, "max_age_ms", lo=0, hi=MAX_AGE_LIMIT_MS)
    if query.get("pair") is None:
        raise InvalidRequestError("pair is a required query parameter (BASE-QUOTE, such as 'BTC-USDT')")
    ask = ask_of(pair_param(query.get("pair")), query.get("quotes"), query.get("venues"))
    assert request.principal is not None
    books = await books_of(deps, request.principal, ask)
    key = upgrade_key(request)
    plan = ConsolidatedPlan(ask, depth, max_age_ms, top, request.principal, key, request.peer)
    return Response(101, b"", None, {}, stream=ConsolidatedStream(deps, plan, books))


class ConsolidatedStream(ConflatingStream):
    """The conflating state of one consolidated stream: a watcher of each of its books."""

    def __init__(
        self,
        deps: Deps,
        plan: ConsolidatedPlan,
        books: Books,
        *,
        recheck_s: float = 1.0,
    ) -> None:
        super().__init__(deps, plan.principal, plan.key, plan.source, recheck_s)
        self._plan = plan
        self._books = books
        self._watched: list[BookKey] = []
        self._sent: tuple[ConsolidatedView, bytes] | None = None

    def _seen(self, entry: Entry) -> None:
        """Nothing to keep: every message renders every book from the cache, a dict look-up each."""

    def _watch(self) -> None:
        books = [source.book for source in self._books.sources]
        for book in books:
            if book not in self._watched:
                self._deps.books.watch(book, self)
        for book in self._watched:
            if book not in books:
                self._deps.books.unwatch(book, self)
        self._watched = books

    def _unwatch(self) -> None:
        for book in self._watched:
            self._deps.books.unwatch(book, self)
        self._watched = []

    async def _message(self) -> bytes | None:
        plan, deps = self._plan, self._deps
        entries = await deps.books.entries(self._watched)
        view, ages, left_out = merged(
            deps, plan.ask, self._books, entries, plan.depth, plan.max_age_ms, top=plan.top
        )
        left = orjson.dumps(left_out)
        sent = self._sent
        if sent is not None and sent[0] is view and sent[1] == left:
            return None  # the same snapshots merged, the same books left out: nothing new
        self._sent = view, left
        return view.body(ages, left)

    async def _authorize(self) -> None:
        books = await books_of(self._deps, self._plan.principal, self._plan.ask)
        if books != self._books:
            self._books = books
            self._watch()
            self._wake()
