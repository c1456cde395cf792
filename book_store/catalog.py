"""The market catalog: which markets each exchange lists, as ingest nodes last read them.

Ingest nodes own the venue connections, so they fetch each venue's exchangeInfo and write it here;
the control plane validates subscriptions against it and read functions serve ``/v1/markets`` from
it. Nothing downstream ever trusts a market name a caller typed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import cast

import orjson

from book_store.connect import StoreClient
from book_store.schema import CATALOG_INDEX, catalog_digest_key, catalog_key

TRADING = "TRADING"


@dataclass(frozen=True, slots=True)
class MarketInfo:
    """One market as its venue lists it."""

    exchange: str
    market: str
    status: str
    base: str
    quote: str

    @property
    def tradable(self) -> bool:
        return self.status == TRADING

    def to_json(self) -> dict[str, str]:
        return asdict(self)


class MarketCatalog:
    """Reads and replaces exchanges' market lists in the store."""

    def __init__(self, client: StoreClient) -> None:
        self._client = client

    async def replace(self, exchange: str, markets: Iterable[MarketInfo]) -> None:
        """Make ``markets`` the exchange's whole list, and its digest, atomically."""
        mapping = {m.market: orjson.dumps(m.to_json()) for m in markets}
        key = catalog_key(exchange)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.delete(key)
            if mapping:
                pipe.hset(key, mapping=mapping)  # type: ignore[arg-type]
            pipe.set(catalog_digest_key(exchange), _digest(mapping))
            pipe.sadd(CATALOG_INDEX, exchange)
            await pipe.execute()

    async def digest(self, exchange: str) -> bytes | None:
        """What :meth:`replace` last wrote as the catalog's digest (None: no catalog, or an old one)."""
        return cast(bytes | None, await self._client.get(catalog_digest_key(exchange)))

    async def exchanges(self) -> list[str]:
        """Exchanges that have a catalog, sorted."""
        members = cast(set[bytes], await self._client.smembers(CATALOG_INDEX))
        return sorted(m.decode() for m in members)

    async def count(self, exchange: str) -> int:
        """How many markets the exchange's catalog holds (0: none yet)."""
        return int(await self._client.hlen(catalog_key(exchange)))

    async def get(self, exchange: str, market: str) -> MarketInfo | None:
        raw = cast(bytes | None, await self._client.hget(catalog_key(exchange), market))
        return None if raw is None else MarketInfo(**orjson.loads(raw))

    async def markets(self, exchange: str) -> list[MarketInfo]:
        """Every market of an exchange, sorted by name."""
        raw = cast(dict[bytes, bytes], await self._client.hgetall(catalog_key(exchange)))
        return sorted((MarketInfo(**orjson.loads(v)) for v in raw.values()), key=lambda m: m.market)


def _digest(mapping: dict[str, bytes]) -> bytes:
    """The same bytes for the same markets, whatever order they were listed in."""
    digest = hashlib.blake2b(digest_size=16)
    for market in sorted(mapping):
        digest.update(market.encode())
        digest.update(b"\0")
        digest.update(mapping[market])
        digest.update(b"\0")
    return digest.hexdigest().encode()
