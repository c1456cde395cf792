"""Samples the cluster into its history (``book_store.history``) for the console's charts.

Every ``SAMPLE_S`` one control process (the one that takes the round's lock in the store: several
may run) reads every live ingest node's counters document and appends one sample: publish latency
per exchange, replicas by status, and resyncs by reason since the sample before. Resyncs are
counted as the rise of each node's running total since the last sample in the store (which keeps
those totals), so the count is right whichever process took the sample before; a node that
restarted counts from zero, and one that is new contributes nothing until its second sample.
Nothing here is on a hot path: one round trip for the heartbeats, one for the documents, one for
the previous sample, one to append, every ten seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any, cast

import orjson
from redis.exceptions import RedisError

from book_store.connect import StoreClient, get_many
from book_store.history import SAMPLE_S, History, Sample
from book_store.liveness import decode_heartbeat
from book_store.schema import KEY_PREFIX, NODES_ALIVE, node_stats_key
from ladder_process.clock import Clock, now_ms
from ladder_process.errors import StoreError

log = logging.getLogger(__name__)

LOCK_KEY = f"{KEY_PREFIX}:history-lock"
LIVE_WITHIN_MS = 30_000
"""A node whose last heartbeat is older than this is left out of a sample."""
PERCENTILES = ("p50", "p90", "p99")


def summarize(documents: Mapping[str, Mapping[str, Any]], previous: Sample | None, at: int) -> Sample:
    """One sample from the nodes' counters documents (by node id) and the sample before (pure)."""
    latency: dict[str, dict[str, float | int | None]] = {}
    replicas: Counter[str] = Counter()
    resyncs: Counter[str] = Counter()
    totals: dict[str, dict[str, int]] = {}
    for node_id, document in sorted(documents.items()):
        for exchange, figures in (document.get("publish_latency_ms") or {}).items():
            entry = latency.setdefault(exchange, {"count": 0, **dict.fromkeys(PERCENTILES)})
            entry["count"] = int(entry["count"] or 0) + int(figures.get("count") or 0)
            for name in PERCENTILES:
                value, seen = figures.get(name), entry[name]
                if value is not None and (seen is None or value > seen):
                    entry[name] = value
        replicas.update(document.get("statuses") or {})
        now_total = {str(k): int(v) for k, v in (document.get("resyncs_total") or {}).items()}
        totals[node_id] = now_total
        before = previous.node_resyncs.get(node_id) if previous is not None else None
        if before is None:
            continue  # a node's first sample: no rise to count yet
        restarted = any(now_total.get(reason, 0) < n for reason, n in before.items())
        for reason, n in now_total.items():
            rise = n if restarted else n - before.get(reason, 0)
            if rise > 0:
                resyncs[reason] += rise
    return Sample(at, latency, dict(replicas), dict(resyncs), totals)


class HistorySampler:
    """Appends a :class:`Sample` to the history every ``interval_s``, from one process at a time."""

    def __init__(self, client: StoreClient, *, interval_s: float = SAMPLE_S, clock: Clock = now_ms) -> None:
        self._client = client
        self._history = History(client)
        self._interval_s = interval_s
        self._clock = clock

    async def run(self) -> None:
        """Sample until cancelled; a store that does not answer skips a round (said once)."""
        failing = False
        while True:
            try:
                await self.sample()
                failing = False
            except (RedisError, OSError, StoreError) as exc:
                if not failing:
                    log.warning("cluster history not sampled: store unreachable (%s)", type(exc).__name__)
                failing = True
            await asyncio.sleep(self._interval_s)

    async def sample(self) -> Sample | None:
        """Take and append one sample, unless another process took this round's."""
        lock_ms = max(1, int(self._interval_s * 900))
        if not await self._client.set(LOCK_KEY, b"1", nx=True, px=lock_ms):
            return None
        at = self._clock()
        previous = await self._history.latest()
        taken = summarize(await self._documents(at), previous, at)
        await self._history.append(taken)
        return taken

    async def _documents(self, at: int) -> dict[str, dict[str, Any]]:
        """The last counters document of every node heard from within ``LIVE_WITHIN_MS``."""
        stored = cast(dict[bytes, bytes], await self._client.hgetall(NODES_ALIVE))
        live = []
        for raw in stored.values():
            with contextlib.suppress(StoreError):  # a heartbeat of another version: not ours to judge
                node_id, heartbeat = decode_heartbeat(raw)
                if at - heartbeat.time <= LIVE_WITHIN_MS:
                    live.append(node_id)
        if not live:
            return {}
        raw_documents = await get_many(self._client, [node_stats_key(n) for n in live])
        return {n: orjson.loads(d) for n, d in zip(live, raw_documents, strict=True) if d}
