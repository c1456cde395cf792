"""Request counting per tenant: a dict increment per request, one pipeline per second.

Counts accumulate in memory and :meth:`UsageCounter.flush`, which the process calls every second,
adds them to the store (INCRBY on a per-minute key that expires after two hours, and on the
tenant's running total), so usage costs no round trip on the read path. A failed flush keeps its
counts for the next one. A count lands in the minute of the flush that writes it, so minute
totals are exact to within one flush interval.
"""

from __future__ import annotations

from redis.exceptions import RedisError

from book_store.connect import StoreClient
from ladder_process.clock import now_ms
from ladder_process.errors import StoreUnavailableError

MINUTE_MS = 60_000
KEEP_MINUTES = 60
_MINUTE_TTL_S = 2 * 3600


def total_key(tenant_id: str) -> str:
    return f"ladder:usage:{{{tenant_id}}}:total"


def minute_key(tenant_id: str, minute_ms: int) -> str:
    return f"ladder:usage:{{{tenant_id}}}:m:{minute_ms}"


class UsageCounter:
    """Counts requests per tenant locally and flushes them to the store."""

    def __init__(self, client: StoreClient) -> None:
        self._client = client
        self._counts: dict[str, int] = {}

    def count(self, tenant_id: str) -> None:
        self._counts[tenant_id] = self._counts.get(tenant_id, 0) + 1

    async def flush(self) -> None:
        """Add the counts gathered so far to the store."""
        if not self._counts:
            return
        batch, self._counts = self._counts, {}
        minute = now_ms() // MINUTE_MS * MINUTE_MS
        pipe = self._client.pipeline(transaction=False)
        for tenant_id, n in batch.items():
            pipe.incrby(minute_key(tenant_id, minute), n)
            pipe.expire(minute_key(tenant_id, minute), _MINUTE_TTL_S)
            pipe.incrby(total_key(tenant_id), n)
        try:
            await pipe.execute()
        except (RedisError, OSError) as exc:
            for tenant_id, n in batch.items():
                self._counts[tenant_id] = self._counts.get(tenant_id, 0) + n
            raise StoreUnavailableError("usage store unreachable") from exc

    async def report(self, tenant_id: str, now_ms: int) -> dict[str, object]:
        """``{"tenant_id", "requests_total", "minutes": [...]}`` for the last 60 minutes, oldest first."""
        current = now_ms // MINUTE_MS * MINUTE_MS
        minutes = [current - MINUTE_MS * i for i in range(KEEP_MINUTES - 1, -1, -1)]
        try:
            values = await self._client.mget(
                [total_key(tenant_id), *(minute_key(tenant_id, m) for m in minutes)]
            )
        except (RedisError, OSError) as exc:
            raise StoreUnavailableError("usage store unreachable") from exc
        pending = self._counts.get(tenant_id, 0)
        total = int(values[0] or 0) + pending
        counts = [int(v or 0) for v in values[1:]]
        counts[-1] += pending
        return {
            "tenant_id": tenant_id,
            "requests_total": total,
            "minutes": [{"minute": m, "requests": n} for m, n in zip(minutes, counts, strict=True) if n],
        }
