"""The read side: every replica of a book in one round trip, and the choice between them.

A replica's head is stored as its last whole snapshot and the deltas published since
(:mod:`book_store.writer`): a reader applies them, in order, and gets the head as it was published
last. A delta that does not continue the head (which the writer never stores: a bug, or a store
edited by hand) leaves the replica out, never half applied.

A replica may be served while it is ``synced`` and heard from within ``max_silence_ms``: through
its own ``publish_time``, or through its node's heartbeat when that vouches for it
(:mod:`book_store.liveness`). A reader that fetches snapshots reads the heartbeats in the same
round trip when asked to (``heartbeats=``), so a quiet book fetched cold is as servable as one
followed on the change feed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple, cast

import orjson
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from book_store.codec import BookStatus, Snapshot
from book_store.connect import StoreClient
from book_store.delta import Delta, apply_delta, follows, read_delta
from book_store.liveness import Heartbeats
from book_store.schema import NODES_ALIVE, BookKey
from ladder_process.errors import StoreError, StoreUnavailableError

log = logging.getLogger(__name__)


@contextmanager
def store_errors() -> Iterator[None]:
    """Translate redis-py's errors into Ladder's, at this one boundary."""
    try:
        yield
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise StoreUnavailableError("book store unreachable") from exc
    except RedisError as exc:
        raise StoreError(f"book store call failed: {exc}") from exc


class StoredBook(NamedTuple):
    """Every stored snapshot of one book: each replica's head and, for a book published deeper than
    its head, each replica's deep snapshot (see :mod:`book_store.codec`)."""

    heads: dict[int, Snapshot]
    deeps: dict[int, Snapshot]


def decode_stored(raw: Mapping[bytes, bytes]) -> StoredBook:
    """A book's stored hash (``HGETALL``) as each replica's head (its deltas applied) and deep snapshot."""
    heads: dict[int, Snapshot] = {}
    deeps: dict[int, Snapshot] = {}
    deltas: dict[int, list[tuple[int, bytes]]] = {}
    for field, value in raw.items():
        of, _, seq = field.partition(b":")
        if seq:
            deltas.setdefault(int(of), []).append((int(seq), value))
            continue
        snapshot = Snapshot(value)
        (deeps if snapshot.deep else heads)[snapshot.replica] = snapshot
    for replica, stored in deltas.items():
        head = heads.get(replica)
        if head is None:
            continue  # deltas of a replica whose head was just removed
        try:
            for _, value in sorted(stored):
                delta = read_delta(value)
                verdict = follows(head, delta)
                if verdict is False:
                    continue  # stored before the head was (a base written, its deltas not yet deleted)
                if verdict is None:
                    raise StoreError(f"update id {delta.update_id} after {delta.prev_update_id}")
                head = apply_delta(head, delta)
            if isinstance(head, Delta):
                head.parts()  # the levels, worked out now: a reader loading cold serves them at once
        except StoreError as exc:
            log.error("replica %d: its stored deltas do not continue its head (%s); left out", replica, exc)
            del heads[replica]
        else:
            heads[replica] = head
    return StoredBook(heads, deeps)


class BookReader:
    """Reads stored snapshots. The connection pool belongs to the caller."""

    def __init__(self, client: StoreClient) -> None:
        self._client = client

    async def replicas(self, book: BookKey) -> dict[int, Snapshot]:
        """Every replica's head snapshot of ``book`` (empty when nobody keeps it)."""
        return (await self.stored(book)).heads

    async def many(
        self, books: Sequence[BookKey], heartbeats: Heartbeats | None = None
    ) -> dict[BookKey, dict[int, Snapshot]]:
        """Every replica's head snapshot of many books in one pipelined round trip (and the nodes'
        heartbeats into ``heartbeats``, if given)."""
        stored = await self.stored_many(books, heartbeats)
        return {book: found.heads for book, found in stored.items()}

    async def stored(self, book: BookKey, heartbeats: Heartbeats | None = None) -> StoredBook:
        """Every stored snapshot of ``book``, heads and deep ones (see :meth:`stored_many`)."""
        return (await self.stored_many([book], heartbeats))[book]

    async def counters(self, book: BookKey) -> dict[int, dict[str, Any]]:
        """Each replica's counters as its node last reported them (resyncs, refreshes, audits)."""
        with store_errors():
            raw = cast(dict[bytes, bytes], await self._client.hgetall(book.stats))
        return {int(replica): orjson.loads(value) for replica, value in raw.items()}

    async def counters_many(self, books: Sequence[BookKey]) -> dict[BookKey, dict[int, dict[str, Any]]]:
        """:meth:`counters` of many books in one pipelined round trip."""
        results = await self._hgetall_many([book.stats for book in books])
        return {
            book: {int(replica): orjson.loads(value) for replica, value in raw.items()}
            for book, raw in zip(books, results, strict=True)
        }

    async def stored_many(
        self, books: Sequence[BookKey], heartbeats: Heartbeats | None = None
    ) -> dict[BookKey, StoredBook]:
        """Every stored snapshot of many books in one pipelined round trip; with ``heartbeats``,
        the nodes' heartbeats are read in the same round trip and learnt into it."""
        keys = [book.snapshots for book in books]
        if heartbeats is not None:
            keys.append(NODES_ALIVE)
        results = await self._hgetall_many(keys)
        if heartbeats is not None:
            heartbeats.learn_stored(results.pop().values())
        return {book: decode_stored(raw) for book, raw in zip(books, results, strict=True)}

    async def _hgetall_many(self, keys: Sequence[str]) -> list[dict[bytes, bytes]]:
        if not keys:
            return []
        with store_errors():
            async with self._client.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.hgetall(key)
                results: list[dict[bytes, bytes]] = await pipe.execute()
        return results


def heard(snapshot: Snapshot, heartbeats: Heartbeats | None) -> int:
    """When the replica of ``snapshot`` was last known to be kept (see the module docstring)."""
    if heartbeats is None:
        return snapshot.publish_time
    return heartbeats.heard(snapshot.publish_time, snapshot.node)


def choose_replica(
    snapshots: Iterable[Snapshot], now_ms: int, max_silence_ms: int, heartbeats: Heartbeats | None = None
) -> Snapshot | None:
    """The replica to serve: synced, heard from within ``max_silence_ms``, newest update id.

    A replica not heard from for longer than ``max_silence_ms`` is not trusted even if its last
    word was ``synced``: its node either republishes it or vouches for it with a heartbeat, so
    silence means trouble. Ties on ``update_id`` go to the most recent publish.
    """
    best: Snapshot | None = None
    for snap in snapshots:
        if snap.status is not BookStatus.SYNCED or now_ms - heard(snap, heartbeats) > max_silence_ms:
            continue
        if best is None or (snap.update_id, snap.publish_time) > (best.update_id, best.publish_time):
            best = snap
    return best
