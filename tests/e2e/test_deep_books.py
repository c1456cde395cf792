"""Books as deep as their subscribers ask, through the whole stack, checked against the venue's truth."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.stack import Stack

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("stack")]


def eventually(check: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout_s} s: {what}"
        time.sleep(0.1)


def subscribe(stack: Stack, key: str, exchange: str, market: str, depth: int) -> None:
    body = {"exchange": exchange, "market": market, "replicas": 1, "depth": depth}
    response = stack.call(key, "POST", "/v1/subscriptions", json=body)
    assert response.status_code in (200, 201), response.text


def info(stack: Stack, key: str, exchange: str, market: str) -> dict[str, Any]:
    response = stack.call(key, "GET", f"/v1/books/{exchange}/{market}/info")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def stored_depth(stack: Stack, key: str, exchange: str, market: str) -> int:
    """Levels a side the book's synced replica keeps (its deep snapshot when it has one)."""
    for replica in info(stack, key, exchange, market)["replicas"]:
        if replica["status"] == "synced":
            deep = replica["deep"]
            return int(replica["head"]["asks"] if deep is None else deep["asks"])
    return 0


def test_the_depth_of_a_book_follows_its_deepest_subscriber_up_and_down(stack: Stack) -> None:
    shallow = stack.tenant_key("shallow-reader")
    deep = stack.tenant_key("deep-reader")
    subscribe(stack, shallow, "binance.com", "LTCUSDT", 50)
    stack.wait_synced(shallow, "binance.com", "LTCUSDT")
    eventually(lambda: stored_depth(stack, shallow, "binance.com", "LTCUSDT") == 50, "kept 50 deep")

    subscribe(stack, deep, "binance.com", "LTCUSDT", 400)
    eventually(lambda: stored_depth(stack, deep, "binance.com", "LTCUSDT") == 400, "kept 400 deep")
    book = stack.call(deep, "GET", "/v1/books/binance.com/LTCUSDT", params={"depth": 400}).json()
    assert len(book["bids"]) == 400 and len(book["asks"]) == 400 and book["truncated"] is False
    truth = stack.truth("spot", "LTCUSDT", book["update_id"]).json()
    assert [tuple(x) for x in book["asks"]] == [tuple(x) for x in truth["asks"][:400]]
    assert [tuple(x) for x in book["bids"]] == [tuple(x) for x in truth["bids"][:400]]

    assert stack.call(deep, "DELETE", "/v1/subscriptions/binance.com/LTCUSDT").status_code == 204
    eventually(lambda: stored_depth(stack, shallow, "binance.com", "LTCUSDT") == 50, "back to 50 deep")
    replica = next(
        r for r in info(stack, shallow, "binance.com", "LTCUSDT")["replicas"] if r["status"] == "synced"
    )
    assert replica["deep"] is None, "a book back within its head keeps no deep snapshot"
    short = stack.call(shallow, "GET", "/v1/books/binance.com/LTCUSDT", params={"depth": 400}).json()
    assert len(short["asks"]) == 50 and short["truncated"] is True, "asked past the kept depth: truncated"
