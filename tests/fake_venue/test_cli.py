"""``python -m fake_venue``: one URL line on stdout when ready, a clean exit on SIGTERM, and flags
that map onto the ``VenueConfig`` fields."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import aiohttp

from fake_venue.__main__ import config_from, parse_args
from fake_venue.config import Drift, VenueConfig

REPO = Path(__file__).resolve().parents[2]


async def test_cli_prints_the_url_and_exits_on_sigterm() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "fake_venue", "--port", "0", "--spot-symbols", "3", "--futures-symbols", "2",
        "--alpaca-symbols", "2", "--rate", "5", "--levels", "50", "--seed", "9",
        cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), timeout=15)).decode()
        assert line.startswith("FAKE_VENUE_URL=http://127.0.0.1:")
        url = line.strip().split("=", 1)[1]
        async with aiohttp.ClientSession() as http, http.get(url + "/api/v3/exchangeInfo") as response:
            symbols = [entry["symbol"] for entry in (await response.json())["symbols"]]
        assert symbols == ["BTCUSDT", "ETHUSDT", "ETHBTC", "BCCBTC"]
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), timeout=10) == 0
        assert await process.stdout.read() == b""  # exactly one line
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_drift_flags_make_the_venue_wide_drift() -> None:
    args = ["--drift-ticks-per-s", "20", "--drift-turn-every-s", "8", "--drift-sweep-every-s", "5"]
    config = config_from(parse_args([*args, "--drift-sweep-levels", "40"]))
    assert config.drift == Drift(ticks_per_s=20, turn_every_s=8, sweep_every_s=5, sweep_levels=40)
    assert config_from(parse_args([])).drift == VenueConfig().drift == Drift()


def test_deep_share_flag() -> None:
    assert config_from(parse_args(["--deep-share", "0.3"])).deep_share == 0.3
    assert config_from(parse_args([])).deep_share == VenueConfig().deep_share == 0.0


def test_deep_symbol_flags() -> None:
    config = config_from(parse_args(["--deep-symbols", "50", "--deep-levels", "6000", "--levels", "1500"]))
    assert (config.deep_symbols, config.deep_levels, config.levels) == (50, 6000, 1500)
    assert config_from(parse_args([])).deep_symbols == VenueConfig().deep_symbols == 0


def test_alpaca_flags() -> None:
    args = ["--alpaca-credentials", "k1:s1,k2:s2", "--alpaca-connection-limit", "1"]
    config = config_from(parse_args(args))
    assert config.alpaca_credentials == (("k1", "s1"), ("k2", "s2"))
    assert config.alpaca_connection_limit == 1
    defaults = config_from(parse_args([]))
    assert defaults.alpaca_credentials == () and defaults.alpaca_connection_limit == 0
