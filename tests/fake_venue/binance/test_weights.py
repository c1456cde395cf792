"""Request weight per IP: the header on every answer, 429 with Retry-After, then 418 bans that grow."""

from __future__ import annotations

import aiohttp

from fake_venue import FakeVenue
from fake_venue.binance.weights import WeightLedger
from tests.fake_venue.helpers import control, get_json


def test_ledger_bans_after_a_429_and_doubles_each_ban() -> None:
    ledger = WeightLedger(limit=10, window_s=60, ban_base_s=120, ban_max_s=300)
    assert ledger.charge("a", 10, now=0.5).status == 200
    refused = ledger.charge("a", 1, now=1.0)
    assert (refused.status, refused.used, refused.retry_after) == (429, 10, 59)
    assert ledger.charge("b", 5, now=1.0).status == 200  # other IPs are unaffected
    first_ban = ledger.charge("a", 1, now=2.0)
    assert (first_ban.status, first_ban.retry_after) == (418, 120)
    assert ledger.charge("a", 1, now=100.0).status == 418  # still banned
    assert ledger.charge("a", 1, now=123.0).status == 200  # ban over, new window
    assert ledger.charge("a", 100, now=124.0).status == 429
    second_ban = ledger.charge("a", 1, now=124.5)
    assert (second_ban.status, second_ban.retry_after) == (418, 240)
    assert ledger.refused_429 == 2 and ledger.refused_418 == 3


async def test_weight_header_429_then_418(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    await control(http, venue, action="weight_limit", venue="spot", limit=30)
    depth = f"{venue.url}/api/v3/depth?symbol=BTCUSDT&limit=10"
    used = [int((await get_json(http, depth))[1]["X-MBX-USED-WEIGHT-1M"]) for _ in range(6)]
    assert used == [5, 10, 15, 20, 25, 30]
    status, headers, body = await get_json(http, depth)
    assert status == 429 and body["code"] == -1003
    assert 1 <= int(headers["Retry-After"]) <= 3600 and headers["X-MBX-USED-WEIGHT-1M"] == "30"
    status, headers, body = await get_json(http, depth)
    assert status == 418 and body["code"] == -1003 and "banned until" in body["msg"]
    assert headers["Retry-After"] == "1"
    status, _, _ = await get_json(http, f"{venue.url}/fapi/v1/depth?symbol=BTCUSDT")
    assert status == 200  # futures keeps its own ledger
    async with http.get(venue.url + "/_fake/stats") as response:
        stats = await response.json()
    assert stats["venues"]["spot"]["http_429"] == 1 and stats["venues"]["spot"]["http_418"] == 1
    assert stats["venues"]["spot"]["weight_used"] == {"127.0.0.1": 30}
    await control(http, venue, action="reset", venue="spot")
    assert (await get_json(http, depth))[0] == 200


async def test_forced_statuses(venue: FakeVenue, http: aiohttp.ClientSession) -> None:
    await control(http, venue, action="http_status", venue="futures", status=503, count=1, retry_after=7)
    await control(http, venue, action="http_status", venue="futures", status=429, count=1, retry_after=3)
    depth = f"{venue.url}/fapi/v1/depth?symbol=BTCUSDT&limit=5"
    status, headers, body = await get_json(http, depth)
    assert (status, headers["Retry-After"], body["code"]) == (503, "7", -1000)
    status, headers, body = await get_json(http, depth)
    assert (status, headers["Retry-After"], body["code"]) == (429, "3", -1003)
    assert "X-MBX-USED-WEIGHT-1M" in headers
    assert (await get_json(http, depth))[0] == 200
