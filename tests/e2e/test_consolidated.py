"""Consolidated books through the whole stack, on the fake venue's binance.com, okx and bybit books
(and Alpaca's, Kraken's and Coinbase's BTC/USD).

The property checked on every answer: it is exactly the merge of the venue's true books at the
``update_id`` each of its books names (the fake venue's truth endpoint gives them), summed and
sorted whole by the test; a book that is not served alone (here: a stream the venue withholds,
until its node finds it stale) is named in ``left_out`` and never merged; Alpaca's USD book and the
perpetuals that share BTC/USDT's base and quote never go in unasked.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from ladder_sdk import AsyncLadder, ConsolidatedTop, Ladder

from tests.e2e.stack import Stack, start_stack
from tests.e2e.test_faults import eventually, path

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("consolidated")]

TRUTH_VENUE = {"binance.com": "spot", "okx": "okx", "bybit": "bybit"}
VENUES = ["binance.com", "okx", "bybit", "alpaca-crypto", "binance.com-futures", "bybit-linear"]
DEPTH = 20


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    running = start_stack(
        extra_env={
            "LADDER_CATALOG_REFRESH_S": "120",
            "LADDER_KEEPALIVE_MS": "200",
            "LADDER_STALE_AFTER_MS": "800",
        },
        extra_venue_args=["--okx-symbols", "4", "--bybit-symbols", "4"],
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def key(stack: Stack) -> str:
    key = stack.tenant_key(
        "consolidated", max_markets=20, max_replicas=2, rate_limit_rps=100_000, burst=100_000
    )
    eventually(lambda: all(listed(stack, key, v) for v in VENUES), "every catalogue listed", 30)
    body = {"pair": "BTC-USDT", "venues": VENUES, "replicas": 2}
    answer = stack.call(key, "POST", "/v1/subscriptions/consolidated", json=body)
    assert answer.status_code == 200, answer.text
    results = {(r["exchange"], r.get("market"), r["result"]) for r in answer.json()["results"]}
    assert results == {
        ("binance.com", "BTCUSDT", "created"),
        ("okx", "BTC-USDT", "created"),
        ("bybit", "BTCUSDT", "created"),
        ("alpaca-crypto", None, "failed"),  # BTC/USD only
        ("binance.com-futures", None, "failed"),  # perpetuals: no spot market of the pair
        ("bybit-linear", None, "failed"),
    }
    usd = stack.call(
        key, "POST", "/v1/subscriptions", json={"exchange": "alpaca-crypto", "market": "BTC/USD"}
    )
    assert usd.status_code == 201, usd.text
    for swap in (("okx", "BTC-USDT-SWAP"), ("bybit-linear", "BTCUSDT")):  # subscribed, never merged
        response = stack.call(key, "POST", "/v1/subscriptions", json={"exchange": swap[0], "market": swap[1]})
        assert response.status_code == 201, response.text
    eventually(lambda: len(consolidated(stack, key)["books"]) == 3, "three books synced and merged", 30)
    return key


def listed(stack: Stack, key: str, exchange: str) -> bool:
    return bool(stack.call(key, "GET", "/v1/markets", params={"exchange": exchange}).json().get("markets"))


def consolidated(stack: Stack, key: str, pair: str = "BTC-USDT", **params: Any) -> dict[str, Any]:
    response = stack.call(key, "GET", f"/v1/consolidated/{pair}", params={"depth": DEPTH, **params})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def checked(stack: Stack, answer: dict[str, Any]) -> dict[str, Any]:
    """``answer``, once it is found to be exactly the merge of the true books it names."""
    if answer["truncated"]:
        return answer  # a side cut at a truncated book's edge: its levels are checked by the others
    expected: dict[str, Any] = {}
    truths = {}
    for book in answer["books"]:
        truth = stack.truth(TRUTH_VENUE[book["exchange"]], book["market"], book["update_id"])
        assert truth.status_code == 200, truth.text
        truths[book["id"]] = truth.json()
    for side, bids in (("bids", True), ("asks", False)):
        totals: dict[Decimal, Decimal] = defaultdict(Decimal)
        parts: dict[Decimal, dict[str, str]] = defaultdict(dict)
        for book_id, truth in truths.items():
            for price, qty in truth[side][:DEPTH]:
                totals[Decimal(price)] += Decimal(qty)
                parts[Decimal(price)][book_id] = qty
        best = sorted(totals, reverse=bids)[:DEPTH]
        expected[side] = [
            [format(p.normalize(), "f"), format(totals[p].normalize(), "f"), parts[p]] for p in best
        ]
    assert {side: answer[side] for side in ("bids", "asks")} == expected, (
        f"not the merge of {answer['books']}"
    )
    return answer


def test_every_answer_is_exactly_the_merge_of_the_venue_books_it_names(stack: Stack, key: str) -> None:
    deadline = time.monotonic() + 4
    rounds = crossed = 0
    while time.monotonic() < deadline:
        answer = checked(stack, consolidated(stack, key))
        assert {b["id"] for b in answer["books"]} <= {"binance.com:BTCUSDT", "okx:BTC-USDT", "bybit:BTCUSDT"}
        assert answer["quotes"] == ["USDT"]
        rounds += not answer["truncated"]
        crossed += answer["crossed"]
    assert rounds >= 10, "answers checked in full against the venue"
    # The three venues walk their own prices: the books interleave, and a level often has two venues.
    assert any(len(level[2]) > 1 for level in answer["bids"] + answer["asks"]) or crossed


def test_a_book_not_served_alone_is_left_out_and_never_merged(stack: Stack, key: str) -> None:
    stack.fault(action="withhold", venue="spot", symbol="BTCUSDT", seconds=4.0, resume="replay")
    left_out_seen = False
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        answer = checked(stack, consolidated(stack, key))
        named = {b["exchange"] for b in answer["books"]}
        out = {b["exchange"]: b for b in answer["left_out"]}
        assert not named & out.keys()
        if "binance.com" in out:
            left_out_seen = True
            assert out["binance.com"]["code"] == "book_not_synced"
            assert out["binance.com"]["status"] in ("stale", "resyncing")
            assert named == {"okx", "bybit"}
        elif left_out_seen:
            break  # resynced and merged again
        time.sleep(0.05)
    assert left_out_seen, "the withheld book was never found stale"
    eventually(lambda: len(consolidated(stack, key)["books"]) == 3, "binance.com merged again", 10)


def test_quotes_stay_apart_unless_asked(stack: Stack, key: str) -> None:
    eventually(lambda: bool(consolidated(stack, key, "BTC-USD")["books"]), "alpaca's book synced", 20)
    usd = consolidated(stack, key, "BTC-USD")
    assert [b["id"] for b in usd["books"]] == ["alpaca-crypto:BTC/USD"]
    both = consolidated(stack, key, "BTC-USD", quotes="USD,USDT")
    assert both["quotes"] == ["USD", "USDT"]
    assert {b["id"]: b["quote"] for b in both["books"]} == {
        "alpaca-crypto:BTC/USD": "USD",
        "binance.com:BTCUSDT": "USDT",
        "okx:BTC-USDT": "USDT",
        "bybit:BTCUSDT": "USDT",
    }
    tops = stack.call(key, "GET", "/v1/consolidated/tops", params={"pairs": "BTC-USDT,BTC-USD"})
    assert tops.status_code == 200, tops.text
    btc_usdt, btc_usd = tops.json()["tops"]
    assert len(btc_usdt["books"]) == 3 and [b["quote"] for b in btc_usd["books"]] == ["USD"]
    assert btc_usdt["bid"] is not None and btc_usdt["ask"] is not None


def test_both_sdk_clients_read_consolidated_books_and_price_a_fill(stack: Stack, key: str) -> None:
    with Ladder(api_key=key, base_url=stack.api) as ladder:
        merged = ladder.consolidated("BTC-USDT", ["binance.com", "okx", "bybit"], depth=DEPTH)
        fill = merged.cost_to_fill("buy", "0.5")
    assert [b.exchange for b in merged.books] == ["binance.com", "okx", "bybit"]
    assert merged.best_ask is not None and fill.levels[0].price == merged.best_ask.price
    assert fill.filled == sum((level.quantity for level in fill.levels), Decimal(0))
    assert fill.cost == sum((level.price * level.quantity for level in fill.levels), Decimal(0))
    assert fill.complete or merged.truncated or len(fill.levels) == len(merged.asks)

    async def tops() -> list[ConsolidatedTop]:
        async with AsyncLadder(api_key=key, base_url=stack.api) as ladder:
            return await ladder.consolidated_tops(["BTC-USDT", "NOPE-USDT"], quotes=["USDT"])

    top, missing = asyncio.run(tops())
    assert top.ok and top.bid is not None and len(top.books) == 3
    assert (missing.pair, missing.error_code) == ("NOPE-USDT", "unknown_market")


def test_kraken_and_coinbase_books_join_a_consolidated_book(stack: Stack, key: str) -> None:
    """Kraken's and Coinbase's BTC/USD spot books merge with Alpaca's, and with the USDT books when
    asked; each book's part of every level is what a read of that book alone serves at the same
    update id (their messages carry no venue ids to ask the fake's truth by)."""
    usd_venues = ["alpaca-crypto", "kraken", "coinbase"]
    eventually(
        lambda: all(listed(stack, key, v) for v in usd_venues), "kraken's and coinbase's catalogues", 30
    )
    body = {"pair": "BTC-USD", "venues": usd_venues}
    answer = stack.call(key, "POST", "/v1/subscriptions/consolidated", json=body)
    assert answer.status_code == 200, answer.text
    assert {(r["exchange"], r["market"], r["result"]) for r in answer.json()["results"]} == {
        ("alpaca-crypto", "BTC/USD", "updated"),  # held since the fixture: kept as it is
        ("kraken", "BTC/USD", "created"),
        ("coinbase", "BTC-USD", "created"),
    }
    ids = {"alpaca-crypto:BTC/USD", "kraken:BTC/USD", "coinbase:BTC-USD"}
    eventually(
        lambda: {b["id"] for b in consolidated(stack, key, "BTC-USD")["books"]} == ids, "all three merged", 30
    )
    compared: set[str] = set()
    deadline = time.monotonic() + 10
    while compared != ids and time.monotonic() < deadline:
        merged = consolidated(stack, key, "BTC-USD")
        for book in merged["books"]:
            alone = stack.call(key, "GET", path(book["exchange"], book["market"]), params={"depth": DEPTH})
            if alone.status_code != 200 or alone.json()["update_id"] != book["update_id"]:
                continue  # it moved on in between: another round
            single = alone.json()
            for side in ("bids", "asks"):
                parts = [(level[0], level[2][book["id"]]) for level in merged[side] if book["id"] in level[2]]
                mine = [(format(Decimal(p).normalize(), "f"), q) for p, q in single[side]]
                assert parts == mine[: len(parts)], f"{book['id']} {side} is not its own book"
                assert len(parts) == len(mine) or merged["truncated"] or len(merged[side]) == DEPTH
            compared.add(book["id"])
    assert compared == ids, f"never caught {ids - compared} at one update id twice"
    both = consolidated(stack, key, "BTC-USD", quotes="USD,USDT")
    assert {b["id"] for b in both["books"]} == ids | {"binance.com:BTCUSDT", "okx:BTC-USDT", "bybit:BTCUSDT"}


def test_coinbases_usdc_alias_of_its_usd_book_is_counted_once(stack: Stack) -> None:
    """The fake lists BTC-USDC as an alias of Coinbase's BTC-USD book (``alias``, ``alias_to``), as
    Coinbase does: a tenant holding both, asking USD and USDC together, gets the book once, the alias
    named in ``left_out``, and each level's total is the BTC-USD book's own quantity."""
    key = stack.tenant_key("alias", max_markets=5, rate_limit_rps=100_000, burst=100_000)
    eventually(lambda: listed(stack, key, "coinbase"), "coinbase's catalogue", 30)
    markets = stack.call(key, "GET", "/v1/markets", params={"exchange": "coinbase"}).json()["markets"]
    assert {m["market"]: m.get("alias") for m in markets if m["base"] == "BTC"} == {
        "BTC-USD": None,
        "BTC-USDC": "BTC-USD",
    }
    for market in ("BTC-USD", "BTC-USDC"):
        response = stack.call(
            key, "POST", "/v1/subscriptions", json={"exchange": "coinbase", "market": market}
        )
        assert response.status_code == 201, response.text
        stack.wait_synced(key, "coinbase", market, 30)  # each name is a served book of its own
    compared = False
    deadline = time.monotonic() + 10
    while not compared and time.monotonic() < deadline:
        merged = consolidated(stack, key, "BTC-USD", quotes="USD,USDC")
        assert [b["id"] for b in merged["books"]] == ["coinbase:BTC-USD"]
        assert [(b["market"], b["code"], b["alias_of"]) for b in merged["left_out"]] == [
            ("BTC-USDC", "alias", "BTC-USD")
        ]
        alone = stack.call(key, "GET", path("coinbase", "BTC-USD"), params={"depth": DEPTH})
        if alone.status_code != 200 or alone.json()["update_id"] != merged["books"][0]["update_id"]:
            continue  # it moved on in between: another round
        for side in ("bids", "asks"):
            totals = [(level[0], level[1]) for level in merged[side]]
            book = [
                (format(Decimal(p).normalize(), "f"), format(Decimal(q).normalize(), "f"))
                for p, q in alone.json()[side]
            ]
            assert totals == book[: len(totals)] and totals, side
        compared = True
    assert compared, "never caught the merged book and BTC-USD at one update id"
    usdc = consolidated(stack, key, "BTC-USDC")  # its own quote only: the alias is the one book asked
    assert [b["id"] for b in usdc["books"]] == ["coinbase:BTC-USDC"] and usdc["left_out"] == []


def test_one_pair_subscription_costs_one_market_for_coinbases_usd_and_usdc_names(stack: Stack) -> None:
    """Through the SDK, against the fake Coinbase: subscribing BTC-USD in USD and USDC holds the
    venue book once (one of max_markets, which is 1 here), answers BTC-USDC as skipped, and the
    read that follows merges the book and names the alias the same way."""
    key = stack.tenant_key("alias-quota", max_markets=1, rate_limit_rps=100_000, burst=100_000)
    eventually(lambda: listed(stack, key, "coinbase"), "coinbase's catalogue", 30)
    with Ladder(api_key=key, base_url=stack.api) as ladder:
        answer = ladder.subscribe_pair("BTC-USD", ["coinbase"], quotes=["USD", "USDC"])
        assert [(r.market, r.result, r.alias_of, r.error_code) for r in answer.results] == [
            ("BTC-USD", "created", None, None),
            ("BTC-USDC", "skipped", "BTC-USD", "alias"),
        ]
        assert not answer.failed and [s.market for s in ladder.subscriptions()] == ["BTC-USD"]
        assert ladder.usage().markets == 1
        merged = ladder.consolidated("BTC-USD", ["coinbase"], quotes=["USD", "USDC"])
        deadline = time.monotonic() + 30
        while not merged.books and time.monotonic() < deadline:  # until its book syncs
            time.sleep(0.1)
            merged = ladder.consolidated("BTC-USD", ["coinbase"], quotes=["USD", "USDC"])
    assert [b.id for b in merged.books] == ["coinbase:BTC-USD"]
    assert [(b.market, b.code, b.alias_of) for b in merged.left_out] == [("BTC-USDC", "alias", "BTC-USD")]
