"""The README's curl walk-through and the SDK's quickstart, as written, run twice on one stack: a
newcomer who runs them again (after a restart, say) gets the same result, not a 409."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.stack import ADMIN_KEY, Stack

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DOCS_URL = "http://127.0.0.1:8080"


def block(path: Path, heading: str, language: str, after: str = "") -> str:
    """The first ``language`` code block under ``heading`` (past the line ``after``, if given)."""
    text = path.read_text()
    section = text[text.index(heading) :]
    section = section[section.index(after) :] if after else section
    found = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert found, f"no {language} block under {heading!r} in {path}"
    return found[1]


def run(command: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{command[0]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def json_values(text: str) -> list[dict[str, Any]]:
    """Every JSON object printed one after another (curl adds no newline after a body)."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while (at := text.find("{", at)) >= 0:
        value, at = decoder.raw_decode(text, at)
        values.append(value)
    return values


def test_the_readme_walk_through_works_twice(stack: Stack) -> None:
    script = block(REPO / "README.md", "### Walk-through with curl", "sh", after="In another")
    demo_key = re.search(r"Bearer (admin-demo-key-\w+)", script)
    assert demo_key, "the walk-through names the admin key the demo was started with"
    script = script.replace(DOCS_URL, stack.api).replace(demo_key[1], ADMIN_KEY)
    for _ in range(2):
        answers = json_values(run(["bash", "-euo", "pipefail", "-c", script], {}))
        books = [a for a in answers if "bids" in a]
        assert [(b["exchange"], b["market"], b["status"]) for b in books] == [
            ("binance.com", "ETHBTC", "synced"),
            ("alpaca-crypto", "BTC/USD", "synced"),
            ("okx", "BTC-USDT-SWAP", "synced"),
            ("bybit-linear", "BTCUSDT", "synced"),
            ("kraken", "BTC/USD", "synced"),
            ("coinbase", "BTC-USD", "synced"),
        ], answers
        subscribed = [(a["exchange"], a["replicas"]) for a in answers if "created_at" in a]
        assert subscribed == [
            ("binance.com", 2),
            ("alpaca-crypto", 2),
            ("okx", 2),
            ("bybit-linear", 2),
            ("kraken", 2),
            ("coinbase", 2),
        ]
        [info] = [a for a in answers if isinstance(a.get("replicas"), list)]
        assert info["exchange"] == "kraken" and info["replicas"], info
        assert all("checksum" in replica for replica in info["replicas"]), info


def test_the_sdk_quickstart_works_twice(stack: Stack) -> None:
    code = block(REPO / "sdk" / "README.md", "## Quickstart against the local demo", "python")
    env = {"LADDER_ADMIN_KEY": ADMIN_KEY, "LADDER_BASE_URL": stack.api}
    for _ in range(2):
        printed = run([sys.executable, "-c", code], env).splitlines()
        assert printed[0].split()[1] == "synced", printed
        assert printed[1].startswith("best bid Level(price=Decimal("), printed
