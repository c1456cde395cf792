"""The exchanges Ladder knows, and which venue protocol and endpoints each one speaks."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ingest_nodes.core.stall_watch import StallPolicy
from ingest_nodes.core.sync import (
    AlpacaSyncMachine,
    BybitSyncMachine,
    CoinbaseSyncMachine,
    FuturesSyncMachine,
    KrakenSyncMachine,
    OkxSyncMachine,
    SpotSyncMachine,
    SyncMachine,
)
from ingest_nodes.settings import IngestSettings
from ingest_nodes.venues.alpaca.stream import AlpacaStream, stream_url
from ingest_nodes.venues.binance import limits
from ingest_nodes.venues.binance.stream import BinanceStream
from ingest_nodes.venues.bybit import limits as bybit_limits
from ingest_nodes.venues.bybit.stream import BybitStream
from ingest_nodes.venues.coinbase.stream import CONNECTS_PER_S as COINBASE_CONNECTS_PER_S
from ingest_nodes.venues.coinbase.stream import CoinbaseStream
from ingest_nodes.venues.credentials import Credential
from ingest_nodes.venues.kraken.stream import KrakenStream
from ingest_nodes.venues.okx import limits as okx_limits
from ingest_nodes.venues.okx.stream import OkxStream
from ingest_nodes.venues.stream import VenueStream


class VenueProtocol(Enum):
    """The wire protocol an exchange speaks."""

    BINANCE_SPOT = "binance-spot"
    BINANCE_FUTURES = "binance-futures"
    ALPACA = "alpaca"
    OKX = "okx"
    BYBIT_SPOT = "bybit-spot"
    BYBIT_LINEAR = "bybit-linear"
    KRAKEN = "kraken"
    COINBASE = "coinbase"


_STREAM_BOOKS = frozenset(
    {
        VenueProtocol.ALPACA,
        VenueProtocol.OKX,
        VenueProtocol.BYBIT_SPOT,
        VenueProtocol.BYBIT_LINEAR,
        VenueProtocol.KRAKEN,
        VenueProtocol.COINBASE,
    }
)
_OWN_COUNTS = frozenset({VenueProtocol.ALPACA, VenueProtocol.KRAKEN, VenueProtocol.COINBASE})
"""Venues whose books carry no update id of the venue's: a book's id is its replica's own count."""
_BYBIT = frozenset({VenueProtocol.BYBIT_SPOT, VenueProtocol.BYBIT_LINEAR})
_HEARTBEAT_MARGIN_MS = 15_000
"""How late a venue's heartbeat may be before its silence means the book's stream is gone."""


@dataclass(frozen=True, slots=True)
class ExchangeSpec:
    """One exchange id bound to its protocol and base URLs (Alpaca: ``rest_url`` is the trading API)."""

    id: str
    protocol: VenueProtocol
    rest_url: str
    ws_url: str

    @property
    def is_futures(self) -> bool:
        return self.protocol is VenueProtocol.BINANCE_FUTURES

    @property
    def resets_on_stream(self) -> bool:
        """True when a book is (re)built from the book the stream sends on subscribe (Alpaca, OKX,
        Bybit, Kraken, Coinbase), not from REST snapshots stitched to update ids (Binance)."""
        return self.protocol in _STREAM_BOOKS

    @property
    def ids_comparable(self) -> bool:
        """True when two replicas at one update id hold the same book, so they can be cross-checked
        (every venue with ids; Alpaca's, Kraken's and Coinbase's ids are each replica's own message
        count)."""
        return self.protocol not in _OWN_COUNTS

    @property
    def checks_by_rest(self) -> bool:
        """True when a REST book carries the stream's update id, so a quiet book is checked against
        it (Binance, Bybit's 1000-level ``u``); OKX proves quiet books by its own heartbeats, Kraken
        and Coinbase by their connection's."""
        return self.protocol not in _OWN_COUNTS and self.protocol is not VenueProtocol.OKX

    @property
    def needs_credentials(self) -> bool:
        """True when every connection authenticates with a key, one connection per key (Alpaca)."""
        return self.protocol is VenueProtocol.ALPACA

    def stream(self, credential: Credential | None = None) -> VenueStream:
        """The venue's stream protocol for one connection (Alpaca authenticates with ``credential``)."""
        if self.protocol is VenueProtocol.ALPACA:
            return AlpacaStream(self.ws_url, credential)
        if self.protocol is VenueProtocol.OKX:
            return OkxStream(self.ws_url)
        if self.protocol in _BYBIT:
            return BybitStream(self.ws_url, spot=self.protocol is VenueProtocol.BYBIT_SPOT)
        if self.protocol is VenueProtocol.KRAKEN:
            return KrakenStream(self.ws_url.rstrip("/") + "/v2")
        if self.protocol is VenueProtocol.COINBASE:
            return CoinbaseStream(self.ws_url)
        return BinanceStream(self.ws_url, futures=self.is_futures)

    def new_machine(self, max_buffer: int) -> SyncMachine:
        """A sync machine for one book of this exchange."""
        if self.protocol is VenueProtocol.ALPACA:
            return AlpacaSyncMachine(max_buffer=max_buffer)
        if self.protocol is VenueProtocol.OKX:
            return OkxSyncMachine(max_buffer=max_buffer)
        if self.protocol in _BYBIT:
            return BybitSyncMachine(max_buffer=max_buffer)
        if self.protocol is VenueProtocol.KRAKEN:
            return KrakenSyncMachine(max_buffer=max_buffer)
        if self.protocol is VenueProtocol.COINBASE:
            return CoinbaseSyncMachine(max_buffer=max_buffer)
        if self.is_futures:
            return FuturesSyncMachine(max_buffer=max_buffer)
        return SpotSyncMachine(max_buffer=max_buffer)

    def stall_policy(self, policy: StallPolicy) -> StallPolicy:
        """When a book's silence is suspect. OKX sends every quiet book a heartbeat about once a
        minute, so only a silence past it is: then the book's stream is gone (no check needed)."""
        if self.protocol is not VenueProtocol.OKX:
            return policy
        overdue = okx_limits.HEARTBEAT_MS + _HEARTBEAT_MARGIN_MS
        return StallPolicy(
            factor=1, floor_ms=overdue, unknown_ms=overdue, ceiling_ms=overdue, grace_ms=policy.grace_ms
        )

    @property
    def streams_per_connection(self) -> int | None:
        """The most books one connection should carry, when the venue says (None: the setting)."""
        if self.protocol is VenueProtocol.OKX:
            return okx_limits.STREAMS_PER_CONNECTION
        if self.protocol in _BYBIT:
            return bybit_limits.STREAMS_PER_CONNECTION
        return None

    @property
    def connects_per_s(self) -> float | None:
        """Connection attempts a second this node may make to the venue (None: not paced)."""
        if self.protocol is VenueProtocol.OKX:
            return okx_limits.CONNECTS_PER_S
        if self.protocol in _BYBIT:
            return bybit_limits.CONNECTS_PER_S
        if self.protocol is VenueProtocol.COINBASE:
            return COINBASE_CONNECTS_PER_S
        return None

    @property
    def depth_path(self) -> str:
        return "/fapi/v1/depth" if self.is_futures else "/api/v3/depth"

    @property
    def exchange_info_path(self) -> str:
        return "/fapi/v1/exchangeInfo" if self.is_futures else "/api/v3/exchangeInfo"

    @property
    def depth_tiers(self) -> tuple[tuple[int, int], ...]:
        """(largest snapshot limit, its weight) ascending; the last limit is the deepest book."""
        if self.protocol is VenueProtocol.OKX:
            return ((okx_limits.BOOKS_DEPTH, 1),)
        if self.protocol in _BYBIT:
            return ((bybit_limits.BOOK_DEPTH, 1),)
        return limits.FUTURES_DEPTH_WEIGHTS if self.is_futures else limits.SPOT_DEPTH_WEIGHTS

    def depth_weight(self, limit: int) -> int:
        """The weight one depth snapshot of ``limit`` levels costs on this exchange."""
        return limits.depth_weight(self.depth_tiers, limit)

    @property
    def exchange_info_weight(self) -> int:
        return limits.FUTURES_EXCHANGE_INFO_WEIGHT if self.is_futures else limits.SPOT_EXCHANGE_INFO_WEIGHT

    @property
    def weight_per_minute(self) -> int:
        if self.protocol is VenueProtocol.OKX:
            return okx_limits.REST_REQUESTS_PER_MINUTE
        if self.protocol in _BYBIT:
            return bybit_limits.REST_REQUESTS_PER_MINUTE
        return limits.FUTURES_WEIGHT_PER_MINUTE if self.is_futures else limits.SPOT_WEIGHT_PER_MINUTE

    @property
    def weight_pool(self) -> str:
        """What the venue counts request weight against: its REST host and market family.

        Spot (``/api``) and USD-M futures (``/fapi``) have separate limits even on one host; OKX and
        Bybit count per IP whatever the market.
        """
        host = self.rest_url.split("://", 1)[-1].split("/", 1)[0]
        if self.protocol is VenueProtocol.OKX or self.protocol in _BYBIT:
            return host
        return f"{host}{'/fapi' if self.is_futures else '/api'}"


KNOWN_EXCHANGES = (
    "binance.com",
    "binance.com-futures",
    "binance.com-testnet",
    "binance.com-futures-testnet",
    "binance.us",
    "alpaca-crypto",
    "okx",
    "bybit",
    "bybit-linear",
    "kraken",
    "coinbase",
)


def exchange_specs(settings: IngestSettings) -> dict[str, ExchangeSpec]:
    """Every exchange this node is configured to serve, by id."""
    s = settings
    every = {
        "binance.com": ExchangeSpec(
            "binance.com", VenueProtocol.BINANCE_SPOT, s.binance_spot_rest_url, s.binance_spot_ws_url
        ),
        "binance.com-futures": ExchangeSpec(
            "binance.com-futures",
            VenueProtocol.BINANCE_FUTURES,
            s.binance_futures_rest_url,
            s.binance_futures_ws_url,
        ),
        "binance.com-testnet": ExchangeSpec(
            "binance.com-testnet",
            VenueProtocol.BINANCE_SPOT,
            s.binance_spot_testnet_rest_url,
            s.binance_spot_testnet_ws_url,
        ),
        "binance.com-futures-testnet": ExchangeSpec(
            "binance.com-futures-testnet",
            VenueProtocol.BINANCE_FUTURES,
            s.binance_futures_testnet_rest_url,
            s.binance_futures_testnet_ws_url,
        ),
        "binance.us": ExchangeSpec(
            "binance.us", VenueProtocol.BINANCE_SPOT, s.binance_us_rest_url, s.binance_us_ws_url
        ),
        "alpaca-crypto": ExchangeSpec(
            "alpaca-crypto",
            VenueProtocol.ALPACA,
            s.alpaca_trading_url,
            stream_url(s.alpaca_stream_url, s.alpaca_location),
        ),
        "okx": ExchangeSpec("okx", VenueProtocol.OKX, s.okx_rest_url, s.okx_ws_url),
        "bybit": ExchangeSpec("bybit", VenueProtocol.BYBIT_SPOT, s.bybit_rest_url, s.bybit_spot_ws_url),
        "bybit-linear": ExchangeSpec(
            "bybit-linear", VenueProtocol.BYBIT_LINEAR, s.bybit_linear_rest_url, s.bybit_linear_ws_url
        ),
        "kraken": ExchangeSpec("kraken", VenueProtocol.KRAKEN, s.kraken_rest_url, s.kraken_ws_url),
        "coinbase": ExchangeSpec("coinbase", VenueProtocol.COINBASE, s.coinbase_rest_url, s.coinbase_ws_url),
    }
    unknown = [e for e in settings.exchange_ids if e not in every]
    if unknown:
        raise ValueError(f"unknown exchange id(s) in LADDER_EXCHANGES: {', '.join(unknown)}")
    return {e: every[e] for e in settings.exchange_ids}
