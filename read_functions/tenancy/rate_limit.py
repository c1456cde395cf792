"""Per-tenant rate limits: one token bucket per tenant in the store, leased to workers in batches.

Theory of operation
-------------------
The bucket (``rate`` tokens per second, ``burst`` at most) lives in the store and is only ever
changed by :data:`TAKE_SCRIPT`, which refills it from the store's own clock (``TIME``, so workers'
clocks do not matter) and hands out up to N tokens atomically. A worker does not ask per request:
it takes a *lease* of N tokens and spends them locally, and asks for the next lease in the
background once half of the current one is spent. Across the fleet the limit is therefore exact
to within one lease per worker, and a request pays a round trip only when its worker has no
tokens left. Leased tokens not spent within ``lease_ttl_s`` are dropped, so a worker cannot hoard
a burst and spend it later.

When the bucket is empty the script says how long until the next token; the worker refuses
locally until then, so an over-limit client costs no store traffic either.

While the bucket cannot be reached (its shard failing over, which takes seconds, or the store
down), a worker does not refuse the tenant's every request: it spends a bucket of its own at the
tenant's rate and burst, so that for those seconds a fleet of N workers allows the tenant at most
N times its rate, where refusing would have stopped its reads everywhere for want of a counter.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import NamedTuple

from redis.exceptions import RedisError

from book_store.connect import StoreClient
from control_plane.errors import RateLimitedError
from control_plane.models import Tenant

# KEYS[1] bucket hash. ARGV: rate (tokens/s), burst, wanted.
# Returns {granted, tokens left (floor), ms until one token, ms until full}.
TAKE_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local wanted = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
if now > ts then
  tokens = math.min(burst, tokens + (now - ts) * rate / 1000)
  ts = now
end
local granted = math.min(wanted, math.floor(tokens))
tokens = tokens - granted
redis.call('HSET', KEYS[1], 'tokens', string.format('%.6f', tokens), 'ts', ts)
local full_ms = math.ceil((burst - tokens) * 1000 / rate)
redis.call('PEXPIRE', KEYS[1], full_ms + 1000)
local next_ms = 0
if tokens < 1 then next_ms = math.ceil((1 - tokens) * 1000 / rate) end
return {granted, math.floor(tokens), next_ms, full_ms}
"""


def bucket_key(tenant_id: str) -> str:
    return f"ladder:ratelimit:{{{tenant_id}}}"


class Quota(NamedTuple):
    """What a response's ``RateLimit-*`` headers say (a tuple: one is made per request)."""

    limit: int
    remaining: int
    reset_s: int

    def add_headers(self, headers: dict[str, str]) -> None:
        headers["RateLimit-Limit"] = str(self.limit)
        headers["RateLimit-Remaining"] = str(self.remaining)
        headers["RateLimit-Reset"] = str(self.reset_s)


class TenantRateLimitedError(RateLimitedError):
    """A tenant over its limit; carries the quota for the 429's headers."""

    def __init__(self, tenant: Tenant, wait_s: float) -> None:
        super().__init__(
            f"rate limit of {tenant.rate_limit_rps:g} requests/s (burst {tenant.burst}) exceeded", wait_s
        )
        self.quota = Quota(tenant.burst, 0, max(1, math.ceil(wait_s)))


class _Lease:
    """One worker's tokens of one tenant, and what the store said at the last lease."""

    __slots__ = ("blocked_until", "expires_at", "local_at", "local_tokens", "refill", "reset_s", "size",
                 "store_left", "tokens")  # fmt: skip

    def __init__(self, burst: int, size: int) -> None:
        self.size = size  # tokens per lease
        self.tokens = 0
        self.expires_at = 0.0
        self.blocked_until = 0.0
        self.refill: asyncio.Task[None] | None = None
        self.store_left = burst
        self.reset_s = 0
        self.local_tokens = float(
            burst
        )  # the bucket of its own a worker spends while the store's is out of reach
        self.local_at: float | None = None


class RateLimiter:
    """Spends leased tokens; :meth:`take` raises TenantRateLimitedError over the limit."""

    def __init__(
        self, client: StoreClient, *, lease_window_s: float = 0.05, lease_ttl_s: float = 1.0
    ) -> None:
        self._script = client.register_script(TAKE_SCRIPT)
        self._lease_window_s = lease_window_s
        self._lease_ttl_s = lease_ttl_s
        self._leases: dict[str, _Lease] = {}

    def lease_size(self, tenant: Tenant) -> int:
        """Tokens per lease: ``lease_window_s`` worth of the rate, within 1..burst."""
        return max(1, min(tenant.burst, math.ceil(tenant.rate_limit_rps * self._lease_window_s)))

    async def take(self, tenant: Tenant) -> Quota:
        """Spend one token of ``tenant``; the quota is for the response's headers."""
        lease = self._leases.get(tenant.id)
        if lease is None:
            lease = self._leases[tenant.id] = _Lease(tenant.burst, self.lease_size(tenant))
        # More requests may wait for a lease than it brings tokens: those left over ask for the
        # next one, until the bucket is empty (a refill that grants nothing blocks the lease).
        while True:
            now = time.monotonic()
            if lease.tokens > 0 and now < lease.expires_at:
                lease.tokens -= 1
                if lease.refill is None and lease.tokens * 2 < lease.size:
                    self._start_refill(tenant, lease)
                return Quota(tenant.burst, lease.store_left + lease.tokens, lease.reset_s)
            if now < lease.blocked_until:
                raise TenantRateLimitedError(tenant, lease.blocked_until - now)
            await asyncio.shield(lease.refill or self._start_refill(tenant, lease))

    def _start_refill(self, tenant: Tenant, lease: _Lease) -> asyncio.Task[None]:
        task = lease.refill = asyncio.get_running_loop().create_task(self._refill(tenant, lease))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved: no warning
        return task

    async def _refill(self, tenant: Tenant, lease: _Lease) -> None:
        try:
            lease.size = self.lease_size(tenant)  # the tenant's limits may have changed
            args = [repr(float(tenant.rate_limit_rps)), str(tenant.burst), str(lease.size)]
            try:
                reply = await self._script(keys=[bucket_key(tenant.id)], args=args)
            except (RedisError, OSError):
                reply = _grant_locally(tenant, lease)  # see the module's doc
            granted, left, next_ms, full_ms = (int(x) for x in reply)
            now = time.monotonic()
            if now >= lease.expires_at:
                lease.tokens = 0
            lease.tokens += granted
            lease.expires_at = now + self._lease_ttl_s
            lease.blocked_until = now + next_ms / 1000 if granted == 0 else 0.0
            lease.store_left = left
            lease.reset_s = math.ceil(full_ms / 1000)
        finally:
            lease.refill = None


def _grant_locally(tenant: Tenant, lease: _Lease) -> tuple[int, int, int, int]:
    """What :data:`TAKE_SCRIPT` answers, from the worker's own bucket of the tenant's rate and burst."""
    now = time.monotonic()
    rate, burst = tenant.rate_limit_rps, tenant.burst
    if lease.local_at is not None:
        lease.local_tokens = min(float(burst), lease.local_tokens + (now - lease.local_at) * rate)
    lease.local_at = now
    granted = min(lease.size, math.floor(lease.local_tokens))
    lease.local_tokens -= granted
    tokens = lease.local_tokens
    next_ms = 0 if tokens >= 1 else math.ceil((1 - tokens) * 1000 / rate)
    return granted, math.floor(tokens), next_ms, math.ceil((burst - tokens) * 1000 / rate)
