"""Replica cross-checks: short digests of each replica's top levels at ids every replica passes.

Theory of operation
-------------------
Replicas of one book on different nodes apply the same venue events, so after each event they
must hold the same book. A synced replica records a checkpoint ``(update_id, bid levels, ask
levels, digest)`` whenever an applied event ends at a *selected* id: a fixed hash of the id picks
about one id in ``every``, the same ids on every node, so replicas record at equal ids without
talking to each other. The digest covers the top ``levels`` trusted levels of each side with the
numbers normalised (``"4.00"`` and ``"4.0"`` agree); the record says how many levels it covers, and
replicas that trust different depths (snapshots taken at different times) are not compared.

Records go to a capped list per replica in the store::

    ladder:{binance.com|BTCUSDT}:ckpt:<replica>    list, newest first, ``keep`` entries, expiring

Each node's :class:`ReplicaChecker` reads, every few seconds, the newest ``COMPARED`` entries of
the lists of the books it keeps and compares its replica with every other one at equal ids. A
replica that is not in the strict majority at a mismatching id (with two replicas: either of them)
is reported (logged, counted in its ``mismatches``) by its own node and, with ``resync``,
invalidated, so a wrong book stops being served; a majority replica's node only logs that another
replica disagrees.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from hashlib import blake2b
from typing import Final, Protocol

import orjson
from redis.exceptions import RedisError

from book_store.connect import StoreClient
from book_store.schema import BookKey
from ingest_nodes.core.book import OrderBook
from ingest_nodes.core.engine import BookEngine
from ingest_nodes.ops.stats import ReplicaStats
from ladder_process.sweeps import in_slices

log = logging.getLogger(__name__)

KEEP: Final = 32
COMPARED: Final = 8
"""The newest checkpoints of each replica a round reads: a round comes every few seconds, and a
checkpoint about every ``every`` events, so the newest few hold every id two current replicas can
share that earlier rounds have not compared (all ``KEEP`` cost a round four times the decoding)."""
SLICE: Final = 50
"""Replicas a round reads and compares per event-loop turn."""
TTL_MS: Final = 600_000
_MIX: Final = 0x9E3779B97F4A7C15
_MASK64: Final = (1 << 64) - 1


def checkpoint_key(book: BookKey, replica: int) -> str:
    return f"ladder:{book.tag}:ckpt:{replica}"


def selected(update_id: int, every: int) -> bool:
    """Whether ``update_id`` is a checkpoint id: about one id in ``every``, the same on every node."""
    return (((update_id * _MIX) & _MASK64) >> 32) % every == 0


def _normal(encoded: bytes) -> bytes:
    price, quantity = orjson.loads(encoded)
    return f"{Decimal(price).normalize()}/{Decimal(quantity).normalize()};".encode()


def digest_of(book: OrderBook, bids: int, asks: int) -> str:
    """A short digest of the best ``bids`` bids and ``asks`` asks, numbers normalised."""
    digest = blake2b(digest_size=8)
    for level in book.top_bids(bids):
        digest.update(_normal(level))
    digest.update(b"|")
    for level in book.top_asks(asks):
        digest.update(_normal(level))
    return digest.hexdigest()


def same_top(a: OrderBook, b: OrderBook, levels: int) -> bool:
    """Whether two books agree on the top levels both of them trust (at most ``levels`` a side)."""
    (a_bids, a_asks), (b_bids, b_asks) = a.trusted_depth(), b.trusted_depth()
    bids, asks = min(levels, a_bids, b_bids), min(levels, a_asks, b_asks)
    return digest_of(a, bids, asks) == digest_of(b, bids, asks)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    update_id: int
    bids: int
    asks: int
    digest: str

    def encode(self) -> bytes:
        return f"{self.update_id}:{self.bids}:{self.asks}:{self.digest}".encode()

    @classmethod
    def decode(cls, raw: bytes) -> Checkpoint:
        update_id, bids, asks, digest = raw.decode().split(":")
        return cls(int(update_id), int(bids), int(asks), digest)

    @classmethod
    def of(cls, engine: BookEngine, update_id: int, levels: int) -> Checkpoint:
        trusted_bids, trusted_asks = engine.book.trusted_depth()
        bids, asks = min(levels, trusted_bids), min(levels, trusted_asks)
        return cls(update_id, bids, asks, digest_of(engine.book, bids, asks))


class CheckpointLog:
    """Records checkpoints of synced replicas; written once per loop turn, best effort."""

    def __init__(self, client: StoreClient, *, every: int, levels: int) -> None:
        self.every = every
        self.levels = levels
        self.recorded = 0
        self._client = client
        self._pending: list[tuple[str, bytes]] = []
        self._flusher: asyncio.Task[None] | None = None

    def offer(self, book: BookKey, replica: int, engine: BookEngine) -> None:
        """The replica applied something: record a checkpoint if its id is a selected one."""
        update_id = engine.update_id
        if update_id is None or not selected(update_id, self.every):
            return
        checkpoint = Checkpoint.of(engine, update_id, self.levels)
        self._pending.append((checkpoint_key(book, replica), checkpoint.encode()))
        self.recorded += 1
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush())

    async def drain(self) -> None:
        if self._flusher is not None:
            await asyncio.gather(self._flusher, return_exceptions=True)

    async def _flush(self) -> None:
        await asyncio.sleep(0)
        while self._pending:
            batch, self._pending = self._pending, []
            pipe = self._client.pipeline(transaction=False)
            for key, record in batch:
                pipe.lpush(key, record)
                pipe.ltrim(key, 0, KEEP - 1)
                pipe.pexpire(key, TTL_MS)
            try:
                await pipe.execute()
            except (RedisError, OSError) as exc:
                log.warning("checkpoints not written (%s); %d dropped", type(exc).__name__, len(batch))


class Checked(Protocol):
    """A replica as the checker sees it."""

    book: BookKey
    replica: int
    stats: ReplicaStats

    def invalidate(self, reason: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Mismatch:
    book: BookKey
    replica: int
    update_id: int
    agreeing: int
    """Replicas (this one included) with this replica's digest at ``update_id``."""
    compared: int
    """Replicas with a comparable checkpoint at ``update_id`` (this one included)."""


class ReplicaChecker:
    """Compares this node's replicas with the other replicas of their books (module docstring)."""

    def __init__(self, client: StoreClient, *, resync: bool, batch: int = 500) -> None:
        """``resync``: invalidate a replica outside the majority; ``batch``: books per round."""
        self.mismatches = 0
        self.compared = 0
        """Checkpoint ids compared with at least one other replica."""
        self._client = client
        self._resync = resync
        self._batch = batch
        self._compared_to: dict[tuple[BookKey, int], int] = {}
        self._offset = 0

    async def check(self, replicas: Sequence[Checked]) -> list[Mismatch]:
        """One round over up to ``batch`` replicas (rotating through all of them), read and compared
        ``SLICE`` books at a time: a round of 500 books in one go held the node's loop for tens of
        milliseconds, which every venue event behind it waited for."""
        chosen = self._rotate(replicas)
        found: list[Mismatch] = []
        async for part in in_slices(chosen, SLICE):
            records = await self._read(part)
            for replica in part:
                mismatch = self._compare(replica, records)
                if mismatch is not None:
                    found.append(mismatch)
        live = {(r.book, r.replica) for r in replicas}
        self._compared_to = {key: uid for key, uid in self._compared_to.items() if key in live}
        return found

    def _rotate(self, replicas: Sequence[Checked]) -> list[Checked]:
        if len(replicas) <= self._batch:
            return list(replicas)
        start = self._offset % len(replicas)
        self._offset = start + self._batch
        chosen = list(replicas[start : start + self._batch])
        return chosen + list(replicas[: self._batch - len(chosen)])

    async def _read(self, replicas: Iterable[Checked]) -> dict[BookKey, dict[int, dict[int, Checkpoint]]]:
        """Every replica's checkpoints of the given replicas' books: book -> replica -> id -> record."""
        books = sorted({r.book for r in replicas}, key=lambda b: (b.exchange, b.market))
        async with self._client.pipeline(transaction=False) as pipe:
            for book in books:
                pipe.hkeys(book.snapshots)
            replica_ids: list[list[bytes]] = await pipe.execute()
        # A replica's head is the field named by its number alone (see book_store.schema).
        pairs = zip(books, replica_ids, strict=True)
        wanted = [(book, int(rid)) for book, ids in pairs for rid in ids if rid.isdigit()]
        async with self._client.pipeline(transaction=False) as pipe:
            for book, rid in wanted:
                pipe.lrange(checkpoint_key(book, rid), 0, COMPARED - 1)
            lists: list[list[bytes]] = await pipe.execute()
        records: dict[BookKey, dict[int, dict[int, Checkpoint]]] = {}
        for (book, rid), raw in zip(wanted, lists, strict=True):
            decoded = (Checkpoint.decode(item) for item in raw)
            records.setdefault(book, {})[rid] = {c.update_id: c for c in decoded}
        return records

    def _compare(
        self, replica: Checked, records: dict[BookKey, dict[int, dict[int, Checkpoint]]]
    ) -> Mismatch | None:
        per_replica = records.get(replica.book, {})
        mine = per_replica.get(replica.replica, {})
        others = [recs for rid, recs in per_replica.items() if rid != replica.replica]
        key = (replica.book, replica.replica)
        floor = self._compared_to.get(key, -1)
        for update_id in sorted(uid for uid in mine if uid > floor):
            own = mine[update_id]
            found = (recs.get(update_id) for recs in others)
            peers = [p for p in found if p is not None and (p.bids, p.asks) == (own.bids, own.asks)]
            if not peers:
                continue
            self._compared_to[key] = update_id
            self.compared += 1
            agreeing = 1 + sum(peer.digest == own.digest for peer in peers)
            compared = len(peers) + 1
            if agreeing == compared:
                continue
            book = replica.book
            if agreeing * 2 > compared:  # the majority: the other replica's node reports it
                log.warning("%s/%s: a replica disagrees with r%d at update %d",
                            book.exchange, book.market, replica.replica, update_id)  # fmt: skip
                continue
            self._report(replica, Mismatch(book, replica.replica, update_id, agreeing, compared))
            # Its later records came from the same book: never judge the next book by them.
            self._compared_to[key] = max(mine)
            return Mismatch(book, replica.replica, update_id, agreeing, compared)
        return None

    def _report(self, replica: Checked, mismatch: Mismatch) -> None:
        """Log and count a mismatch of a replica outside the majority, and resync it if so set."""
        self.mismatches += 1
        replica.stats.mismatches += 1
        book = replica.book
        log.error(
            "%s/%s r%d disagrees with other replicas at update %d (%d of %d agree with it)%s",
            book.exchange, book.market, mismatch.replica, mismatch.update_id, mismatch.agreeing,
            mismatch.compared, "; resyncing it" if self._resync else "",
        )  # fmt: skip
        if self._resync:
            replica.invalidate("replica_mismatch")
