"""Request and error counting per tenant: a dict increment per request, one pipeline per second.

Counts accumulate in memory and :meth:`UsageCounter.flush`, which the process calls every second,
adds them to the store (INCRBY on a per-minute key that expires after two hours, and on the
tenant's running total), so usage costs no round trip on the read path. A failed flush keeps its
counts for the next one. A count lands in the minute of the flush that writes it, so minute
totals are exact to within one flush interval. Errors (answers of 400 and up, rate limiting
included) are counted the same way, per minute only.
"""

from __future__ import annotations

import asyncio

from redis.asyncio.cluster import RedisCluster
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


def error_key(tenant_id: str, minute_ms: int) -> str:
    return f"ladder:usage:{{{tenant_id}}}:e:{minute_ms}"


class UsageCounter:
    """Counts requests and errors per tenant locally and flushes them to the store."""

    def __init__(self, client: StoreClient) -> None:
        self._client = client
        self._counts: dict[str, int] = {}
        self._errors: dict[str, int] = {}

    def count(self, tenant_id: str) -> None:
        self._counts[tenant_id] = self._counts.get(tenant_id, 0) + 1

    def error(self, tenant_id: str) -> None:
        """The tenant's request was answered with an error (400 and up)."""
        self._errors[tenant_id] = self._errors.get(tenant_id, 0) + 1

    async def flush(self) -> None:
        """Add the counts gathered so far to the store."""
        if not self._counts and not self._errors:
            return
        batch, self._counts = self._counts, {}
        errors, self._errors = self._errors, {}
        minute = now_ms() // MINUTE_MS * MINUTE_MS
        pipe = self._client.pipeline(transaction=False)
        for tenant_id, n in batch.items():
            pipe.incrby(minute_key(tenant_id, minute), n)
            pipe.expire(minute_key(tenant_id, minute), _MINUTE_TTL_S)
            pipe.incrby(total_key(tenant_id), n)
        for tenant_id, n in errors.items():
            pipe.incrby(error_key(tenant_id, minute), n)
            pipe.expire(error_key(tenant_id, minute), _MINUTE_TTL_S)
        try:
            await pipe.execute()
        except (RedisError, OSError) as exc:
            for kept, counted in ((self._counts, batch), (self._errors, errors)):
                for tenant_id, n in counted.items():
                    kept[tenant_id] = kept.get(tenant_id, 0) + n
            raise StoreUnavailableError("usage store unreachable") from exc

    async def report(self, tenant_id: str, now_ms: int) -> dict[str, object]:
        """``{"tenant_id", "requests_total", "minutes": [...]}`` for the last 60 minutes, oldest first."""
        return (await self.reports([tenant_id], now_ms))[0]

    async def reports(self, tenant_ids: list[str], now_ms: int) -> list[dict[str, object]]:
        """:meth:`report` of each tenant in one round trip (on a cluster, one call a tenant, all at
        once): each minute with requests or errors as ``{"minute", "requests", "errors"}``."""
        current = now_ms // MINUTE_MS * MINUTE_MS
        minutes = [current - MINUTE_MS * i for i in range(KEEP_MINUTES - 1, -1, -1)]
        keys = [
            [total_key(t), *(minute_key(t, m) for m in minutes), *(error_key(t, m) for m in minutes)]
            for t in tenant_ids
        ]  # one MGET per tenant: its keys share its hash tag
        try:
            if isinstance(self._client, RedisCluster):  # a cluster pipeline refuses MGET: concurrent calls
                answers = await asyncio.gather(*(self._client.mget(k) for k in keys))
            else:
                pipe = self._client.pipeline(transaction=False)
                for k in keys:
                    pipe.mget(k)
                answers = await pipe.execute() if keys else []
        except (RedisError, OSError) as exc:
            raise StoreUnavailableError("usage store unreachable") from exc
        return [self._report(t, minutes, values) for t, values in zip(tenant_ids, answers, strict=True)]

    def _report(
        self, tenant_id: str, minutes: list[int], values: list[bytes | str | None]
    ) -> dict[str, object]:
        pending, pending_errors = self._counts.get(tenant_id, 0), self._errors.get(tenant_id, 0)
        counts = [int(v or 0) for v in values[1 : 1 + len(minutes)]]
        errors = [int(v or 0) for v in values[1 + len(minutes) :]]
        counts[-1] += pending
        errors[-1] += pending_errors
        return {
            "tenant_id": tenant_id,
            "requests_total": int(values[0] or 0) + pending,
            "minutes": [
                {"minute": m, "requests": n, "errors": e}
                for m, n, e in zip(minutes, counts, errors, strict=True)
                if n or e
            ],
        }
