"""The exchanges Ladder knows, and which venue protocol and endpoints each one speaks."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ingest_nodes.core.sync import AlpacaSyncMachine, FuturesSyncMachine, SpotSyncMachine, SyncMachine
from ingest_nodes.settings import IngestSettings
from ingest_nodes.venues.alpaca.stream import AlpacaStream, stream_url
from ingest_nodes.venues.binance import limits
from ingest_nodes.venues.binance.stream import BinanceStream
from ingest_nodes.venues.credentials import Credential
from ingest_nodes.venues.stream import VenueStream


class VenueProtocol(Enum):
    """The wire protocol an exchange speaks."""

    BINANCE_SPOT = "binance-spot"
    BINANCE_FUTURES = "binance-futures"
    ALPACA = "alpaca"


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
        """True when a book is (re)built from a full book the stream sends on subscribe (Alpaca),
        not from REST snapshots stitched to update ids (Binance)."""
        return self.protocol is VenueProtocol.ALPACA

    @property
    def needs_credentials(self) -> bool:
        """True when every connection authenticates with a key, one connection per key (Alpaca)."""
        return self.protocol is VenueProtocol.ALPACA

    def stream(self, credential: Credential | None = None) -> VenueStream:
        """The venue's stream protocol for one connection (Alpaca authenticates with ``credential``)."""
        if self.protocol is VenueProtocol.ALPACA:
            return AlpacaStream(self.ws_url, credential)
        return BinanceStream(self.ws_url, futures=self.is_futures)

    def new_machine(self, max_buffer: int) -> SyncMachine:
        """A sync machine for one book of this exchange."""
        if self.protocol is VenueProtocol.ALPACA:
            return AlpacaSyncMachine(max_buffer=max_buffer)
        if self.is_futures:
            return FuturesSyncMachine(max_buffer=max_buffer)
        return SpotSyncMachine(max_buffer=max_buffer)

    @property
    def depth_path(self) -> str:
        return "/fapi/v1/depth" if self.is_futures else "/api/v3/depth"

    @property
    def exchange_info_path(self) -> str:
        return "/fapi/v1/exchangeInfo" if self.is_futures else "/api/v3/exchangeInfo"

    @property
    def depth_tiers(self) -> tuple[tuple[int, int], ...]:
        return limits.FUTURES_DEPTH_WEIGHTS if self.is_futures else limits.SPOT_DEPTH_WEIGHTS

    def depth_weight(self, limit: int) -> int:
        """The weight one depth snapshot of ``limit`` levels costs on this exchange."""
        return limits.depth_weight(self.depth_tiers, limit)

    @property
    def exchange_info_weight(self) -> int:
        return limits.FUTURES_EXCHANGE_INFO_WEIGHT if self.is_futures else limits.SPOT_EXCHANGE_INFO_WEIGHT

    @property
    def weight_per_minute(self) -> int:
        return limits.FUTURES_WEIGHT_PER_MINUTE if self.is_futures else limits.SPOT_WEIGHT_PER_MINUTE

    @property
    def weight_pool(self) -> str:
        """What the venue counts request weight against: its REST host and market family.

        Spot (``/api``) and USD-M futures (``/fapi``) have separate limits even on one host.
        """
        host = self.rest_url.split("://", 1)[-1].split("/", 1)[0]
        return f"{host}{'/fapi' if self.is_futures else '/api'}"


KNOWN_EXCHANGES = (
    "binance.com",
    "binance.com-futures",
    "binance.com-testnet",
    "binance.com-futures-testnet",
    "binance.us",
    "alpaca-crypto",
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
    }
    unknown = [e for e in settings.exchange_ids if e not in every]
    if unknown:
        raise ValueError(f"unknown exchange id(s) in LADDER_EXCHANGES: {', '.join(unknown)}")
    return {e: every[e] for e in settings.exchange_ids}
