"""One object per book name a reader asked for, remembering what its last read established.

A read checks three things before it serves a book: the market is listed in the catalog, the
tenant subscribes to it, and the book's cache entry is live. Each check is a look-up in a large
structure (thousands of markets, of subscriptions, of cached books), and with reads spread over
thousands of books every look-up misses the CPU's caches. A :class:`ReadMemo` keeps, with each
answer, the object the answer came from: the catalog's market list, the tenant's entitlement set,
the cache entry. Those objects are replaced, never changed, when what they say changes, so while
the memo's object *is* the current one the answer still holds, and the check is an identity
comparison on the one object a read of the book touches anyway.

The memo holds each object through a weak reference. CPython hands out one plain weak reference
per object, so ``weakref.ref(current) is memo.listed_in`` compares without dereferencing anything
cold; a reference whose object is gone is never the current object's, so the check then runs in
full (and if an interpreter made a new weak reference per call, every check would just run in
full).
"""

from __future__ import annotations

import weakref

from book_store.schema import BookKey
from read_functions.books.entry import Entry
from read_functions.tenancy.catalog_cache import MarketListing

MEMOS_KEPT = 16_384
"""Memos kept per process; past that they are all dropped (a memo is a cache, never the truth)."""


class ReadMemo:
    """A book by name, and the objects its last checks were answered from."""

    __slots__ = ("entitled_in", "entry", "key", "listed_in")

    def __init__(self, key: BookKey) -> None:
        self.key = key
        # All weak: a memo never keeps alive what it was checked against.
        self.listed_in: weakref.ref[MarketListing] | None = None  # a catalog listing that lists it
        self.entitled_in: weakref.ref[frozenset[tuple[str, str]]] | None = None  # a set holding it
        self.entry: weakref.ref[Entry] | None = None  # the live cache entry of its last read


class ReadMemos:
    """The memos of one process's readers, by ``(exchange, market)``."""

    def __init__(self, kept: int = MEMOS_KEPT) -> None:
        self._kept = kept
        self._refs: dict[tuple[str, str], ReadMemo] = {}

    def get(self, exchange: str, market: str) -> ReadMemo:
        """The memo of a valid book name (InvalidBookIdError otherwise, and nothing is kept)."""
        ref = self._refs.get((exchange, market))
        if ref is None:
            ref = ReadMemo(BookKey(exchange, market))
            if len(self._refs) >= self._kept:
                self._refs.clear()
            self._refs[exchange, market] = ref
        return ref

    def __len__(self) -> int:
        return len(self._refs)
