"""The market catalog held in memory, so validating a book on the read path costs no round trip.

Each exchange's market list is loaded once and checked in the background every ``refresh_s``:
the check reads the catalog's digest, and only a changed digest reloads the list (a venue lists
thousands of markets, and parsing them all would stall every request of the worker meanwhile).
A name that is not in the cached list triggers one reload of that exchange if the copy is older
than ``recheck_s`` (a newly listed market is found within that time); otherwise it is refused at
once, so a stream of made-up names never turns into a stream of store reads. Concurrent loads of
one exchange share one round trip.

Catalogs in the store are replaced, never deleted; one that is gone (a book store that restarted
empty, until the ingest nodes publish it again) says nothing about the venue's markets, so the copy
held here stays in use and its exchange stays known.

An exchange the ingest nodes serve but whose catalog they could not fetch (the venue is out of
reach) is known all the same, through the catalog states read with the index: asking for it is
``CatalogUnavailableError`` (503, with the nodes' reason and when they try again), not "unknown".
"""

from __future__ import annotations

import asyncio
import time

from redis.exceptions import RedisError

from book_store.catalog import CatalogState, MarketCatalog, MarketInfo
from book_store.connect import StoreClient
from control_plane.errors import CatalogUnavailableError, UnknownExchangeError, UnknownMarketError, shown
from ladder_process.clock import now_ms
from ladder_process.errors import StoreError, StoreUnavailableError


class MarketListing(dict[str, MarketInfo]):
    """An exchange's markets by name: a dict that can be weakly referenced, so whoever checked a
    name against one can keep that fact without keeping the listing alive."""

    __slots__ = ("__weakref__",)


class CatalogCache:
    """Validates exchanges and markets against the catalog ingest nodes publish."""

    def __init__(self, client: StoreClient, *, refresh_s: float = 10.0, recheck_s: float = 1.0) -> None:
        self._catalog = MarketCatalog(client)
        self._refresh_s = refresh_s
        self._recheck_s = recheck_s
        self._exchanges: list[str] = []
        self._exchanges_at = -1e9
        self._states: dict[str, CatalogState] = {}
        self._states_at = -1e9
        self._markets: dict[str, MarketListing] = {}
        self._loaded_at: dict[str, float] = {}
        self._digests: dict[str, bytes | None] = {}
        self._loading: dict[str, asyncio.Task[MarketListing]] = {}

    async def exchanges(self) -> list[str]:
        """Exchanges that have a catalog, sorted (re-read, with the catalogs' states, at most every
        ``recheck_s``)."""
        if time.monotonic() - self._exchanges_at > self._recheck_s:
            try:
                stored = await self._catalog.exchanges()
                states = await self._catalog.states()
            except (RedisError, OSError) as exc:
                raise StoreUnavailableError("catalog unreachable") from exc
            self._exchanges = sorted({*stored, *self._markets})
            self._states, self._states_at = states, time.monotonic()
            self._exchanges_at = time.monotonic()
        return self._exchanges

    async def refresh_states(self) -> None:
        """Re-read the catalogs' states alone: the readiness task calls this every second, and it
        reads them that often while one is not loaded, else every ``refresh_s`` (a catalog whose
        refresh fails later keeps its last list, so steady reads cost the store nothing new)."""
        settled = all(state.phase == "loaded" for state in self._states.values())
        if settled and time.monotonic() - self._states_at < self._refresh_s:
            return
        try:
            self._states = await self._catalog.states()
        except (RedisError, OSError) as exc:
            raise StoreUnavailableError("catalog unreachable") from exc
        self._states_at = time.monotonic()

    def states(self) -> dict[str, CatalogState]:
        """How each served exchange's catalog fetch last went, as read with :meth:`exchanges`
        (failures no node retries any more left out)."""
        now = now_ms()
        return {exchange: state for exchange, state in self._states.items() if state.current(now)}

    async def markets(self, exchange: str) -> list[MarketInfo]:
        """Every market of a known exchange, sorted by name (UnknownExchangeError otherwise)."""
        markets = await self._markets_of(exchange)
        return sorted(markets.values(), key=lambda m: m.market)

    def listing(self, exchange: str) -> MarketListing | None:
        """The exchange's markets by name as loaded now (None before the first load), starting a
        reload in the background when due.

        A listing is replaced, never changed: a caller may keep what it checked against one, and
        while ``listing()`` returns that same object the check still holds."""
        markets = self._markets.get(exchange)
        if markets is not None and time.monotonic() - self._loaded_at[exchange] > self._refresh_s:
            self._reload(exchange)
        return markets

    async def listing_of(self, exchange: str) -> MarketListing:
        """The exchange's markets by name (:meth:`listing`), loaded first if they never were;
        UnknownExchangeError for an exchange that has no catalog."""
        markets = self.listing(exchange)
        return markets if markets is not None else await self._markets_of(exchange)

    async def market(self, exchange: str, market: str) -> MarketInfo:
        """The market, or UnknownExchangeError / UnknownMarketError with a message for the caller."""
        markets = self.listing(exchange)
        if markets is not None:
            info = markets.get(market)
            if info is not None:
                return info
            if time.monotonic() - self._loaded_at[exchange] <= self._recheck_s:
                raise UnknownMarketError(f"{exchange} has no market {shown(market)}")
        info = (await self._markets_of(exchange)).get(market)
        if info is None:
            raise UnknownMarketError(f"{exchange} has no market {shown(market)}")
        return info

    # The control plane's MarketValidator protocol, answered from the same cache.
    async def known_exchange(self, exchange: str) -> bool:
        if exchange in await self.exchanges():
            return True
        absent = self._absent(exchange)
        if isinstance(absent, CatalogUnavailableError):
            raise absent
        return False

    async def tradable(self, exchange: str, market: str) -> bool:
        try:
            return (await self.market(exchange, market)).tradable
        except (UnknownExchangeError, UnknownMarketError):
            return False

    async def _markets_of(self, exchange: str) -> MarketListing:
        markets = self._markets.get(exchange)
        if markets is not None and time.monotonic() - self._loaded_at[exchange] <= self._recheck_s:
            return markets
        if exchange not in await self.exchanges():
            self._markets.pop(exchange, None)
            raise self._absent(exchange)
        return await asyncio.shield(self._reload(exchange))

    def _absent(self, exchange: str) -> UnknownExchangeError | CatalogUnavailableError:
        """Why an exchange without a catalog cannot be used: served but not fetched yet, or unknown."""
        states = self.states()
        state = states.get(exchange)
        if state is None:
            served = ", ".join(sorted({*self._exchanges, *states})) or "none yet"
            return UnknownExchangeError(f"unknown exchange {shown(exchange)} (served here: {served})")
        retry_s = max(1.0, ((state.retry_at_ms or 0) - now_ms()) / 1000)
        if state.phase == "unavailable":
            why = f"the venue could not be reached: {state.reason}"
        else:
            why, retry_s = "the first fetch is under way", 2.0
        return CatalogUnavailableError(
            f"{exchange}'s market list is not loaded yet ({why}); try again in {retry_s:.0f} s", retry_s
        )

    def _reload(self, exchange: str) -> asyncio.Task[MarketListing]:
        task = self._loading.get(exchange)
        if task is None:
            task = self._loading[exchange] = asyncio.get_running_loop().create_task(self._load(exchange))
            task.add_done_callback(lambda t: self._loaded(exchange, t))
        return task

    async def _load(self, exchange: str) -> MarketListing:
        started = time.monotonic()
        try:
            # The digest first: the one kept is then never newer than the markets kept with it.
            digest = await self._catalog.digest(exchange)
            markets = self._markets.get(exchange)
            if markets is None or digest is None or digest != self._digests.get(exchange):
                loaded = MarketListing((m.market, m) for m in await self._catalog.markets(exchange))
                if markets and not loaded:
                    raise StoreUnavailableError(f"the {exchange} catalog is missing from the store")
                markets = loaded
        except (RedisError, OSError) as exc:
            raise StoreUnavailableError("catalog unreachable") from exc
        self._markets[exchange] = markets
        self._digests[exchange] = digest
        self._loaded_at[exchange] = started
        return markets

    def _loaded(self, exchange: str, task: asyncio.Task[MarketListing]) -> None:
        self._loading.pop(exchange, None)
        failed = not task.cancelled() and isinstance(task.exception(), StoreError)
        if failed and exchange in self._loaded_at:
            # Keep serving the last good copy and try again in recheck_s.
            self._loaded_at[exchange] = time.monotonic() - self._refresh_s + self._recheck_s
