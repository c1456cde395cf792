"""Consolidated books for readers: the merge of the snapshots chosen, rendered once and reused.

A consolidated answer depends only on the snapshots that go into it (one per book: the one a read
of that book alone would serve), the depth and the names asked; a request adds nothing but each
book's ``age_ms`` and the books it left out. So a view is kept per question and reused while each
of its books still serves the same snapshot (compared by identity: a cache entry replaces a
snapshot, it never changes one). When one book changed, the question is merged again
(:mod:`read_functions.books.merge`), and only that book's levels are parsed again.

The views hold parsed levels, so what they may hold is bounded in levels, not only in views: a
caller asking for ever new questions empties the cache, it cannot grow it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import orjson

from book_store.codec import Snapshot
from book_store.schema import BookKey
from read_functions.books.merge import Level, Merged, crossed, known_to, merge, side_levels, text

MAX_VIEWS = 1024
MAX_LEVELS = 400_000
"""Parsed levels all views together may hold (a level is a few hundred bytes): ~100 MB at most."""


class Source(NamedTuple):
    """One book of a consolidated answer, and the quote currency it is priced in."""

    book: BookKey
    quote: str

    @property
    def id(self) -> str:
        """How the answer's levels name the book: ``exchange:market``."""
        return f"{self.book.exchange}:{self.book.market}"


class Question(NamedTuple):
    """What a consolidated answer is of: the pair as asked, the quotes it merges, its books, its
    depth, and whether it is a top (best bid and ask) or a book."""

    base: str
    quote: str
    quotes: tuple[str, ...]
    sources: tuple[Source, ...]
    depth: int
    top: bool = False


class ConsolidatedView:
    """The rendered answer to one question from one set of snapshots, but for each book's
    ``age_ms`` and the books left out: ``pieces[0] age_0 pieces[1] ... age_k-1 pieces[k] left_out tail``."""

    __slots__ = ("asks", "bids", "levels", "parsed", "pieces", "snapshots", "tail")

    def __init__(
        self,
        question: Question,
        snapshots: tuple[Snapshot, ...],
        parsed: list[tuple[list[Level], list[Level]]],
    ) -> None:
        self.snapshots = snapshots
        self.parsed = parsed
        self.levels = sum(len(bids) + len(asks) for bids, asks in parsed)
        depth = question.depth
        bids_cut = [s.more_bids and s.bid_count < depth for s in snapshots]
        asks_cut = [s.more_asks and s.ask_count < depth for s in snapshots]
        bid_sides = [bids for bids, _ in parsed]
        ask_sides = [asks for _, asks in parsed]
        self.bids = merge(bid_sides, depth, known_to(bid_sides, bids_cut), bids=True)
        self.asks = merge(ask_sides, depth, known_to(ask_sides, asks_cut), bids=False)
        truncated = (len(self.bids) < depth and any(bids_cut)) or (len(self.asks) < depth and any(asks_cut))
        self.pieces = _pieces(question, snapshots, bids_cut, asks_cut)
        ids = [source.id for source in question.sources]
        best_bid, best_ask = self.bids[0] if self.bids else None, self.asks[0] if self.asks else None
        if question.top:
            sides = b'"bid":%b,"ask":%b' % (_level(best_bid, ids), _level(best_ask, ids))
        else:
            sides = b'"bids":%b,"asks":%b' % (_levels(self.bids, ids), _levels(self.asks, ids))
        self.tail = b',"crossed":%b,"truncated":%b,%b}' % (
            _BOOL[crossed(best_bid, best_ask)],
            _BOOL[truncated],
            sides,
        )

    def body(self, ages: Sequence[int], left_out: bytes) -> bytes:
        """The answer, given each book's ``age_ms`` (in book order) and the left-out list as JSON."""
        pieces = self.pieces
        parts = [pieces[0]]
        for age, piece in zip(ages, pieces[1:], strict=True):
            parts.append(b"%d" % age)
            parts.append(piece)
        parts.append(left_out)
        parts.append(self.tail)
        return b"".join(parts)


class ConsolidatedViews:
    """The views of the questions asked lately, each kept until one of its snapshots is replaced."""

    def __init__(self, *, max_views: int = MAX_VIEWS, max_levels: int = MAX_LEVELS) -> None:
        self._views: dict[Question, ConsolidatedView] = {}
        self._levels = 0
        self._max_views = max_views
        self._max_levels = max_levels
        self.merges = 0
        """Views built (every other answer reused one)."""

    def view(self, question: Question, snapshots: tuple[Snapshot, ...]) -> ConsolidatedView:
        """The view of ``question`` from ``snapshots`` (one per source, in order)."""
        old = self._views.get(question)
        if old is not None:
            if all(a is b for a, b in zip(old.snapshots, snapshots, strict=True)):
                return old
            self._levels -= old.levels
        depth = question.depth
        parsed = []
        for i, snapshot in enumerate(snapshots):
            if old is not None and old.snapshots[i] is snapshot:
                parsed.append(old.parsed[i])
            else:
                bids = side_levels(snapshot.bids(depth), bids=True)
                parsed.append((bids, side_levels(snapshot.asks(depth), bids=False)))
        view = ConsolidatedView(question, snapshots, parsed)
        self.merges += 1
        if old is None and (len(self._views) >= self._max_views or self._levels > self._max_levels):
            self._views.clear()
            self._levels = 0
        self._views[question] = view
        self._levels += view.levels
        return view

    def __len__(self) -> int:
        return len(self._views)

    @property
    def levels(self) -> int:
        """Parsed levels the views hold."""
        return self._levels


def _pieces(
    question: Question, snapshots: Sequence[Snapshot], bids_cut: Sequence[bool], asks_cut: Sequence[bool]
) -> list[bytes]:
    """Everything of an answer before its left-out list, cut where each book's ``age_ms`` goes."""
    head = b'{"base":%b,"quote":%b,"quotes":%b,' % (
        orjson.dumps(question.base),
        orjson.dumps(question.quote),
        orjson.dumps(question.quotes),
    )
    if not question.top:
        head += b'"depth":%d,' % question.depth
    head += b'"books":['
    pieces = [head]
    for i, (source, snapshot) in enumerate(zip(question.sources, snapshots, strict=True)):
        book = source.book
        pieces[-1] += b'%b{"id":%b,"exchange":%b,"market":%b,"quote":%b,"update_id":%d,"replica":%d,' % (
            b"," if i else b"",
            orjson.dumps(source.id),
            orjson.dumps(book.exchange),
            orjson.dumps(book.market),
            orjson.dumps(source.quote),
            snapshot.update_id,
            snapshot.replica,
        )
        pieces[-1] += b'"status":"synced","truncated":%b,"publish_time":%d,"age_ms":' % (
            _BOOL[bids_cut[i] or asks_cut[i]],
            snapshot.publish_time,
        )
        pieces.append(b"}")
    pieces[-1] += b'],"left_out":'
    return pieces


def _level(level: Merged | None, ids: Sequence[str]) -> bytes:
    if level is None:
        return b"null"
    return orjson.dumps(_json(level, ids))


def _levels(levels: Sequence[Merged], ids: Sequence[str]) -> bytes:
    return orjson.dumps([_json(level, ids) for level in levels])


def _json(level: Merged, ids: Sequence[str]) -> list[object]:
    """``[price, total, {book id: quantity}]``: price and total in canonical form, each book's
    quantity as its venue wrote it."""
    return [text(level.price), text(level.total), {ids[i]: qty for i, qty in level.parts}]


_BOOL = {True: b"true", False: b"false"}
