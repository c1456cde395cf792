"""Per-tenant stream slots: a tenant holds at most ``max_streams`` open streams, across every worker.

Theory of operation
-------------------
A tenant's open streams are the members of one sorted set in the store (``ladder:streams:{<tenant>}``,
under the tenant's hash tag, beside its rate-limit bucket), each scored with the time it lapses.
Opening a stream runs :data:`TAKE_SCRIPT`, on the store's clock: drop the lapsed members, then add
this one unless the tenant holds ``max_streams`` already, atomically, so workers racing for the last
slot cannot both win. A stream that ends gives its slot back at once (the slots of one loop turn
in one round trip; one the store did not take, at the next housekeeping round, a second later),
and every worker renews the slots it holds every
``ttl_s / 3`` (one script per tenant). A worker that dies leaves its slots to lapse within
``ttl_s``; a book store that restarted empty gets them back at the next renewal.

A stream costs its worker the memory of one connection (a few KiB, measured in the commit that
added this; a compressed one no more: see ``read_functions/server/websocket/handshake.py``), so
the limit bounds what one key can pin, whatever the process's file limit.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from dataclasses import dataclass

from redis.exceptions import RedisError

from book_store.connect import StoreClient
from control_plane.errors import RateLimitedError
from control_plane.models import Tenant
from ladder_process.errors import StoreUnavailableError

# KEYS[1] the tenant's set. ARGV: member, max streams, ttl ms. Returns {taken (0/1), open streams}.
TAKE_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
if held >= tonumber(ARGV[2]) then
  return {0, held}
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return {1, held + 1}
"""

# KEYS[1] the tenant's set. ARGV: ttl ms, then the members to renew (re-added if the set was lost).
RENEW_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ttl)
return #ARGV - 1
"""

REFUSED_RETRY_S = 5.0
"""What a refused stream's ``Retry-After`` says: a slot frees when one of the tenant's streams ends."""


def slots_key(tenant_id: str) -> str:
    return f"ladder:streams:{{{tenant_id}}}"


class TooManyStreamsError(RateLimitedError):
    """The tenant holds ``max_streams`` open streams already (429, with ``Retry-After``)."""

    code = "too_many_streams"


@dataclass(frozen=True, slots=True)
class StreamSlot:
    """One open stream's place in its tenant's count."""

    tenant_id: str
    member: str


class StreamSlots:
    """Takes, renews and gives back this worker's stream slots (see the module's doc)."""

    def __init__(self, client: StoreClient, *, ttl_s: float = 60.0) -> None:
        self._take = client.register_script(TAKE_SCRIPT)
        self._renew = client.register_script(RENEW_SCRIPT)
        self._client = client
        self._ttl_ms = int(ttl_s * 1000)
        self._renew_every_s = ttl_s / 3
        self._renewed_at = time.monotonic()
        self._prefix = f"{os.urandom(6).hex()}:"
        self._ids = itertools.count(1)
        self._held: dict[str, set[str]] = {}  # tenant id -> members held by this worker
        self._released: dict[str, set[str]] = {}  # tenant id -> members to remove in the store
        self._giving_back: asyncio.Task[None] | None = None

    async def take(self, tenant: Tenant) -> StreamSlot:
        """A slot of ``tenant``'s, or TooManyStreamsError when it holds all of them."""
        member = f"{self._prefix}{next(self._ids)}"
        args = [member, str(tenant.max_streams), str(self._ttl_ms)]
        try:
            taken, held = (int(x) for x in await self._take(keys=[slots_key(tenant.id)], args=args))
        except (RedisError, OSError) as exc:
            raise StoreUnavailableError("the stream count is unreachable") from exc
        if not taken:
            raise TooManyStreamsError(
                f"the tenant holds {held} open streams, its max_streams ({tenant.max_streams}); "
                "one must end before another opens",
                REFUSED_RETRY_S,
            )
        self._held.setdefault(tenant.id, set()).add(member)
        return StreamSlot(tenant.id, member)

    def release(self, slot: StreamSlot) -> None:
        """Give ``slot`` back: in the store at once (those of one loop turn in one round trip), or,
        when the store does not answer, at the next :meth:`flush`."""
        held = self._held.get(slot.tenant_id)
        if held is None or slot.member not in held:
            return
        held.discard(slot.member)
        if not held:
            del self._held[slot.tenant_id]
        self._released.setdefault(slot.tenant_id, set()).add(slot.member)
        if self._giving_back is None:
            self._giving_back = asyncio.get_running_loop().create_task(self._give_back())

    async def _give_back(self) -> None:
        await asyncio.sleep(0)  # every slot released in this loop turn goes in the same round trip
        try:
            await self._remove_released()
        except StoreUnavailableError:
            pass  # kept for the next flush
        finally:
            self._giving_back = None

    async def open_streams(self, tenant_id: str) -> int:
        """The tenant's open streams now, on every worker."""
        try:
            _, held = await self._take(keys=[slots_key(tenant_id)], args=["", "0", str(self._ttl_ms)])
        except (RedisError, OSError) as exc:
            raise StoreUnavailableError("the stream count is unreachable") from exc
        return int(held)

    @property
    def held(self) -> int:
        """Slots this worker holds (its open streams)."""
        return sum(len(members) for members in self._held.values())

    async def flush(self) -> None:
        """Remove the released slots the store did not take yet, and renew the held ones when due
        (housekeeping, every second)."""
        await self._remove_released()
        if time.monotonic() - self._renewed_at >= self._renew_every_s:
            self._renewed_at = time.monotonic()
            try:
                for tenant_id, members in list(self._held.items()):
                    await self._renew(keys=[slots_key(tenant_id)], args=[str(self._ttl_ms), *members])
            except (RedisError, OSError) as exc:
                raise StoreUnavailableError("the stream count is unreachable") from exc

    async def _remove_released(self) -> None:
        released, self._released = self._released, {}
        try:
            for tenant_id, members in released.items():
                await self._client.zrem(slots_key(tenant_id), *members)
        except (RedisError, OSError) as exc:
            for tenant_id, members in released.items():  # tried again at the next flush
                self._released.setdefault(tenant_id, set()).update(members)
            raise StoreUnavailableError("the stream count is unreachable") from exc
