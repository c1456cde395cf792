"""Which keys of a venue's key pool this node holds: leases in the store, one node per key.

Alpaca allows one stream connection per key. The scheduler places the exchange's replicas on at
most as many nodes as the pool has keys (``control_plane.scheduling.scheduler``); each of those nodes leases
the keys it needs here, first come first served, so no two nodes ever connect with one key. A
lease is renewed with every heartbeat and released on shutdown; a node that died loses its
leases after ``ttl_ms``, about when the scheduler has moved its replicas to a node that then
takes the key over. The store sees a digest of each key id, never the key.
"""

from __future__ import annotations

from hashlib import blake2b
from typing import Final

from book_store.connect import StoreClient
from ingest_nodes.venues.credentials import Credential

DEFAULT_TTL_MS: Final = 10_000

# Take the lease if it is free, renew it if it is ours.
_HOLD: Final = """
local owner = redis.call('GET', KEYS[1])
if owner == false or owner == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""
_RELEASE: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def lease_name(exchange: str, credential: Credential) -> str:
    digest = blake2b(credential.key_id.get_secret_value().encode(), digest_size=8).hexdigest()
    return f"ladder:venue-key:{exchange}:{digest}"


class CredentialLeases:
    """The leases one node holds on one exchange's key pool."""

    def __init__(
        self,
        client: StoreClient,
        exchange: str,
        node_id: str,
        keys: list[Credential],
        *,
        ttl_ms: int = DEFAULT_TTL_MS,
    ) -> None:
        self._exchange = exchange
        self._node_id = node_id
        self._keys = keys
        self._ttl_ms = ttl_ms
        self._hold = client.register_script(_HOLD)
        self._release = client.register_script(_RELEASE)
        self.held: list[Credential] = []

    async def hold(self, count: int) -> list[Credential]:
        """Renew what is held and take free keys until ``count`` are held (fewer when other nodes
        hold the rest); keys beyond ``count`` are released. Returns the keys held."""
        held: list[Credential] = []
        for credential in sorted(self._keys, key=lambda c: c not in self.held):  # ours first
            key = lease_name(self._exchange, credential)
            if len(held) >= count:
                if credential in self.held:
                    await self._release(keys=[key], args=[self._node_id])
                continue
            if await self._hold(keys=[key], args=[self._node_id, self._ttl_ms]):
                held.append(credential)
        self.held = held
        return held

    async def release(self) -> None:
        await self.hold(0)
