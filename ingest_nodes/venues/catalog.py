"""Each venue's market catalog, fetched into the store by one node at a time, and how that went.

Theory of operation
-------------------
Every node serving an exchange asks, every few seconds, whether its catalog is due. A short lock
in the store decides which node fetches: ``SET NX`` taken by one node, held while it fetches and
then for the refresh interval after a success, or for a backoff delay after a failure. The delay
grows with the failures in a row of every node together (counted in the recorded state) and is
jittered, so a venue out of reach costs a handful of attempts a minute however many nodes serve
it, and the nodes do not retry in step.

Each attempt's outcome is recorded as the exchange's :class:`~book_store.catalog.CatalogState`
(``fetching`` before the first answer, then ``loaded`` or ``unavailable`` with the reason and the
next attempt's time), which the read API reports in ``/readyz`` and in its answer to a subscription
the catalog cannot check yet. The log says each change once, for the whole cluster: the node whose
attempt changes the phase or the reason logs it; repeating the same failure logs nothing.

Every node also follows each catalog's aliases (:class:`CatalogAliases`): a market that is another
name of a venue book (Coinbase's BTC-USDC of BTC-USD) is subscribed under that book's name, so the
node must know it before its replicas subscribe. The stored digest says when a catalog changed, so
following costs one read per exchange until it does.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable

from book_store.catalog import CatalogState, MarketCatalog, MarketInfo
from book_store.connect import StoreClient
from book_store.schema import KEY_PREFIX
from ingest_nodes.core.backoff import Backoff
from ingest_nodes.core.errors import VenuePayloadError
from ingest_nodes.venues.rest import VenueRequestError
from ladder_process.clock import now_ms

log = logging.getLogger(__name__)

CATALOG_BACKOFF = Backoff(base_s=4.0, cap_s=120.0)
"""After n failures in a row the next attempt waits 2^(n-1) x 2..4 s, at most 60..120 s."""
FETCH_LEASE_MS = 60_000
"""How long a fetch in progress holds the lock: a node that dies mid-fetch does not block the others
for a whole refresh interval."""


class CatalogRefresher:
    """Keeps the catalogs of one node's exchanges in the store, with their recorded states."""

    def __init__(
        self,
        client: StoreClient,
        node_id: str,
        *,
        refresh_s: float,
        backoff: Backoff = CATALOG_BACKOFF,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self._client = client
        self._catalog = MarketCatalog(client)
        self._node_id = node_id
        self._refresh_ms = max(1000, int(refresh_s * 1000))
        self._backoff = backoff
        self._clock = clock

    async def refresh(self, exchange: str, fetch: Callable[[], Awaitable[list[MarketInfo]]]) -> None:
        """Fetch the exchange's markets with ``fetch`` unless another node did within the interval or
        the last failure's backoff still runs."""
        lock = f"{KEY_PREFIX}:catalog-lock:{exchange}"
        if not await self._client.set(lock, self._node_id, nx=True, px=FETCH_LEASE_MS):
            return
        previous = await self._catalog.state(exchange)
        started = self._clock()
        if previous is None:
            await self._catalog.record(CatalogState(exchange, "fetching", started, started))
        try:
            markets = await fetch()
        except (VenueRequestError, VenuePayloadError) as exc:
            retry_after = exc.retry_after_s if isinstance(exc, VenueRequestError) else None
            state = await self._failed(exchange, previous, str(exc), retry_after)
            await self._client.pexpire(lock, max(1, (state.retry_at_ms or 0) - self._clock()))
        else:
            await self._catalog.replace(exchange, markets)
            now = self._clock()
            since = previous.since_ms if previous is not None and previous.phase == "loaded" else now
            state = CatalogState(exchange, "loaded", since, now, markets=len(markets))
            await self._client.pexpire(lock, self._refresh_ms)
        await self._catalog.record(state)
        self._say(state, previous)

    async def unavailable(self, exchange: str, reason: str) -> None:
        """Record that this node cannot fetch the exchange's catalog at all (e.g. no key for it),
        unless a node that can has loaded it."""
        previous = await self._catalog.state(exchange)
        if previous is not None and previous.phase == "loaded":
            return
        state = await self._failed(exchange, previous, reason, None)
        await self._catalog.record(state)
        self._say(state, previous)

    async def _failed(
        self, exchange: str, previous: CatalogState | None, reason: str, retry_after_s: float | None
    ) -> CatalogState:
        now = self._clock()
        failing = previous is not None and previous.phase == "unavailable"
        failures = previous.failures + 1 if failing and previous is not None else 1
        delay_s = self._backoff.compute(failures - 1, retry_after_s)
        return CatalogState(
            exchange,
            "unavailable",
            previous.since_ms if failing and previous is not None else now,
            now,
            reason=reason,
            retry_at_ms=now + int(delay_s * 1000),
            failures=failures,
            markets=await self._catalog.count(exchange),
        )

    @staticmethod
    def _say(state: CatalogState, previous: CatalogState | None) -> None:
        """Log a change of phase or reason; a repeated failure only at debug level."""
        changed = previous is None or (previous.phase, previous.reason) != (state.phase, state.reason)
        retry_in_s = ((state.retry_at_ms or state.checked_ms) - state.checked_ms) / 1000
        if state.phase == "loaded":
            if previous is not None and previous.phase != "loaded":
                log.info("%s: market catalog loaded (%d markets)", state.exchange, state.markets)
            else:
                log.debug("%s: market catalog refreshed (%d markets)", state.exchange, state.markets)
        elif changed:
            kept = f"; serving the last one ({state.markets} markets)" if state.markets else ""
            log.warning(
                "%s: market catalog unavailable: %s%s; retrying with backoff (next in %.0f s)",
                state.exchange, state.reason, kept, retry_in_s,
            )  # fmt: skip
        else:
            log.debug("%s: market catalog still unavailable (%d failures)", state.exchange, state.failures)


def aliases_of(markets: Iterable[MarketInfo]) -> dict[str, str]:
    """Market -> the market whose venue book it is, for each market listed as an alias."""
    return {m.market: m.alias for m in markets if m.alias}


class CatalogAliases:
    """Each exchange's aliases as its stored catalog lists them (read again only once it changed)."""

    def __init__(self, client: StoreClient) -> None:
        self._catalog = MarketCatalog(client)
        self._digests: dict[str, bytes | None] = {}

    async def changed(self, exchange: str) -> dict[str, str] | None:
        """The exchange's aliases if its catalog changed since the last call (the first call: always);
        None when it did not. No catalog yet: no aliases."""
        digest = await self._catalog.digest(exchange)
        if exchange in self._digests and self._digests[exchange] == digest:
            return None
        markets = [] if digest is None else await self._catalog.markets(exchange)
        self._digests[exchange] = digest
        return aliases_of(markets)
