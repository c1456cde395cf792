"""The venue's request-weight budget, shared by every ingest node behind one egress IP.

Theory of operation
-------------------
Binance counts request weight per IP in fixed one-minute windows and bans IPs that keep going after
a 429. Nodes behind one NAT share that limit, so the count lives in the store: one Lua script, on
the store's clock, grants as many requests of a given weight as still fit in the current window
(``take``) or says how long to wait. Grants stop ``margin_ms`` before a window ends, so a request
granted in one window reaches the venue inside that window, not in the next one (where it would be
counted twice: once by the venue, once against the next window's grants).

Each response's ``X-MBX-USED-WEIGHT-1M`` raises the shared count to what the venue says (it may know
of requests we did not make), unless the window the request was sent in has closed by the time the
answer arrives; and a 429/418 ``Retry-After`` closes the budget for every node until it passes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from book_store.connect import StoreClient
from book_store.schema import weight_key_prefix

log = logging.getLogger(__name__)

WINDOW_MS: Final = 60_000
DEFAULT_MARGIN_MS: Final = 250

# KEYS[1] = key prefix (with a hash tag, so the per-minute and ban keys share its slot)
# ARGV = weight, count, limit, margin_ms.
# Returns {granted, wait_ms}: granted requests were charged; wait_ms is how long until more can be.
_TAKE = """
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ban = tonumber(redis.call('GET', KEYS[1] .. ':ban') or '0')
if ban > now_ms then return {0, ban - now_ms} end
local minute = math.floor(now_ms / 60000)
local left_ms = (minute + 1) * 60000 - now_ms
if left_ms <= tonumber(ARGV[4]) then return {0, left_ms + 1} end
local key = KEYS[1] .. ':' .. minute
local weight = tonumber(ARGV[1])
local used = tonumber(redis.call('GET', key) or '0')
local fits = math.floor((tonumber(ARGV[3]) - used) / weight)
local granted = math.min(tonumber(ARGV[2]), fits)
if granted <= 0 then return {0, left_ms + 1} end
redis.call('INCRBY', key, granted * weight)
redis.call('PEXPIRE', key, 120000)
return {granted, 0}
"""

# ARGV = used weight the venue reported, the window (minute) the request was sent in. Raises that
# window's count to it, if it is still the current window: an answer that arrives after its window
# closed tells nothing about the new one (its count would block the whole new window).
_OBSERVE = """
local t = redis.call('TIME')
local minute = math.floor(tonumber(t[1]) / 60)
if tonumber(ARGV[2]) ~= minute then return 0 end
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
    """One venue weight pool's budget for one egress IP (see the module docstring)."""

    def __init__(
        self,
        client: StoreClient,
        *,
        egress_id: str,
        venue_host: str,
        limit: int,
        margin_ms: int = DEFAULT_MARGIN_MS,
    ) -> None:
        self._prefix = weight_key_prefix(egress_id, venue_host)
        self._limit = limit
        self._margin_ms = margin_ms
        self._take = client.register_script(_TAKE)
        self._observe = client.register_script(_OBSERVE)
        self._ban = client.register_script(_BAN)
        self._reported = (0, -1)  # the venue's last used weight, and the window it counts in

    @property
    def limit(self) -> int:
        return self._limit

    def venue_used(self, now_s: float) -> int:
        """The weight the venue last said was used in the current window (0: nothing said yet)."""
        used, window = self._reported
        return used if window == int(now_s * 1000) // WINDOW_MS else 0

    async def take(self, weight: int, count: int, *, share: float = 1.0) -> tuple[int, float]:
        """Charge up to ``count`` requests of ``weight`` now: ``(granted, seconds to wait for more)``.

        The seconds are 0 when all were granted; otherwise they reach the next window (or the end of
        a venue ban), when asking again can succeed. With ``share`` < 1 only that part of the
        window's limit may be used (background work leaves the rest to syncs).
        """
        limit = int(self._limit * share)
        granted, wait_ms = await self._take(keys=[self._prefix], args=[weight, count, limit, self._margin_ms])
        return int(granted), int(wait_ms) / 1000

    async def acquire(self, weight: int) -> None:
        """Wait until one request of ``weight`` fits, and charge it."""
        while True:
            granted, wait_s = await self.take(weight, 1)
            if granted:
                return
            await asyncio.sleep(wait_s)

    async def observe(self, used_weight: int, sent_at_s: float) -> None:
        """Align the shared count with the venue's ``X-MBX-USED-WEIGHT-1M`` of a request sent at
        ``sent_at_s`` (wall clock); ignored when that request's window has closed since."""
        window = int(sent_at_s * 1000) // WINDOW_MS
        reported, reported_window = self._reported
        if window > reported_window or (window == reported_window and used_weight > reported):
            self._reported = (used_weight, window)
        await self._observe(keys=[self._prefix], args=[used_weight, window])

    async def close_for(self, seconds: float) -> None:
        """The venue said 429/418 with ``Retry-After``: nobody sends until it passes."""
        log.warning("venue asked to back off for %.1f s; pausing every request to it", seconds)
        await self._ban(keys=[self._prefix], args=[seconds])
