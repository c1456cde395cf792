"""The market catalog: which markets each exchange lists, as ingest nodes last read them.

Ingest nodes own the venue connections, so they fetch each venue's exchangeInfo and write it here;
the control plane validates subscriptions against it and read functions serve ``/v1/markets`` from
it. Nothing downstream ever trusts a market name a caller typed.

Beside each catalog the nodes keep its :class:`CatalogState`: whether the venue's list could be
fetched, and if not why and when the next attempt is due. An exchange a node serves but whose list
never arrived (a venue out of reach) is then known, and said so, instead of looking unknown.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal, cast

import orjson

from book_store.connect import StoreClient
from book_store.schema import CATALOG_INDEX, CATALOG_STATE, catalog_digest_key, catalog_key

TRADING = "TRADING"

CatalogPhase = Literal["fetching", "loaded", "unavailable"]

ABANDONED_AFTER_MS = 300_000
"""A failed catalog whose next attempt is this far overdue is no node's any more (its exchange was
dropped from every node's LADDER_EXCHANGES): it no longer counts against readiness."""

SPOT = "spot"
PERPETUAL = "perpetual"
FUTURE = "future"
OPTION = "option"
UNKNOWN_KIND = "unknown"
"""What a market is (``MarketInfo.kind``): a spot pair, a perpetual, a dated future or an option,
or, for a row an older ingest node wrote before catalogues said so, unknown."""


@dataclass(frozen=True, slots=True)
class MarketInfo:
    """One market as its venue lists it.

    ``base`` and ``quote`` are the venue's asset names, ``kind`` what the market trades: books of
    the same pair and kind on several venues are one consolidated book, never books of different
    kinds (a perpetual's quantities may be contracts). A venue that lists derivatives says which
    of its markets are; a market it does not say so of is spot."""

    exchange: str
    market: str
    status: str
    base: str
    quote: str
    kind: str = SPOT
    alias: str = ""
    """The market of the same exchange whose book this one is under another name ("": none).
    Coinbase lists its USDC products as aliases of its USD books (BTC-USDC of BTC-USD): one
    book, two product ids, so one answer never counts both."""

    @property
    def tradable(self) -> bool:
        return self.status == TRADING

    def to_json(self) -> dict[str, str]:
        """The stored row; ``alias`` only when there is one, so every other row stays as it was."""
        row = asdict(self)
        if not self.alias:
            del row["alias"]
        return row

    @classmethod
    def from_json(cls, raw: bytes) -> MarketInfo:
        """A stored row; one an older node wrote, which does not say its kind, is of unknown kind
        (and a row that names no alias is no alias)."""
        return cls(**{"kind": UNKNOWN_KIND, **orjson.loads(raw)})


def contract_kind(contract_type: object) -> str:
    """The kind of a market a venue describes by a contract type (Binance's ``PERPETUAL``,
    ``CURRENT_QUARTER``; Bybit's ``LinearPerpetual``, ``LinearFutures``): none is spot."""
    if not contract_type:
        return SPOT
    return PERPETUAL if "perpetual" in str(contract_type).lower() else FUTURE


@dataclass(frozen=True, slots=True)
class CatalogState:
    """How fetching an exchange's catalog last went, as the node that tried reports it.

    ``fetching``: the first fetch is on its way (no catalog yet); ``loaded``: the venue answered
    with ``markets`` markets; ``unavailable``: the last ``failures`` attempts in a row failed,
    ``reason`` the last one's, and the next is due at ``retry_at_ms``. ``since_ms`` is when the
    phase began (a catalog unavailable since 12:00 stays so through every failed retry).
    """

    exchange: str
    phase: CatalogPhase
    since_ms: int
    checked_ms: int
    reason: str = ""
    retry_at_ms: int | None = None
    failures: int = 0
    markets: int = 0

    def current(self, now_ms: int) -> bool:
        """False for a failure no node retries any more (see ``ABANDONED_AFTER_MS``)."""
        due = self.retry_at_ms if self.retry_at_ms is not None else self.checked_ms
        return self.phase == "loaded" or now_ms - due < ABANDONED_AFTER_MS

    def to_json(self) -> dict[str, object]:
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

    async def record(self, state: CatalogState) -> None:
        """Keep ``state`` as how the exchange's catalog fetch last went."""
        await self._client.hset(CATALOG_STATE, state.exchange, orjson.dumps(state.to_json()))

    async def states(self) -> dict[str, CatalogState]:
        """Every exchange's recorded :class:`CatalogState`, by exchange."""
        raw = cast(dict[bytes, bytes], await self._client.hgetall(CATALOG_STATE))
        return {k.decode(): CatalogState(**orjson.loads(v)) for k, v in sorted(raw.items())}

    async def state(self, exchange: str) -> CatalogState | None:
        raw = cast(bytes | None, await self._client.hget(CATALOG_STATE, exchange))
        return None if raw is None else CatalogState(**orjson.loads(raw))

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
        return None if raw is None else MarketInfo.from_json(raw)

    async def markets(self, exchange: str) -> list[MarketInfo]:
        """Every market of an exchange, sorted by name."""
        raw = cast(dict[bytes, bytes], await self._client.hgetall(catalog_key(exchange)))
        return sorted((MarketInfo.from_json(v) for v in raw.values()), key=lambda m: m.market)


def _digest(mapping: dict[str, bytes]) -> bytes:
    """The same bytes for the same markets, whatever order they were listed in."""
    digest = hashlib.blake2b(digest_size=16)
    for market in sorted(mapping):
        digest.update(market.encode())
        digest.update(b"\0")
        digest.update(mapping[market])
        digest.update(b"\0")
    return digest.hexdigest().encode()
