"""The key schema shared by writers and readers.

Every key of one book carries the hash tag ``{exchange|market}``, so on Redis Cluster (or ElastiCache
in cluster mode) all of a book's replicas, and its change channel, live in one slot: a reader gets
every replica of a book with one HGETALL, and a writer's pipeline for one book never crosses shards.
Every multi-key operation stays inside one tag: a book's, the catalogs' (``{catalog}``: all
exchanges' catalogs, their digests and index in one slot, replaced in one transaction), one
weight pool's, one tenant's (``read_functions.tenancy``: rate-limit bucket, usage counters).
Single keys (``ladder:unplaced``, node counters, venue credential leases) go wherever they hash.

    ladder:{binance.com|BTCUSDT}:snap     hash  replica number -> encoded head snapshot (book_store.codec),
                                                "<replica number>:<n>" -> the n-th delta since it
                                                (book_store.delta, book_store.writer),
                                                "<replica number>d" -> the replica's deep snapshot
    ladder:{binance.com|BTCUSDT}:chg      channel: one message per published snapshot
    ladder:{binance.com|BTCUSDT}:stats    hash  replica number -> its counters (JSON, from its node)
    ladder:{catalog}:binance.com          hash  market -> market info JSON (book_store.catalog)
    ladder:{catalog}:digest:binance.com   string  digest of that hash's content
    ladder:{catalog}:exchanges            set  the exchanges that have a catalog
    ladder:{catalog}:state                hash  exchange -> how its catalog's last fetch went (JSON)
    ladder:unplaced                       hash  "exchange|market" -> why replicas are unplaced
    ladder:node-stats:<node id>           string  an ingest node's counters (JSON), while it reports
    ladder:nodes-alive                    hash  node id -> its latest heartbeat (book_store.liveness),
                                          and a channel carrying every heartbeat
    ladder:{weight|<egress>|<pool>}:<minute>  string  weight used in that minute (ingest_nodes.venues.budget)
    ladder:{weight|<egress>|<pool>}:ban   string  until when the venue closed the pool (ms)
"""

from __future__ import annotations

from typing import NamedTuple

from ladder_process.errors import LadderError

KEY_PREFIX = "ladder"

# Characters that would break the hash tag or the key grammar. Venue symbols never contain them;
# anything else (including non-ASCII symbols) is a valid part of a key.
_FORBIDDEN = frozenset("{}|\r\n\x00 ")


class InvalidBookIdError(LadderError, ValueError):
    """An exchange or market contains characters that cannot be part of a key."""

    code = "invalid_request"


class _BookNames(NamedTuple):
    exchange: str
    market: str


class BookKey(_BookNames):
    """A book, ``(exchange, market)``, and the store keys that belong to it.

    A named tuple, so that hashing and comparing run in C: the read path looks books up by key on
    every request, and the control plane sorts thousands of them into deterministic plans.
    """

    __slots__ = ()

    def __new__(cls, exchange: str, market: str) -> BookKey:
        for part in (exchange, market):
            if not part or len(part) > 64 or _FORBIDDEN.intersection(part):
                raise InvalidBookIdError(f"not a valid exchange or market name: {part[:64]!r}")
        return super().__new__(cls, exchange, market)

    def to_json(self) -> dict[str, str]:
        return {"exchange": self.exchange, "market": self.market}

    @property
    def tag(self) -> str:
        return f"{{{self.exchange}|{self.market}}}"

    @property
    def snapshots(self) -> str:
        """The hash holding one encoded snapshot per replica."""
        return f"{KEY_PREFIX}:{self.tag}:snap"

    @property
    def stats(self) -> str:
        """The hash of each replica's counters (resyncs, refreshes, audits), written by its node."""
        return f"{KEY_PREFIX}:{self.tag}:stats"

    @property
    def channel(self) -> str:
        """The channel a writer publishes each new snapshot on."""
        return f"{KEY_PREFIX}:{self.tag}:chg"

    @classmethod
    def from_channel(cls, channel: str) -> BookKey:
        """Inverse of :attr:`channel` (readers learn which book a message is for)."""
        inner = channel[channel.index("{") + 1 : channel.rindex("}")]
        exchange, _, market = inner.partition("|")
        return cls(exchange, market)


ReplicaId = tuple[BookKey, int]
"""One replica of a book: the book, and the replica's number among its replicas."""


def snapshot_field(replica: int, *, deep: bool = False) -> str:
    """The field of ``BookKey.snapshots`` that holds a replica's head (or deep) snapshot."""
    return f"{replica}d" if deep else str(replica)


def delta_field(replica: int, seq: int) -> str:
    """The field of ``BookKey.snapshots`` that holds a replica's ``seq``-th delta since its head
    snapshot was stored (``seq`` from 1)."""
    return f"{replica}:{seq}"


def catalog_key(exchange: str) -> str:
    """The hash of an exchange's markets (market -> info JSON)."""
    return f"{KEY_PREFIX}:{{catalog}}:{exchange}"


def catalog_digest_key(exchange: str) -> str:
    """A digest of the exchange's catalog, replaced with it: readers re-read only what changed."""
    return f"{KEY_PREFIX}:{{catalog}}:digest:{exchange}"


CATALOG_INDEX = f"{KEY_PREFIX}:{{catalog}}:exchanges"
"""The set of exchanges that have a catalog."""

CATALOG_STATE = f"{KEY_PREFIX}:{{catalog}}:state"
"""Per exchange an ingest node serves, how fetching its catalog last went (book_store.catalog)."""


def node_stats_key(node_id: str) -> str:
    """An ingest node's counters document (written by the node, read by operators)."""
    return f"{KEY_PREFIX}:node-stats:{node_id}"


NODES_ALIVE = f"{KEY_PREFIX}:nodes-alive"
"""The hash of each ingest node's latest heartbeat, and the channel every heartbeat is published on
(one name for both: keys and channels are apart in Redis). A quiet replica is heard through its
node's heartbeat, so it need not be republished to stay servable (book_store.liveness)."""


def weight_key_prefix(egress_id: str, pool: str) -> str:
    """The weight budget keys of one venue pool behind one egress IP (one hash tag: one slot)."""
    return f"{KEY_PREFIX}:{{weight|{egress_id}|{pool}}}"


UNPLACED_KEY = f"{KEY_PREFIX}:unplaced"
"""Books whose wanted replicas the scheduler could not place, and why (book_store.unplaced)."""
