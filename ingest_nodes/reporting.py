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
from collections.abc import Mapping
from typing import Final

import orjson
import redis.asyncio as redis
from redis.exceptions import RedisError

from book_store.keys import BookKey
from ingest_nodes.stats import ReplicaStats

log = logging.getLogger(__name__)

NODE_STATS_PREFIX: Final = "ladder:node-stats:"
REPLICA_STATS_TTL_S: Final = 86_400


def node_stats_key(node_id: str) -> str:
    return NODE_STATS_PREFIX + node_id


class StatsReporter:
    """Writes the node's document and the changed replica entries in one pipeline."""

    def __init__(self, client: redis.Redis, node_id: str, *, ttl_s: int) -> None:
        self._client = client
        self._node_id = node_id
        self._ttl_s = ttl_s
        self._written: dict[tuple[BookKey, int], bytes] = {}

    async def report(
        self, node: Mapping[str, object], replicas: Mapping[tuple[BookKey, int], ReplicaStats]
    ) -> None:
        pipe = self._client.pipeline(transaction=False)
        pipe.set(node_stats_key(self._node_id), orjson.dumps(node), ex=self._ttl_s)
        changed: dict[tuple[BookKey, int], bytes] = {}
        for key, stats in replicas.items():
            encoded = b"%b" % orjson.dumps(stats.to_json())  # kept: an exact-size copy, not orjson's 4 KiB
            if self._written.get(key) != encoded:
                changed[key] = encoded
                book, replica = key
                pipe.hset(book.stats, str(replica), encoded)
                pipe.expire(book.stats, REPLICA_STATS_TTL_S)
        try:
            await pipe.execute()
        except (RedisError, OSError) as exc:
            log.warning("counters not written (%s)", type(exc).__name__)
            return
        gone = self._written.keys() - replicas.keys()
        for key in gone:
            del self._written[key]
        self._written.update(changed)
