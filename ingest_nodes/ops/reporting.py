"""Where a node's counters go: one JSON document per node, one per replica, in the store.

    ladder:node-stats:<node_id>          string (JSON), expires when the node stops reporting
    ladder:{binance.com|BTCUSDT}:stats   hash  replica id -> that replica's counters (JSON)

The node document sums everything (resyncs by reason, connection restarts, weight spent, 429/418
answers, replica mismatches); the per-replica entries say what happened to each book. A replica's
entry is rewritten only when its counters changed, so a node with thousands of quiet books writes
almost nothing. Operators, benchmarks and tests read these; telemetry reads the same objects.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Final

import orjson
from redis.exceptions import RedisError

from book_store.connect import StoreClient
from book_store.schema import BookKey, node_stats_key
from ingest_nodes.ops.stats import ReplicaStats
from ladder_process.clock import now_ms
from ladder_process.sweeps import in_slices

log = logging.getLogger(__name__)

REPLICA_STATS_TTL_S: Final = 86_400
EXPIRY_REFRESH_S: Final = REPLICA_STATS_TTL_S / 4
"""A replica entry's expiry is pushed out again this long after the last time, not with every write."""


_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def process_usage() -> dict[str, float | int | None]:
    """The node process's CPU seconds so far and resident memory now (None where unknown).

    An operator's console turns two readings of ``cpu_s`` into a CPU share; memory is read from
    ``/proc`` (Linux), as no portable call gives the current, not the peak, resident size.
    """
    rss: int | None = None
    try:
        with open("/proc/self/statm", "rb") as statm:
            rss = int(statm.read().split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        rss = None
    return {"cpu_s": round(time.process_time(), 3), "rss_bytes": rss, "at_ms": now_ms()}


class StatsReporter:
    """Writes the node's document and the changed replica entries in one pipeline."""

    def __init__(self, client: StoreClient, node_id: str, *, ttl_s: int) -> None:
        self._client = client
        self._node_id = node_id
        self._ttl_s = ttl_s
        self._written: dict[tuple[BookKey, int], bytes] = {}
        self._expires_set: dict[BookKey, float] = {}
        """When each book's entry last had its expiry pushed out (monotonic seconds): pushing it
        out with every write was half the commands of a node reporting thousands of books."""

    async def report(
        self, node: Mapping[str, object], replicas: Mapping[tuple[BookKey, int], ReplicaStats]
    ) -> None:
        pipe = self._client.pipeline(transaction=False)
        pipe.set(node_stats_key(self._node_id), orjson.dumps(node), ex=self._ttl_s)
        changed: dict[tuple[BookKey, int], bytes] = {}
        now = time.monotonic()
        expires_set = self._expires_set
        async for part in in_slices(list(replicas.items())):  # thousands of encodings: in turns
            for key, stats in part:
                encoded = b"%b" % orjson.dumps(stats.to_json())  # an exact-size copy, not orjson's 4 KiB
                if self._written.get(key) != encoded:
                    changed[key] = encoded
                    book, replica = key
                    pipe.hset(book.stats, str(replica), encoded)
                    if now - expires_set.get(book, -EXPIRY_REFRESH_S) >= EXPIRY_REFRESH_S:
                        pipe.expire(book.stats, REPLICA_STATS_TTL_S)
                        expires_set[book] = now
        try:
            await pipe.execute()
        except (RedisError, OSError) as exc:
            log.warning("counters not written (%s)", type(exc).__name__)
            for key in changed:
                expires_set.pop(key[0], None)  # not written: push the expiry out with the next write
            return
        gone = self._written.keys() - replicas.keys()
        for key in gone:
            del self._written[key]
            expires_set.pop(key[0], None)  # a replica of the book kept here only costs an early EXPIRE
        self._written.update(changed)
