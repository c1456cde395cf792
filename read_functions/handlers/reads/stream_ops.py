"""What a client of the multiplexed stream may send, read as a hostile peer's text, and the answers.

A message is one JSON object, ``{"op": "subscribe" | "unsubscribe", "id": ..., "books": [...]}``,
of at most :data:`MAX_OP_BYTES` (the frame reader closes with 1009 past that, before reading it). A
message that is not such an object is answered with an ``error`` message and costs nothing more;
each book in a valid one is checked on its own and answered in the message's ``ack``, in order
(a bad book does not spoil the others). Nothing the client sent is echoed but its ``id`` (an
integer or a short string) and book names that passed :class:`~book_store.schema.BookKey`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import orjson

from book_store.schema import BookKey
from control_plane.errors import InvalidRequestError, shown
from ladder_process.errors import LadderError, StoreError
from ladder_process.redaction import redact

MAX_OP_BYTES = 16 * 1024
"""Bytes of one message a client sends (100 books with long names fit)."""
MAX_BOOKS_PER_OP = 100
DIFF_DEPTHS = (1, 5, 10, 20, 50, 100)
"""Depths a book may be followed at in diff mode: each depth in use is one diff per book change
(:mod:`read_functions.books.diffs.diff_feed`), so they are few, and within the 100 levels every head holds."""
DEFAULT_DIFF_DEPTH = 100
_MAX_ID = 64


class Mode(enum.Enum):
    SNAPSHOT = "snapshot"
    DIFF = "diff"


@dataclass(frozen=True, slots=True)
class Wanted:
    """One book of a ``subscribe``, checked (``error`` set when it is refused as asked)."""

    book: BookKey | None
    depth: int
    mode: Mode
    resume: tuple[int, int] | None  # (replica, update_id)
    error: LadderError | None = None
    names: tuple[Any, Any] = (None, None)  # what the client called it, for a refusal


@dataclass(frozen=True, slots=True)
class Op:
    op: str
    id: int | str | None
    books: list[Wanted]


def read_op(text: bytes, max_depth: int, default_depth: int) -> Op:
    """The message ``text`` (InvalidRequestError, whose message says what is wrong, if it is not one)."""
    try:
        message = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise InvalidRequestError("a message must be one JSON object") from None
    if not isinstance(message, dict):
        raise InvalidRequestError("a message must be one JSON object")
    ident = message.get("id")
    if not (ident is None or (isinstance(ident, int) and not isinstance(ident, bool) and abs(ident) < 2**53)
            or (isinstance(ident, str) and len(ident) <= _MAX_ID)):  # fmt: skip
        raise InvalidRequestError(f"id must be an integer or a string of at most {_MAX_ID} characters")
    op = message.get("op")
    if op not in ("subscribe", "unsubscribe"):
        raise _Refused(ident, f"op must be subscribe or unsubscribe, not {shown(op)[:80]}")
    books = message.get("books")
    if not isinstance(books, list) or not 1 <= len(books) <= MAX_BOOKS_PER_OP:
        raise _Refused(ident, f"books must be a list of 1 to {MAX_BOOKS_PER_OP} books")
    return Op(op, ident, [_wanted(each, max_depth, default_depth) for each in books])


class _Refused(InvalidRequestError):
    """A message with a valid id: the error answer names it."""

    def __init__(self, ident: int | str | None, message: str) -> None:
        super().__init__(message)
        self.ident = ident


def refused_id(exc: InvalidRequestError) -> int | str | None:
    return exc.ident if isinstance(exc, _Refused) else None


def _wanted(raw: Any, max_depth: int, default_depth: int) -> Wanted:
    if not isinstance(raw, dict):
        return Wanted(
            None, 0, Mode.SNAPSHOT, None, InvalidRequestError("a book must be an object"), (None, None)
        )
    names = (raw.get("exchange"), raw.get("market"))
    try:
        exchange, market = names
        if not isinstance(exchange, str) or not isinstance(market, str):
            raise InvalidRequestError("a book needs an exchange and a market (strings)")
        book = BookKey(exchange, market)
        mode = raw.get("mode", "snapshot")
        if mode not in ("snapshot", "diff"):
            raise InvalidRequestError(f"mode must be snapshot or diff, not {shown(mode)[:40]}")
        chosen = Mode(mode)
        depth = raw.get("depth")
        if chosen is Mode.DIFF:
            depth = DEFAULT_DIFF_DEPTH if depth is None else depth
            if depth not in DIFF_DEPTHS or isinstance(depth, bool):
                raise InvalidRequestError(f"depth in diff mode is one of {', '.join(map(str, DIFF_DEPTHS))}")
        else:
            depth = default_depth if depth is None else depth
            if not isinstance(depth, int) or isinstance(depth, bool) or not 1 <= depth <= max_depth:
                raise InvalidRequestError(f"depth must be an integer from 1 to {max_depth}")
        resume = _resume(raw.get("resume"), chosen)
    except LadderError as exc:
        return Wanted(None, 0, Mode.SNAPSHOT, None, exc, names)
    return Wanted(book, depth, chosen, resume, None, names)


def _resume(raw: Any, mode: Mode) -> tuple[int, int] | None:
    if raw is None:
        return None
    if mode is not Mode.DIFF:
        raise InvalidRequestError("resume is for diff mode")
    if not isinstance(raw, dict):
        raise InvalidRequestError("resume must be {replica, update_id}")
    replica, update_id = raw.get("replica"), raw.get("update_id")
    if not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63 for v in (replica, update_id)
    ):
        raise InvalidRequestError("resume must be {replica, update_id}, integers")
    return replica, update_id  # type: ignore[return-value]  # checked just above


def error_item(exc: BaseException) -> dict[str, str]:
    """``{"code", "message"}`` as a read's error body says it (a store fault is never detailed)."""
    if isinstance(exc, StoreError):
        return {"code": exc.code, "message": "the store is unavailable; retry shortly"}
    if isinstance(exc, LadderError):
        return {"code": exc.code, "message": str(exc)}
    return {"code": "internal", "message": "internal error"}


def named(wanted: Wanted) -> dict[str, Any]:
    """The book a result is about, as the client may be shown it (a key pasted as a name masked)."""
    return {"exchange": _name(wanted.names[0]), "market": _name(wanted.names[1])}


def _name(value: Any) -> str | None:
    return redact(value) if isinstance(value, str) and len(value) <= 64 else None


def ack(op: Op, results: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"type": "ack", "op": op.op, "id": op.id, "results": results})


def error_message(ident: int | str | None, exc: BaseException) -> bytes:
    return orjson.dumps({"type": "error", "id": ident, "error": error_item(exc)})
