"""The fake venue's settings: one frozen value, read once when the venue starts.

Every default is the real venue's figure (weights per minute, ping cadence, message limits), so a
client that behaves against the fake behaves against the venue. Tests shrink the time-based ones
(weight window, ban length, ping interval) to keep the suite fast.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BinanceLimits:
    """The limits one Binance market (spot or USD-M futures) enforces."""

    weight_limit: int
    """REQUEST_WEIGHT per client IP per window."""
    incoming_per_s: int
    """WebSocket messages a client may send per second (pings and pongs included)."""
    ping_interval_s: float
    """How often the server pings each connection."""
    pong_timeout_s: float
    """A connection that has not answered a ping for this long is dropped."""


SPOT_LIMITS = BinanceLimits(weight_limit=6000, incoming_per_s=5, ping_interval_s=20.0, pong_timeout_s=60.0)
FUTURES_LIMITS = BinanceLimits(
    weight_limit=2400, incoming_per_s=10, ping_interval_s=180.0, pong_timeout_s=600.0
)


@dataclass(frozen=True, slots=True)
class Drift:
    """A price that walks: the mid moves many ticks, turning at random, and sweeps eat the touch.

    Per-second figures are spread over a symbol's updates at its current rate, so the books stay a
    function of the seed and the update count; a paused symbol (rate 0) does not drift.
    """

    ticks_per_s: float = 0.0
    """How fast the mid walks, in ticks a second; 0 leaves it the slow random walk of the touch."""
    turn_every_s: float = 20.0
    """Mean seconds between random direction changes; 0 never turns (except at the edge of its range)."""
    sweep_every_s: float = 0.0
    """Seconds between sweeps, updates that consume the best ``sweep_levels`` levels of the side the
    walk heads into; 0 never sweeps."""
    sweep_levels: int = 30

    @property
    def on(self) -> bool:
        return self.ticks_per_s > 0 or self.sweep_every_s > 0


@dataclass(frozen=True, slots=True)
class VenueConfig:
    """Everything the fake venue can be told at start-up; faults are set later, at run time."""

    seed: int = 1
    """Books, ids and update contents are a pure function of the seed and the update count."""
    spot_symbols: int = 10
    futures_symbols: int = 10
    alpaca_symbols: int = 10
    okx_symbols: int = 10
    """SPOT instruments, and as many SWAP ones, OKX lists."""
    bybit_symbols: int = 10
    """Symbols each Bybit category (spot, linear) lists."""
    okx_heartbeat_s: float = 60.0
    """A book with no update for this long gets OKX's empty update (the venue: about a minute)."""
    kraken_symbols: int = 10
    coinbase_symbols: int = 10
    rate: float = 10.0
    """Updates per second per active symbol (with ``rate_skew``: of the first one listed)."""
    rate_skew: float = 0.0
    """Activity skew: the k-th symbol of a catalogue runs at ``rate * k ** -rate_skew`` (0: every
    symbol at ``rate``), so a few markets are busy and most are quiet, as on a real venue."""
    profile: str = "skewed"
    """How busy each market is (``market/profiles.py``): ``skewed`` follows ``rate`` and
    ``rate_skew``; ``binance-real`` and ``venue-max`` replay recorded 100 ms frames, ``rate`` being
    the windows a second (10)."""
    levels: int = 1500
    """Target levels per side of each book ..."""
    deep_symbols: int = 0
    """... except the first this many symbols of each Binance catalogue, which get ..."""
    deep_levels: int = 6000
    """... this many (the ``book_levels`` action sets one symbol's before it is first used)."""
    drift: Drift = Drift()
    """Every symbol's drift at start-up (off); the ``drift`` control action changes it at run time."""
    deep_share: float = 0.0
    """Share of each update's operations that land at a uniformly random depth of a side instead of
    near the touch, so levels thousands deep keep changing; the ``deep_activity`` action sets it."""
    spot: BinanceLimits = SPOT_LIMITS
    futures: BinanceLimits = FUTURES_LIMITS
    weight_window_s: float = 60.0
    """Length of the weight window; the header still says 1M, as on the venue."""
    ban_base_s: float = 120.0
    """First 418 ban; each further ban of the same IP doubles it up to ``ban_max_s``."""
    ban_max_s: float = 3 * 86400.0
    max_streams_per_connection: int = 1024
    max_connection_age_s: float = 86400.0
    history_max_events: int = 4096
    """Updates kept per symbol for the truth endpoint and snapshot lag ..."""
    history_min_events: int = 64
    """... of which this many are kept regardless of age ..."""
    history_seconds: float = 120.0
    """... and older ones are dropped after this long."""
    slow_client_bytes: int = 16 * 1024 * 1024
    """A connection whose unsent output exceeds this is dropped as a slow client."""
    alpaca_auth_timeout_s: float = 10.0
    alpaca_connection_limit: int = 0
    """Authenticated connections per key; 0 means unlimited."""
    alpaca_symbol_limit: int = 0
    """Order-book symbols per connection; 0 means unlimited."""
    alpaca_credentials: tuple[tuple[str, str], ...] = ()
    """Accepted (key, secret) pairs; empty means any non-empty key and secret."""
    heartbeat_s: float = 1.0
    """Kraken's and Coinbase's heartbeat message period on a connection with subscriptions."""
    coinbase_subscribe_timeout_s: float = 5.0
    """Coinbase closes a connection that has subscribed nothing this long after it opened."""
    unicode_symbol: bool = False
    """Add a TRADING spot symbol with a non-ASCII name, as Binance has listed."""
