"""The venue's request-weight budget, shared by every ingest node behind one egress IP.

Binance limits request weight per IP per minute and bans IPs that keep going after a 429. Nodes
behind one NAT share that limit, so the count lives in the store: one Lua script, on the store's
clock, takes weight from the current minute's window or says how long to wait. Each response's
``X-MBX-USED-WEIGHT-1M`` raises the shared count to what the venue says (it may know of requests we
did not make), and a 429/418 ``Retry-After`` closes the budget for everyone until it passes.
"""

from __future__ import annotations

import asyncio
import logging

import redis.asyncio as redis

log = logging.getLogger(__name__)

# KEYS[1] = key prefix (with a hash tag, so the per-minute and ban keys share its slot)
# ARGV = weight, limit.  Returns {1, used} when granted, {0, wait_ms} when not.
_TAKE = """
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ban = tonumber(redis.call('GET', KEYS[1] .. ':ban') or '0')
if ban > now_ms then return {0, ban - now_ms} end
local minute = math.floor(now_ms / 60000)
local key = KEYS[1] .. ':' .. minute
local weight = tonumber(ARGV[1])
local used = redis.call('INCRBY', key, weight)
if used == weight then redis.call('PEXPIRE', key, 120000) end
if used > tonumber(ARGV[2]) then
  redis.call('DECRBY', key, weight)
  return {0, (minute + 1) * 60000 - now_ms}
end
return {1, used}
"""

# ARGV = used weight the venue reported. Raises the current window's count to it.
_OBSERVE = """
local t = redis.call('TIME')
local minute = math.floor(tonumber(t[1]) / 60)
local key = KEYS[1] .. ':' .. minute
local used = tonumber(redis.call('GET', key) or '0')
if tonumber(ARGV[1]) > used then redis.call('SET', key, ARGV[1], 'PX', 120000) end
return 0
"""

# ARGV = seconds. Closes the budget for that long (extends, never shortens, a ban).
_BAN = """
local t = redis.call('TIME')
local pause_ms = math.floor(tonumber(ARGV[1]) * 1000)
local until_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + pause_ms
local ban = tonumber(redis.call('GET', KEYS[1] .. ':ban') or '0')
if until_ms > ban then
  redis.call('SET', KEYS[1] .. ':ban', until_ms, 'PX', pause_ms + 1000)
end
return 0
"""


class WeightBudget:
    """One venue host's weight budget for one egress IP."""

    def __init__(self, client: redis.Redis, *, egress_id: str, venue_host: str, limit: int) -> None:
        self._prefix = f"ladder:{{weight|{egress_id}|{venue_host}}}"
        self._limit = limit
        self._take = client.register_script(_TAKE)
        self._observe = client.register_script(_OBSERVE)
        self._ban = client.register_script(_BAN)

    @property
    def limit(self) -> int:
        return self._limit

    async def acquire(self, weight: int) -> None:
        """Wait until ``weight`` can be spent without crossing the limit, then spend it."""
        while True:
            granted, value = await self._take(keys=[self._prefix], args=[weight, self._limit])
            if granted:
                return
            await asyncio.sleep(int(value) / 1000)

    async def observe(self, used_weight: int) -> None:
        """Align the shared count with the venue's ``X-MBX-USED-WEIGHT-1M``."""
        await self._observe(keys=[self._prefix], args=[used_weight])

    async def close_for(self, seconds: float) -> None:
        """The venue said 429/418 with ``Retry-After``: nobody sends until it passes."""
        log.warning("venue asked to back off for %.1f s; pausing every snapshot request", seconds)
        await self._ban(keys=[self._prefix], args=[seconds])
