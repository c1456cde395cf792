"""GET /v1/books: shapes, depth, replica choice, freshness, ETag, gzip and every error status."""

from __future__ import annotations

import gzip

import orjson

from book_store.codec import BookStatus
from book_store.unplaced import UnplacedBooks
from ladder_process.clock import now_ms
from tests.read_functions.helpers import ALPACA, BTC, ETH, Stack, levels, snapshot, validate


async def get(
    stack: Stack, path: str, headers: dict[str, str], **extra: str
) -> tuple[int, dict[str, str], bytes]:
    async with stack.http.get(f"{stack.url}{path}", headers={**headers, **extra}) as r:
        return r.status, {k.lower(): v for k, v in r.headers.items()}, await r.read()


async def test_book_shape_sides_and_depth(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    bids = levels(["0.03512000", "0.03511000", "0.03510000"], "4.20000000")
    asks = levels(["0.03513000", "0.03514000"], "1.00000000")
    await stack.publish(ETH, 0, snapshot(7281945, bids=bids, asks=asks))
    status, response_headers, body = await get(stack, "/v1/books/binance.com/ETHBTC?depth=2", headers)
    assert status == 200, body
    book = orjson.loads(body)
    validate(book, "Book")
    assert book["update_id"] == 7281945 and book["status"] == "synced" and book["replica"] == 0
    assert book["bids"] == [["0.03512000", "4.20000000"], ["0.03511000", "4.20000000"]]
    assert book["asks"] == [["0.03513000", "1.00000000"], ["0.03514000", "1.00000000"]]
    assert 0 <= book["age_ms"] < 5000 and book["publish_time"] - book["ingest_time"] == 1
    assert response_headers["content-type"] == "application/json" and response_headers["x-request-id"]
    assert int(response_headers["ratelimit-remaining"]) > 0
    _, _, body = await get(stack, "/v1/books/binance.com/ETHBTC/bids?depth=100", headers)
    only_bids = orjson.loads(body)
    validate(only_bids, "BookBids")
    assert "asks" not in only_bids and len(only_bids["bids"]) == 3
    _, _, body = await get(stack, "/v1/books/binance.com/ETHBTC/asks?depth=1", headers)
    only_asks = orjson.loads(body)
    validate(only_asks, "BookAsks")
    assert only_asks["asks"] == [["0.03513000", "1.00000000"]] and "bids" not in only_asks


async def test_bids_and_asks_come_from_one_replica(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(10, 0, bids=levels(["1"]), asks=levels(["2"])))
    await stack.publish(ETH, 1, snapshot(12, 1, bids=levels(["3"]), asks=levels(["4"])))
    _, _, body = await get(stack, "/v1/books/binance.com/ETHBTC", headers)
    book = orjson.loads(body)
    assert (book["replica"], book["update_id"], book["bids"][0][0], book["asks"][0][0]) == (1, 12, "3", "4")


async def test_unsynced_stale_and_silent_replicas_are_never_served(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(50, 0, status=BookStatus.RESYNCING))
    await stack.publish(ETH, 1, snapshot(60, 1, status=BookStatus.STALE))
    await stack.publish(ETH, 2, snapshot(70, 2, publish_time=now_ms() - 60_000))  # silent for a minute
    status, response_headers, body = await get(stack, "/v1/books/binance.com/ETHBTC", headers)
    assert status == 503 and response_headers["retry-after"] == "1"
    assert orjson.loads(body)["error"]["code"] == "book_not_synced"
    await stack.publish(ETH, 3, snapshot(40, 3))  # older update id, but the only synced fresh one
    status, _, body = await get(stack, "/v1/books/binance.com/ETHBTC", headers)
    assert status == 200 and orjson.loads(body)["replica"] == 3


async def test_max_age_ms_refuses_an_old_book(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(5, publish_time=now_ms() - 2000))
    status, response_headers, body = await get(stack, "/v1/books/binance.com/ETHBTC?max_age_ms=500", headers)
    assert status == 503 and orjson.loads(body)["error"]["code"] == "book_too_old"
    assert response_headers["retry-after"] == "1"  # what the SDK's documented example prints
    status, _, _ = await get(stack, "/v1/books/binance.com/ETHBTC?max_age_ms=60000", headers)
    assert status == 200


async def test_etag_gives_304_until_the_book_changes(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(1))
    status, first, body = await get(stack, "/v1/books/binance.com/ETHBTC", headers)
    assert status == 200, body
    etag = first["etag"]
    status, again, body = await get(stack, "/v1/books/binance.com/ETHBTC", headers, **{"If-None-Match": etag})
    assert status == 304 and body == b"" and again["etag"] == etag
    await stack.publish(ETH, 0, snapshot(2))
    status, changed, _ = await get(stack, "/v1/books/binance.com/ETHBTC", headers, **{"If-None-Match": etag})
    assert status == 200 and changed["etag"] != etag


async def test_the_etag_names_update_replica_served_depth_and_side(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 1, snapshot(9, 1))  # five levels a side
    for path, etag in [
        ("/v1/books/binance.com/ETHBTC?depth=2", 'W/"9.1.2.both"'),
        ("/v1/books/binance.com/ETHBTC?depth=1000", 'W/"9.1.5.both"'),  # the depth actually served
        ("/v1/books/binance.com/ETHBTC/bids?depth=3", 'W/"9.1.3.bids"'),
        ("/v1/books/binance.com/ETHBTC/asks", 'W/"9.1.5.asks"'),
    ]:
        status, response_headers, body = await get(stack, path, headers)
        assert status == 200 and response_headers["etag"] == etag, (path, body)


async def test_gzip_when_asked(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(3))
    status, response_headers, body = await get(
        stack, "/v1/books/binance.com/ETHBTC", headers, **{"Accept-Encoding": "gzip"}
    )
    assert status == 200 and response_headers["content-encoding"] == "gzip"
    assert orjson.loads(gzip.decompress(body))["update_id"] == 3
    _, plain, _ = await get(stack, "/v1/books/binance.com/ETHBTC", headers, **{"Accept-Encoding": "gzip;q=0"})
    assert "content-encoding" not in plain


async def test_percent_encoded_market(stack: Stack) -> None:
    headers = await stack.subscriber(ALPACA)
    await stack.publish(ALPACA, 0, snapshot(9))
    status, _, body = await get(stack, "/v1/books/alpaca-crypto/BTC%2FUSD/asks", headers)
    assert status == 200 and orjson.loads(body)["market"] == "BTC/USD"


async def test_error_statuses_and_bodies(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(BTC, 0, snapshot(1))
    wrong_key = "ldr_" + "A" * 38
    cases = [
        ({}, "/v1/books/binance.com/ETHBTC", 401, "unauthorized"),
        ({"X-API-Key": wrong_key}, "/v1/books/binance.com/ETHBTC", 401, "unauthorized"),
        ({"Authorization": f"Bearer {wrong_key}"}, "/v1/books/binance.com/ETHBTC", 401, "unauthorized"),
        (headers, "/v1/books/binance.com/BTCUSDT", 403, "forbidden"),
        (headers, "/v1/books/binance.com/NOPE", 404, "unknown_market"),
        (headers, "/v1/books/nowhere/ETHBTC", 404, "unknown_exchange"),
        (headers, "/v1/books/binance.com/ETHBTC?depth=0", 400, "invalid_request"),
        (headers, "/v1/books/binance.com/ETHBTC?depth=ten", 400, "invalid_request"),
        (headers, "/v1/books/binance.com/ETHBTC?max_age_ms=-1", 400, "invalid_request"),
        (headers, "/v1/books/binance.com/ETH%7BBTC", 400, "invalid_request"),
        (headers, "/v1/nothing", 404, "not_found"),
        (headers, "/v1/admin/tenants", 403, "forbidden"),
    ]
    for sent, path, status, code in cases:
        got, response_headers, body = await get(stack, path, sent)
        error = orjson.loads(body)
        validate(error, "Error")
        assert (got, error["error"]["code"]) == (status, code), (path, body)
        assert error["error"]["request_id"] == response_headers["x-request-id"]
        assert wrong_key not in body.decode()
    async with stack.http.delete(f"{stack.url}/v1/books/binance.com/ETHBTC", headers=headers) as r:
        assert r.status == 405 and (await r.json())["error"]["code"] == "method_not_allowed"


async def test_request_id_is_echoed_only_when_safe(stack: Stack) -> None:
    _, response_headers, _ = await get(stack, "/healthz", {"X-Request-ID": "abc.DEF-123_x"})
    assert response_headers["x-request-id"] == "abc.DEF-123_x"
    _, response_headers, _ = await get(stack, "/healthz", {"X-Request-ID": "bad id<script>"})
    assert response_headers["x-request-id"] != "bad id<script>" and response_headers["x-request-id"]


async def test_a_refused_venue_key_and_an_unplaced_book_say_why(stack: Stack) -> None:
    headers = await stack.subscriber(ALPACA, BTC)
    path = "/v1/books/alpaca-crypto/BTC%2FUSD"
    await stack.publish(ALPACA, 1, snapshot(0, 1, status=BookStatus.REFUSED, bids=[], asks=[]))
    status, response_headers, body = await get(stack, path, headers)
    assert status == 503 and response_headers["retry-after"] == "30"
    error = orjson.loads(body)["error"]
    assert error["code"] == "venue_refused" and "alpaca-crypto" in error["message"]
    _, _, body = await get(stack, path + "/info", headers)
    assert orjson.loads(body)["status"] == "refused"

    await UnplacedBooks(stack.store).replace({BTC: "1 replica(s) unplaced: no live node with room"})
    status, _, body = await get(stack, "/v1/books/binance.com/BTCUSDT", headers)
    assert status == 503
    error = orjson.loads(body)["error"]
    assert error["code"] == "book_unplaced" and "no live node with room" in error["message"]
    _, _, body = await get(stack, "/v1/books/binance.com/BTCUSDT/info", headers)
    info = orjson.loads(body)
    validate(info, "BookInfo")
    assert info["status"] == "unplaced" and "no live node" in info["reason"]
    _, _, body = await get(stack, "/v1/subscriptions", headers)
    listed = {s["market"]: s for s in orjson.loads(body)["subscriptions"]}
    validate(orjson.loads(body), "Subscriptions")
    assert listed["BTCUSDT"]["status"] == "unplaced" and "reason" in listed["BTCUSDT"]
    assert listed["BTC/USD"]["status"] == "refused"
    await UnplacedBooks(stack.store).replace({})
