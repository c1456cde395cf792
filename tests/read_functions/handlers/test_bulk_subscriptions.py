"""Bulk subscribe and unsubscribe over real HTTP: lists, filters, limits, partial failure, validation."""

from __future__ import annotations

from typing import Any

from book_store.catalog import MarketCatalog, MarketInfo
from tests.read_functions.helpers import Stack, validate

USDT = [f"COIN{i}USDT" for i in range(6)]
CATALOG = [
    *(MarketInfo("binance.com", name, "TRADING", name.removesuffix("USDT"), "USDT") for name in USDT),
    MarketInfo("binance.com", "HALTEDUSDT", "BREAK", "HALTED", "USDT"),
    MarketInfo("binance.com", "ETHBTC", "TRADING", "ETH", "BTC"),
    MarketInfo("binance.com", "COIN1BTC", "TRADING", "COIN1", "BTC"),
]


async def call(
    stack: Stack, method: str, path: str, headers: dict[str, str], body: Any = None
) -> tuple[int, Any]:
    async with stack.http.request(method, f"{stack.url}{path}", headers=headers, json=body) as r:
        return r.status, await r.json()


async def tenant(stack: Stack, **limits: object) -> dict[str, str]:
    await MarketCatalog(stack.store).replace("binance.com", CATALOG)
    _, key = await stack.tenant(**limits)
    return {"X-API-Key": key}


def results(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (r["market"], r["result"] if r["result"] != "failed" else r["error"]["code"])
        for r in answer["results"]
    ]


async def test_subscribe_every_trading_usdt_market_in_one_call(stack: Stack) -> None:
    me = await tenant(stack, max_markets=10, max_replicas=2)
    body = {"exchange": "binance.com", "quote": "usdt", "replicas": 2, "depth": 200}

    status, answer = await call(stack, "POST", "/v1/subscriptions/bulk", me, body)

    assert status == 200, answer
    validate(answer, "BulkSubscriptionResult")
    assert results(answer) == [(name, "created") for name in USDT]  # not the halted one
    assert (answer["created"], answer["updated"], answer["failed"]) == (6, 0, 0)
    assert {(r["subscription"]["replicas"], r["subscription"]["depth"]) for r in answer["results"]} == {
        (2, 200)
    }
    _, listing = await call(stack, "GET", "/v1/subscriptions", me)
    assert [s["market"] for s in listing["subscriptions"]] == USDT

    # Again, with a base filter too and neither replicas nor depth: an update that keeps both.
    status, again = await call(
        stack,
        "POST",
        "/v1/subscriptions/bulk",
        me,
        {"exchange": "binance.com", "quote": "USDT", "base": "COIN1"},
    )
    assert status == 200 and results(again) == [("COIN1USDT", "updated")]
    validate(again, "BulkSubscriptionResult")
    (result,) = again["results"]
    assert (result["subscription"]["replicas"], result["subscription"]["depth"], result["changed"]) == (
        2,
        200,
        {},
    )


async def test_subscribing_again_never_lowers_silently(stack: Stack) -> None:
    """The issue's case: a bulk subscribe by list that names a market held 500 deep, without a
    depth, leaves it at 500; a call that does lower it says so."""
    me = await tenant(stack, max_markets=10, max_replicas=2)
    body = {"exchange": "binance.com", "market": "ETHBTC", "replicas": 2, "depth": 500}
    status, made = await call(stack, "POST", "/v1/subscriptions", me, body)
    assert status == 201 and "changed" not in made, made

    bulk = {"exchange": "binance.com", "markets": ["ETHBTC", "COIN1BTC"]}
    status, answer = await call(stack, "POST", "/v1/subscriptions/bulk", me, bulk)
    assert status == 200 and results(answer) == [("ETHBTC", "updated"), ("COIN1BTC", "created")]
    kept = answer["results"][0]
    assert (kept["subscription"]["depth"], kept["subscription"]["replicas"], kept["changed"]) == (500, 2, {})
    assert "changed" not in answer["results"][1]

    status, lowered = await call(
        stack, "POST", "/v1/subscriptions", me, {"exchange": "binance.com", "market": "ETHBTC", "depth": 100}
    )
    assert status == 200, lowered
    validate(lowered, "Subscription")
    assert (lowered["depth"], lowered["replicas"]) == (100, 2)
    assert lowered["changed"] == {"depth": {"from": 500, "to": 100}}
    status, answer = await call(stack, "POST", "/v1/subscriptions/bulk", me, {**bulk, "replicas": 1})
    assert [r["changed"] for r in answer["results"]] == [{"replicas": {"from": 2, "to": 1}}, {}]


async def test_a_list_subscribes_what_it_can_and_says_why_not_for_the_rest(stack: Stack) -> None:
    me = await tenant(stack, max_markets=10)
    markets = ["ETHBTC", "NOSUCH", "HALTEDUSDT", "bad name", "COIN1BTC", "ETHBTC"]

    status, answer = await call(
        stack, "POST", "/v1/subscriptions/bulk", me, {"exchange": "binance.com", "markets": markets}
    )

    assert status == 200, answer
    validate(answer, "BulkSubscriptionResult")
    assert results(answer) == [
        ("ETHBTC", "created"),
        ("NOSUCH", "unknown_market"),
        ("HALTEDUSDT", "unknown_market"),
        ("bad name", "invalid_request"),
        ("COIN1BTC", "created"),
    ]
    assert (answer["created"], answer["failed"]) == (2, 3)
    assert all(r["error"]["message"] for r in answer["results"] if r["result"] == "failed")
    _, listing = await call(stack, "GET", "/v1/subscriptions", me)
    assert [s["market"] for s in listing["subscriptions"]] == ["COIN1BTC", "ETHBTC"]


async def test_max_markets_is_checked_once_for_the_whole_call(stack: Stack) -> None:
    me = await tenant(stack, max_markets=4)
    await call(stack, "POST", "/v1/subscriptions", me, {"exchange": "binance.com", "market": "ETHBTC"})

    status, error = await call(
        stack, "POST", "/v1/subscriptions/bulk", me, {"exchange": "binance.com", "quote": "USDT"}
    )

    assert status == 422 and error["error"]["code"] == "limit_exceeded", error
    assert "add 6 markets" in error["error"]["message"] and "room for 3" in error["error"]["message"]
    validate(error, "Error")
    _, listing = await call(stack, "GET", "/v1/subscriptions", me)
    assert [s["market"] for s in listing["subscriptions"]] == ["ETHBTC"]  # nothing was subscribed

    status, answer = await call(
        stack, "POST", "/v1/subscriptions/bulk", me, {"exchange": "binance.com", "markets": USDT[:3]}
    )
    assert status == 200 and answer["created"] == 3


async def test_bulk_subscribe_validates_the_request(stack: Stack) -> None:
    me = await tenant(stack, max_markets=10, max_replicas=2, max_depth=500)
    bad: list[tuple[Any, int, str]] = [
        ({"quote": "USDT"}, 400, "invalid_request"),  # no exchange
        ({"exchange": "kraken.com", "quote": "USD"}, 404, "unknown_exchange"),
        ({"exchange": "binance.com", "markets": "ETHBTC"}, 400, "invalid_request"),
        ({"exchange": "binance.com", "markets": [1, 2]}, 400, "invalid_request"),
        ({"exchange": "binance.com", "markets": ["ETHBTC"], "quote": "BTC"}, 400, "invalid_request"),
        ({"exchange": "binance.com", "quote": "US DT"}, 400, "invalid_request"),
        ({"exchange": "binance.com", "quote": 5}, 400, "invalid_request"),
        ({"exchange": "binance.com", "status": "BREAK"}, 400, "invalid_request"),
        ({"exchange": "binance.com", "quote": "USDT", "replicas": 3}, 422, "limit_exceeded"),
        ({"exchange": "binance.com", "quote": "USDT", "depth": 501}, 422, "limit_exceeded"),
        ({"exchange": "binance.com", "quote": "USDT", "depth": 0}, 400, "invalid_request"),
        ({"exchange": "binance.com", "quote": "USDT", "colour": "red"}, 400, "invalid_request"),
        ({"exchange": "binance.com", "markets": [f"C{i}" for i in range(5001)]}, 400, "invalid_request"),
        ([], 400, "invalid_request"),
    ]
    for body, status, code in bad:
        got, error = await call(stack, "POST", "/v1/subscriptions/bulk", me, body)
        assert (got, error["error"]["code"]) == (status, code), (body, error)
    _, listing = await call(stack, "GET", "/v1/subscriptions", me)
    assert listing["subscriptions"] == []
    status, error = await call(stack, "POST", "/v1/subscriptions/bulk", {}, {"exchange": "binance.com"})
    assert status == 401


async def test_bulk_unsubscribe_by_list_by_filter_and_everything(stack: Stack) -> None:
    me = await tenant(stack, max_markets=10)
    markets = [*USDT, "ETHBTC", "COIN1BTC"]
    await call(stack, "POST", "/v1/subscriptions/bulk", me, {"exchange": "binance.com", "markets": markets})

    status, answer = await call(
        stack, "DELETE", "/v1/subscriptions?exchange=binance.com&markets=COIN0USDT,NOSUCH,COIN0USDT", me
    )
    assert status == 200, answer
    validate(answer, "BulkUnsubscribeResult")
    assert results(answer) == [("COIN0USDT", "deleted"), ("NOSUCH", "not_found")]
    assert (answer["deleted"], answer["failed"]) == (1, 1)

    status, answer = await call(stack, "DELETE", "/v1/subscriptions?exchange=binance.com&quote=BTC", me)
    assert status == 200 and results(answer) == [("COIN1BTC", "deleted"), ("ETHBTC", "deleted")]
    _, listing = await call(stack, "GET", "/v1/subscriptions", me)
    assert [s["market"] for s in listing["subscriptions"]] == USDT[1:]

    status, answer = await call(stack, "DELETE", "/v1/subscriptions?exchange=binance.com", me)
    assert status == 200 and answer["deleted"] == 5
    _, listing = await call(stack, "GET", "/v1/subscriptions", me)
    assert listing["subscriptions"] == []

    for query, code in (
        ("", "invalid_request"),
        ("?exchange=binance.com&markets=A&quote=USDT", "invalid_request"),
    ):
        status, error = await call(stack, "DELETE", f"/v1/subscriptions{query}", me)
        assert (status, error["error"]["code"]) == (400, code)


async def test_bulk_calls_touch_only_the_callers_subscriptions(stack: Stack) -> None:
    alice = await tenant(stack, max_markets=10)
    bob = await tenant(stack, max_markets=10)
    await call(stack, "POST", "/v1/subscriptions/bulk", alice, {"exchange": "binance.com", "quote": "USDT"})
    await call(
        stack, "POST", "/v1/subscriptions/bulk", bob, {"exchange": "binance.com", "markets": ["ETHBTC"]}
    )

    status, answer = await call(stack, "DELETE", "/v1/subscriptions?exchange=binance.com", bob)
    assert status == 200 and results(answer) == [("ETHBTC", "deleted")]
    status, answer = await call(
        stack, "DELETE", "/v1/subscriptions?exchange=binance.com&markets=COIN1USDT", bob
    )
    assert results(answer) == [("COIN1USDT", "not_found")]
    _, listing = await call(stack, "GET", "/v1/subscriptions", alice)
    assert [s["market"] for s in listing["subscriptions"]] == USDT
