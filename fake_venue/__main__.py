"""``python -m fake_venue``: run the fake venue until SIGTERM or SIGINT.

Prints exactly one line to stdout once it is listening, for a supervisor to read:
``FAKE_VENUE_URL=http://127.0.0.1:PORT``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from fake_venue.app import FakeVenue
from fake_venue.config import Drift, VenueConfig
from fake_venue.market.profiles import PROFILES


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    defaults = VenueConfig()
    # Defaults after each help (argparse's own formatter: the fake venue shares no code with Ladder).
    parser = argparse.ArgumentParser(
        prog="ladder fake-venue", description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--spot-symbols", type=int, default=defaults.spot_symbols, help="Binance spot markets"
    )
    parser.add_argument(
        "--futures-symbols", type=int, default=defaults.futures_symbols, help="Binance USD-M futures markets"
    )
    parser.add_argument(
        "--alpaca-symbols", type=int, default=defaults.alpaca_symbols, help="Alpaca crypto pairs"
    )
    parser.add_argument(
        "--kraken-symbols", type=int, default=defaults.kraken_symbols, help="Kraken spot pairs"
    )
    parser.add_argument(
        "--coinbase-symbols", type=int, default=defaults.coinbase_symbols, help="Coinbase spot products"
    )
    parser.add_argument(
        "--okx-symbols", type=int, default=defaults.okx_symbols, help="OKX SPOT instruments (as many SWAP)"
    )
    parser.add_argument(
        "--bybit-symbols", type=int, default=defaults.bybit_symbols, help="symbols of each Bybit category"
    )
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default=defaults.profile,
        help="how busy each market is: skewed (--rate, --rate-skew), binance-real (Binance's 100 ms "
        "cadence, ~3.7 events/s a market on average, tens of levels a frame) or venue-max (every "
        "market every window); see fake_venue/market/profiles.py",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=defaults.rate,
        help="updates per second per active symbol (binance-real and venue-max: windows per second)",
    )
    parser.add_argument(
        "--rate-skew",
        type=float,
        default=defaults.rate_skew,
        help="the k-th symbol of each catalogue runs at rate * k ** -SKEW (0: all at --rate)",
    )
    parser.add_argument("--levels", type=int, default=defaults.levels, help="levels per side of each book")
    parser.add_argument(
        "--deep-symbols",
        type=int,
        default=defaults.deep_symbols,
        help="the first N symbols of each Binance catalogue get --deep-levels levels a side",
    )
    parser.add_argument(
        "--deep-levels", type=int, default=defaults.deep_levels, help="levels per side of the --deep-symbols"
    )
    drift = defaults.drift
    parser.add_argument(
        "--drift-ticks-per-s",
        type=float,
        default=drift.ticks_per_s,
        help="every mid walks this many ticks a second (0: no drift)",
    )
    parser.add_argument(
        "--drift-turn-every-s",
        type=float,
        default=drift.turn_every_s,
        help="mean seconds between the walk's direction changes (0: never)",
    )
    parser.add_argument(
        "--drift-sweep-every-s",
        type=float,
        default=drift.sweep_every_s,
        help="seconds between sweeps of the touch (0: none)",
    )
    parser.add_argument(
        "--drift-sweep-levels", type=int, default=drift.sweep_levels, help="levels one sweep deletes"
    )
    parser.add_argument(
        "--deep-share",
        type=float,
        default=defaults.deep_share,
        help="share of each update's operations at a uniformly random depth (0..1)",
    )
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seeds every book's random walk")
    parser.add_argument(
        "--history", type=int, default=defaults.history_max_events, help="updates kept per symbol"
    )
    parser.add_argument("--unicode-symbol", action="store_true", help="also list a non-ASCII spot symbol")
    parser.add_argument(
        "--alpaca-credentials",
        default="",
        help="accepted Alpaca keys, 'KEY:SECRET,KEY:SECRET' (default: any non-empty key)",
    )
    parser.add_argument(
        "--alpaca-connection-limit",
        type=int,
        default=defaults.alpaca_connection_limit,
        help="authenticated Alpaca connections per key (0: unlimited)",
    )
    return parser.parse_args(argv)


def config_from(args: argparse.Namespace) -> VenueConfig:
    return VenueConfig(
        seed=args.seed,
        spot_symbols=args.spot_symbols,
        futures_symbols=args.futures_symbols,
        alpaca_symbols=args.alpaca_symbols,
        okx_symbols=args.okx_symbols,
        bybit_symbols=args.bybit_symbols,
        kraken_symbols=args.kraken_symbols,
        coinbase_symbols=args.coinbase_symbols,
        profile=args.profile,
        rate=args.rate,
        rate_skew=args.rate_skew,
        levels=args.levels,
        deep_symbols=args.deep_symbols,
        deep_levels=args.deep_levels,
        drift=Drift(
            ticks_per_s=args.drift_ticks_per_s,
            turn_every_s=args.drift_turn_every_s,
            sweep_every_s=args.drift_sweep_every_s,
            sweep_levels=args.drift_sweep_levels,
        ),
        deep_share=args.deep_share,
        history_max_events=args.history,
        history_min_events=min(args.history, VenueConfig().history_min_events),
        unicode_symbol=args.unicode_symbol,
        alpaca_credentials=tuple(
            (key, secret)
            for key, _, secret in (e.partition(":") for e in args.alpaca_credentials.split(",") if e)
        ),
        alpaca_connection_limit=args.alpaca_connection_limit,
    )


async def run(args: argparse.Namespace) -> None:
    venue = FakeVenue(config_from(args))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    url = await venue.start(args.host, args.port)
    sys.stdout.write(f"FAKE_VENUE_URL={url}\n")
    sys.stdout.flush()
    try:
        await stop.wait()
    finally:
        await venue.stop()


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        import uvloop
    except ImportError:
        asyncio.run(run(args))
    else:
        uvloop.run(run(args))
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.flush()


if __name__ == "__main__":
    main()
