"""The cluster's recent history: one sample every few seconds, kept in a capped list in the store.

The operator console charts the last hour of what the processes report anyway (the ingest nodes'
counters documents: publish latency, replicas by status, resyncs by reason). One sampler (the
control plane, ``control_plane.history``) appends a :class:`Sample` every ``SAMPLE_S``; the list
is trimmed to ``KEEP`` samples, so the store holds a fixed, small amount (two hours, ~0.5 MB)
however long the cluster runs. The book store keeps nothing on disk: after a restart the history
starts again, as every other figure there does.

    ladder:history     list  newest first: one JSON sample each
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import cast

import orjson

from book_store.connect import StoreClient
from book_store.schema import KEY_PREFIX

HISTORY_KEY = f"{KEY_PREFIX}:history"
SAMPLE_S = 10.0
KEEP = 720
"""Two hours of samples (the console shows the last hour)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """The cluster at one instant, from every live node's last counters document.

    ``latency_ms``: per exchange, frame received -> published over about the last minute, each
    percentile the highest any node reported (a node's are bucket upper bounds), and ``count`` the
    snapshots summed. ``replicas``: replicas by published status, summed over nodes. ``resyncs``:
    resyncs by reason since the previous sample, summed over nodes. ``node_resyncs``: each node's
    running totals by reason, what the next sample counts the rise from (not shown to anyone).
    """

    at: int
    latency_ms: dict[str, dict[str, float | int | None]] = field(default_factory=dict)
    replicas: dict[str, int] = field(default_factory=dict)
    resyncs: dict[str, int] = field(default_factory=dict)
    node_resyncs: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    def shown(self) -> dict[str, object]:
        """What the console is given of the sample."""
        return {
            "at": self.at,
            "latency_ms": self.latency_ms,
            "replicas": self.replicas,
            "resyncs": self.resyncs,
        }


class History:
    """Appends samples to, and reads them from, the store's capped list."""

    def __init__(self, client: StoreClient, *, keep: int = KEEP) -> None:
        self._client = client
        self._keep = keep

    async def append(self, sample: Sample) -> None:
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.lpush(HISTORY_KEY, orjson.dumps(sample.to_json()))
            pipe.ltrim(HISTORY_KEY, 0, self._keep - 1)
            await pipe.execute()

    async def latest(self) -> Sample | None:
        raw = cast(bytes | None, await self._client.lindex(HISTORY_KEY, 0))
        return None if raw is None else Sample(**orjson.loads(raw))

    async def recent(self, count: int) -> list[Sample]:
        """The last ``count`` samples (at most ``KEEP``), oldest first."""
        raw = cast(list[bytes], await self._client.lrange(HISTORY_KEY, 0, min(count, self._keep) - 1))
        return [Sample(**orjson.loads(item)) for item in reversed(raw)]
