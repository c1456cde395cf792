"""Books whose price walks, and deep books that change at depth: never short without saying so.

A stack of its own, on a venue whose every mid walks ten ticks a second with sweeps of the touch,
and whose first two books of each Binance catalogue are 6000 levels deep with a third of every
update's changes at a random depth. Every synced answer must equal the venue's true top-N at its
update id, level count included, or say ``truncated`` (and then be a true prefix); truncated
answers must be rare and end with a fresh snapshot.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.stack import Stack, start_stack

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("stack")]

VENUE_ARGS = [
    *("--spot-symbols", "12", "--futures-symbols", "6", "--alpaca-symbols", "1", "--rate", "10"),
    *("--drift-ticks-per-s", "10", "--drift-sweep-every-s", "4", "--drift-sweep-levels", "15"),
    *("--deep-symbols", "2", "--deep-levels", "6000", "--deep-share", "0.3"),
]
READ_SECONDS = 10.0
MAX_TRUNCATED_SHARE = 0.2


@pytest.fixture(scope="module")
def drifting() -> Iterator[Stack]:
    running = start_stack(ingest_nodes=1, extra_venue_args=VENUE_ARGS)
    yield running
    running.stop()


def levels(side: list[list[str]]) -> list[tuple[str, str]]:
    return [(price, quantity) for price, quantity in side]


def check_against_truth(stack: Stack, venue: str, book: dict[str, Any], depth: int) -> None:
    truth = stack.http.get(
        f"{stack.venue}/_fake/book",
        params={"venue": venue, "symbol": book["market"], "update_id": book["update_id"], "limit": depth},
    )
    assert truth.status_code == 200, truth.text
    true_book = truth.json()
    short = False
    for side in ("bids", "asks"):
        served, expected = levels(book[side]), levels(true_book[side])
        assert served == expected[: len(served)], (
            f"{side} differ from the venue at update {book['update_id']}"
        )
        short |= len(served) < len(expected)
    if short:
        assert book["truncated"], f"a side stops short of the venue's top {depth} at {book['update_id']}"
    if book["truncated"]:
        assert min(len(book["bids"]), len(book["asks"])) < depth, "truncated, yet as deep as asked"


def read_for(stack: Stack, key: str, venue: str, exchange: str, market: str, depth: int) -> tuple[int, int]:
    """Read the book for READ_SECONDS, checking each synced answer: (answers, truncated ones)."""
    answers = truncated = 0
    deadline = time.monotonic() + READ_SECONDS
    while time.monotonic() < deadline:
        response = stack.call(key, "GET", f"/v1/books/{exchange}/{market}", params={"depth": depth})
        assert response.status_code in (200, 503), response.text  # 503: between syncs, never stale
        if response.status_code == 200:
            book = response.json()
            check_against_truth(stack, venue, book, depth)
            answers += 1
            truncated += book["truncated"]
        time.sleep(0.05)
    return answers, truncated


@pytest.mark.parametrize(
    ("exchange", "venue", "market", "depth"),
    [
        ("binance.com", "spot", "PEPEUSDT", 50),  # 8-decimal prices, the mid running many ticks
        ("binance.com-futures", "futures", "SOLUSDT", 100),
        ("binance.com", "spot", "ETHUSDT", 1000),  # deep, changing at depth
        ("binance.com-futures", "futures", "BTCUSDT", 500),
    ],
)
def test_every_answer_is_the_true_top_n_or_says_truncated(
    drifting: Stack, exchange: str, venue: str, market: str, depth: int
) -> None:
    key = drifting.tenant_key(f"drift-{venue}-{market}-{depth}", max_depth=5000, rate_limit_rps=1000)
    body = {"exchange": exchange, "market": market, "replicas": 1, "depth": depth}
    assert drifting.call(key, "POST", "/v1/subscriptions", json=body).status_code == 201
    drifting.wait_synced(key, exchange, market, timeout_s=40)
    answers, truncated = read_for(drifting, key, venue, exchange, market, depth)
    share = truncated / max(answers, 1)
    print(f"{exchange} {market} depth {depth}: {truncated} of {answers} answers truncated ({share:.1%})")
    assert answers > 30
    assert share <= MAX_TRUNCATED_SHARE, f"{truncated} of {answers} answers truncated"
    if truncated:  # the walk ran past a snapshot's edge: a fresh snapshot must have followed it
        deadline = time.monotonic() + 10
        while not refreshes(drifting, key, exchange, market):
            assert time.monotonic() < deadline, "truncated answers must be followed by a fresh snapshot"
            time.sleep(0.2)


def refreshes(stack: Stack, key: str, exchange: str, market: str) -> int:
    response = stack.call(key, "GET", f"/v1/books/{exchange}/{market}/info")
    assert response.status_code == 200, response.text
    return sum(replica["refreshes"] or 0 for replica in response.json()["replicas"])
