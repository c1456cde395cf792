"""One ladder from the books of one pair on several venues, in exact decimal arithmetic: pure.

Theory of operation
-------------------
Each book's side is stored best first, so a consolidated side is a merge of k sorted lists,
stopped at the asked depth: a heap holds each book's next level, the best is popped, and the levels
of every book at that price (compared as exact decimals: one venue's ``"97000.01000000"`` is
another's ``"97000.01"``) become one level, their quantities summed exactly. The top N of the merge
needs at most N levels of any one book (a book's N-th level is at least the merge's N-th), so no
book is read deeper than N, and nothing is ever sorted whole.

A book whose side holds fewer levels than asked while its venue may hold more (it is
``truncated``) is known only down to its last level: past that price its unknown levels could
belong anywhere, so the consolidated side stops at that price (:func:`known_to`) and says it is
truncated. Every level shown is the whole of what every book in the merge holds at its price.

Prices are ordered by :class:`~decimal.Decimal` with a context too wide to round any venue's
number (an inexact operation would raise, never round); a bid's sort key is its negated price, so
both sides merge smallest key first. The level strings are parsed once per snapshot
(:func:`side_levels`) and the parsed side reused until the snapshot is replaced.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from decimal import Context, Decimal, Inexact, InvalidOperation, Rounded
from typing import NamedTuple

import orjson

from ladder_process.errors import StoreError

EXACT = Context(prec=200, traps=[Inexact, Rounded, InvalidOperation])
"""Exact decimal arithmetic: 200 significant digits hold any venue's price or quantity sum, and an
operation that would round raises instead."""


class Level(NamedTuple):
    """One stored level: its sort key (the price, negated for a bid), and its quantity as the venue
    wrote it and as a number."""

    key: Decimal
    qty: str
    amount: Decimal


class Merged(NamedTuple):
    """One consolidated level: its price, the exact sum of the quantities, and each book's part
    as ``(book index, quantity as its venue wrote it)``, in book order."""

    price: Decimal
    total: Decimal
    parts: tuple[tuple[int, str], ...]


def side_levels(items: bytes | memoryview, *, bids: bool) -> list[Level]:
    """A snapshot side's stored level items (``["p","q"],["p","q"]``, best first), parsed once."""
    try:
        pairs = orjson.loads(b"".join((b"[", items, b"]")))
        if bids:
            return [Level(EXACT.minus(Decimal(price)), qty, Decimal(qty)) for price, qty in pairs]
        return [Level(Decimal(price), qty, Decimal(qty)) for price, qty in pairs]
    except (orjson.JSONDecodeError, ValueError, TypeError, InvalidOperation) as exc:
        raise StoreError("a stored side is not a list of [price, quantity] decimal strings") from exc


def known_to(sides: Sequence[Sequence[Level]], truncated: Sequence[bool]) -> Decimal | None:
    """The last key the merge of ``sides`` is known to, or None for no bound: the smallest last
    key of the truncated ones (an empty truncated side knows nothing: bound below every key)."""
    bound: Decimal | None = None
    for side, cut in zip(sides, truncated, strict=True):
        if cut:
            if not side:
                return _NOTHING
            last = side[-1].key
            if bound is None or last < bound:
                bound = last
    return bound


def merge(sides: Sequence[Sequence[Level]], depth: int, bound: Decimal | None, *, bids: bool) -> list[Merged]:
    """The best ``depth`` consolidated levels of ``sides`` (one per book, each best first), none
    with a key past ``bound``. The heap pops equal keys in book order, so parts come in book order."""
    heap = [(side[0].key, i, 0) for i, side in enumerate(sides) if side]
    heapq.heapify(heap)
    merged: list[Merged] = []
    while heap and len(merged) < depth:
        key = heap[0][0]
        if bound is not None and key > bound:
            break
        parts: list[tuple[int, str]] = []
        total = _ZERO
        while heap and heap[0][0] == key:
            _, i, at = heap[0]
            side = sides[i]
            level = side[at]
            parts.append((i, level.qty))
            total = EXACT.add(total, level.amount)
            if at + 1 < len(side):
                heapq.heapreplace(heap, (side[at + 1].key, i, at + 1))
            else:
                heapq.heappop(heap)
        merged.append(Merged(EXACT.minus(key) if bids else key, total, tuple(parts)))
    return merged


def crossed(best_bid: Merged | None, best_ask: Merged | None) -> bool:
    """True when the best bid is above the best ask (on another venue: books of one venue never
    cross while they are synced)."""
    return best_bid is not None and best_ask is not None and best_bid.price > best_ask.price


def text(number: Decimal) -> str:
    """A price or a sum in canonical form: plain decimal, no exponent, no trailing zeros."""
    return format(EXACT.normalize(number), "f")


_ZERO = Decimal(0)
_NOTHING = Decimal("-Infinity")
"""A bound no key is within: every finite key is greater."""
