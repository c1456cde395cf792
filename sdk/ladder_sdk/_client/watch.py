"""The rules of `watch()`: many books on one multiplexed stream (`ladder.v2`), as a state object with no I/O.

Theory of operation: a client loop (sync or async) opens `/v1/stream` offering the subprotocol
`ladder.v2`, sends `opening()` (the subscribe messages), hands every message it receives to
`accept`, sends what `accept` returns, and yields the book `accept` names. When the connection
ends it asks the `StreamSession` it holds (`stream`) how long to wait, and reconnects.

- Each book is a `LocalBook`: a diff is applied only if it continues the book, and the book is
  checked against the checksum after every message. One that does not continue or fails its
  checksum is counted (`mismatches`, `breaks`) and subscribed again, alone, for a fresh snapshot.
- Resume: on a reconnect, each book that was in sync is subscribed with `resume` (its replica and
  update id): the server sends only the diffs it missed if it still holds them, else a snapshot.
- A refused book (unknown market, not subscribed, a limit) raises its error: watching it cannot
  succeed, and the caller asked for it by name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from websockets.typing import Subprotocol

from .._wire.errors import LadderError, OutOfSync, status_error_class
from .local_book import LocalBook
from .stream import StreamSession

WATCH_PROTOCOL = "ladder.v2"
WATCH_OPTIONS: dict[str, Any] = {"subprotocols": [Subprotocol(WATCH_PROTOCOL)], "max_size": None}
"""What a `watch()` connection adds to a stream's: its subprotocol, and no limit on a message."""
BOOKS_PER_MESSAGE = 100
_STATUS_OF_CODE = {
    "invalid_request": 400,
    "unknown_exchange": 404,
    "unknown_market": 404,
    "invalid_book_id": 400,
    "forbidden": 403,
    "limit_exceeded": 422,
    "not_found": 404,
    "store_unavailable": 503,
}


def watch_url(base_url: str) -> str:
    scheme, rest = base_url.split("://", 1)
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/v1/stream"


class WatchSession:
    """The state of one `watch()` call across all of its connections."""

    def __init__(
        self, stream: StreamSession, books: Iterable[tuple[str, str]], depth: int | None, mode: str
    ) -> None:
        self.stream = stream
        self.depth = depth
        self.mode = mode
        self.books = {(exchange, market): LocalBook(exchange, market) for exchange, market in books}
        if not self.books:
            raise ValueError("watch() needs at least one book")
        self.mismatches = 0
        """Checksum mismatches seen (each book resubscribed for a fresh snapshot)."""
        self.breaks = 0
        """Diffs that did not continue their book (each resubscribed too)."""
        self.resumed = 0
        self._next_id = 0

    def opening(self) -> list[str]:
        """The subscribe messages of a new connection (resuming every book that was in sync)."""
        books = list(self.books.values())
        return [
            self._subscribe(books[i : i + BOOKS_PER_MESSAGE], resume=True)
            for i in range(0, len(books), BOOKS_PER_MESSAGE)
        ]

    def accept(self, raw: str | bytes) -> tuple[LocalBook | None, list[str]]:
        """The book a message updated (None if none), and the messages to send back."""
        message = json.loads(raw)
        kind = message.get("type")
        if kind == "ack":
            self._acknowledged(message)
            return None, []
        if kind == "error":
            raise self._error(message.get("error") or {})
        book = self.books.get((message.get("exchange"), message.get("market")))
        if book is None:
            return None, []  # a book this session let go of
        if kind == "unsubscribed":
            raise self._error(message.get("error") or {})
        try:
            book.apply(message)
        except OutOfSync as out:
            if out.checksum:
                self.mismatches += 1
                book.mismatches += 1
            else:
                self.breaks += 1
            return book, [self._subscribe([book], resume=False)]
        self.stream.failures = 0
        return book, []

    def _acknowledged(self, message: dict[str, Any]) -> None:
        for result in message.get("results") or []:
            if result.get("result") == "refused":
                raise self._error(result.get("error") or {})
            if result.get("result") == "resumed":
                self.resumed += 1

    def _subscribe(self, books: list[LocalBook], *, resume: bool) -> str:
        self._next_id += 1
        wanted = []
        for book in books:
            item: dict[str, Any] = {"exchange": book.exchange, "market": book.market, "mode": self.mode}
            if self.depth is not None:
                item["depth"] = self.depth
            if resume and self.mode == "diff" and book.synced:
                item["resume"] = {"replica": book.replica, "update_id": book.update_id}
            wanted.append(item)
        return json.dumps({"op": "subscribe", "id": self._next_id, "books": wanted})

    @staticmethod
    def _error(error: dict[str, Any]) -> LadderError:
        code = str(error.get("code") or "internal")
        status = _STATUS_OF_CODE.get(code, 500)
        return status_error_class(status, code)(status, code, str(error.get("message") or code))
