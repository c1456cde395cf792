"""Why a book's replicas are not placed: the scheduler writes it, readers answer with it.

A book nobody keeps (its venue credentials are all in use, no node has room) would otherwise look like
one that is starting; its status and its 503 say why instead. The control loop replaces the whole
set after each plan that changes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from redis.exceptions import RedisError

from book_store.connect import StoreClient
from book_store.schema import UNPLACED_KEY, BookKey
from ladder_process.errors import StoreUnavailableError


def _field(book: BookKey) -> str:
    return f"{book.exchange}|{book.market}"


class UnplacedBooks:
    def __init__(self, client: StoreClient) -> None:
        self._client = client

    async def replace(self, reasons: Mapping[BookKey, str]) -> None:
        """Make ``reasons`` the whole set, atomically."""
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(UNPLACED_KEY)
                if reasons:
                    pipe.hset(UNPLACED_KEY, mapping={_field(b): r for b, r in reasons.items()})
                await pipe.execute()
        except RedisError as exc:
            raise StoreUnavailableError("could not record unplaced books") from exc

    async def reasons(self, books: Sequence[BookKey]) -> dict[BookKey, str]:
        """The reason of each of ``books`` that is unplaced."""
        if not books:
            return {}
        try:
            found = await self._client.hmget(UNPLACED_KEY, [_field(b) for b in books])
        except RedisError as exc:
            raise StoreUnavailableError("could not read unplaced books") from exc
        return {
            book: value.decode() if isinstance(value, bytes) else str(value)
            for book, value in zip(books, found, strict=True)
            if value is not None
        }
