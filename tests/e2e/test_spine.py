"""The whole path: fake venue -> ingest nodes -> Valkey -> read API, checked against the venue's truth."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest

from tests.e2e.stack import Stack

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("stack")]


def assert_matches_truth(stack: Stack, venue: str, book: dict[str, Any], depth: int) -> None:
    truth = stack.truth(venue, book["market"], book["update_id"])
    assert truth.status_code == 200, truth.text
    true_book = truth.json()
    for side in ("bids", "asks"):
        served = [tuple(level) for level in book[side]]
        expected = [tuple(level) for level in true_book[side][: len(served)]]
        assert served == expected, f"{side} differ from the venue at update {book['update_id']}"
        # The trusted depth may cut a side short, but never below half the asked depth on these books.
        assert len(served) >= min(depth // 2, len(true_book[side]))


@pytest.mark.parametrize(
    ("exchange", "venue", "market"),
    [
        ("binance.com", "spot", "ETHBTC"),
        ("binance.com-futures", "futures", "BTCUSDT"),
    ],
)
def test_served_books_equal_the_venue_truth(stack: Stack, exchange: str, venue: str, market: str) -> None:
    # ~60 reads in a few seconds, more than the default limits (10/s, burst 20) allow: not the point here
    key = stack.tenant_key(f"truth-{venue}", rate_limit_rps=1000, burst=1000)
    created = stack.call(
        key, "POST", "/v1/subscriptions", json={"exchange": exchange, "market": market, "replicas": 2}
    )
    assert created.status_code == 201, created.text
    started = time.monotonic()
    book = stack.wait_synced(key, exchange, market)
    assert time.monotonic() - started < 10, "a subscribed book must be synced within 10 s"
    seen = set()
    for _ in range(15):
        response = stack.call(key, "GET", f"/v1/books/{exchange}/{market}", params={"depth": 100})
        assert response.status_code == 200
        book = response.json()
        assert book["status"] == "synced"
        assert Decimal(book["bids"][0][0]) < Decimal(book["asks"][0][0])
        assert_matches_truth(stack, venue, book, 100)
        seen.add(book["update_id"])
        time.sleep(0.1)
    assert len(seen) > 3, "update_id must advance between reads"
    answers = [stack.call(key, "GET", f"/v1/books/{exchange}/{market}") for _ in range(20)]
    assert [a.status_code for a in answers] == [200] * 20, [a.text for a in answers if a.status_code != 200]
    assert {a.json()["replica"] for a in answers}, "a replica id is reported"


def test_depth_slices_the_same_snapshot(stack: Stack) -> None:
    key = stack.tenant_key("depth")
    stack.call(key, "POST", "/v1/subscriptions", json={"exchange": "binance.com", "market": "BNBBTC"})
    stack.wait_synced(key, "binance.com", "BNBBTC")
    book = stack.call(key, "GET", "/v1/books/binance.com/BNBBTC", params={"depth": 10}).json()
    assert len(book["bids"]) == 10 and len(book["asks"]) == 10
    assert_matches_truth(stack, "spot", book, 10)


def test_auth_and_entitlement_errors(stack: Stack) -> None:
    owner = stack.tenant_key("owner")
    other = stack.tenant_key("other")
    assert stack.call(owner, "POST", "/v1/subscriptions",
                      json={"exchange": "binance.com", "market": "ETHUSDT"}).status_code == 201  # fmt: skip

    no_key = stack.call(None, "GET", "/v1/books/binance.com/ETHUSDT")
    assert no_key.status_code == 401
    assert no_key.json()["error"]["code"] == "unauthorized"

    bad_key = stack.call("ldr_" + "A" * 38, "GET", "/v1/books/binance.com/ETHUSDT")
    assert bad_key.status_code == 401
    assert "A" * 38 not in bad_key.text

    not_subscribed = stack.call(other, "GET", "/v1/books/binance.com/ETHUSDT")
    assert not_subscribed.status_code == 403
    assert not_subscribed.json()["error"]["code"] == "forbidden"

    unknown = stack.call(owner, "GET", "/v1/books/binance.com/NOSUCHPAIR")
    assert unknown.status_code == 404
    body = unknown.json()["error"]
    assert body["code"] == "unknown_market" and "NOSUCHPAIR" in body["message"] and body["request_id"]

    unknown_exchange = stack.call(
        owner, "POST", "/v1/subscriptions", json={"exchange": "nasdaq", "market": "X"}
    )
    assert unknown_exchange.status_code == 404
    assert unknown_exchange.json()["error"]["code"] == "unknown_exchange"
