"""The core without I/O: route matching, the error table, request ids, book rendering, UBDCC levels."""

from __future__ import annotations

from decimal import Decimal

import orjson
import pytest

from book_store.codec import Snapshot
from book_store.schema import InvalidBookIdError
from control_plane.errors import (
    BookNotSyncedError,
    ConflictError,
    InvalidRequestError,
    NotFoundError,
    RateLimitedError,
    UnknownMarketError,
)
from ladder_process.errors import StoreUnavailableError
from read_functions.app import routing
from read_functions.app.dispatch import request_id
from read_functions.app.errors import MethodNotAllowedError, error_response, status_for
from read_functions.app.messages import parse_query
from read_functions.app.routing import Router
from read_functions.books.render import Side, names_json, render
from read_functions.handlers.ubdcc.wire import levels_as_numbers
from read_functions.routes import COMPAT_ROUTES, ROUTES
from tests.read_functions.helpers import ETH, levels, snapshot

ROUTER = Router(ROUTES)


def test_static_and_templated_routes() -> None:
    route, params = ROUTER.match("GET", "/v1/exchanges")
    assert route.path == "/v1/exchanges" and params == {}
    route, params = ROUTER.match("GET", "/v1/books/alpaca-crypto/BTC%2FUSD/bids")
    assert route.path == "/v1/books/{exchange}/{market}/bids"
    assert params == {"exchange": "alpaca-crypto", "market": "BTC/USD"}
    route, params = ROUTER.match("DELETE", "/v1/subscriptions/binance.com/ETHBTC")
    assert route.method == "DELETE" and params["market"] == "ETHBTC"


def test_unknown_paths_methods_and_bad_escapes() -> None:
    with pytest.raises(NotFoundError):
        ROUTER.match("GET", "/v1/books/binance.com")
    with pytest.raises(NotFoundError):
        ROUTER.match("GET", "/v1/books/binance.com//bids")  # an empty segment names nothing
    with pytest.raises(MethodNotAllowedError, match="GET"):
        ROUTER.match("PUT", "/v1/books/binance.com/ETHBTC")
    with pytest.raises(MethodNotAllowedError, match="DELETE, GET, HEAD, POST") as refused:
        ROUTER.match("PUT", "/v1/subscriptions")
    assert refused.value.allowed == ("DELETE", "GET", "HEAD", "POST")
    with pytest.raises(MethodNotAllowedError, match=r"allowed: DELETE$"):
        ROUTER.match("HEAD", "/v1/subscriptions/binance.com/ETHBTC")  # HEAD needs a GET route


def test_head_is_answered_by_the_get_route() -> None:
    route, params = ROUTER.match("HEAD", "/v1/books/binance.com/ETHBTC")
    assert (route.method, params["market"]) == ("GET", "ETHBTC")
    assert ROUTER.match("HEAD", "/healthz")[0] is ROUTER.match("GET", "/healthz")[0]
    assert ROUTER.streams("GET", "/v1/stream") and not ROUTER.streams("GET", "/healthz")
    assert not ROUTER.streams("POST", "/v1/stream") and not ROUTER.streams("GET", "/nope")
    with pytest.raises(InvalidRequestError):
        ROUTER.match("GET", "/v1/books/binance.com/%FF%FE")
    assert {r.path for r in COMPAT_ROUTES} < {r.path for r in ROUTES}


def test_a_remembered_match_is_the_same_read_only_answer_and_memory_stays_bounded() -> None:
    router = Router(ROUTES)
    first = router.match("GET", "/v1/books/binance.com/ETHBTC")
    again = router.match("GET", "/v1/books/binance.com/ETHBTC")
    assert again is first
    with pytest.raises(TypeError):
        first[1]["market"] = "BTCUSDT"  # type: ignore[index]  # shared between requests: read-only
    with pytest.raises(MethodNotAllowedError):  # a remembered path still answers per method
        router.match("PUT", "/v1/books/binance.com/ETHBTC")
    for n in range(routing.MATCHES_KEPT + 10):
        router.match("GET", f"/v1/books/binance.com/M{n}")
    assert len(router._matched) <= routing.MATCHES_KEPT
    long_market = "X" * 300
    assert router.match("GET", f"/v1/books/binance.com/{long_market}")[1]["market"] == long_market
    assert all(len(path) < 300 for _, path in router._matched)


def test_query_strings_parse_once_first_value_wins_and_keys_are_never_kept() -> None:
    assert parse_query("") == {}
    depth = parse_query("depth=100")
    assert depth == {"depth": "100"} and parse_query("depth=100") is depth
    assert parse_query("depth=5&depth=7&side=a+b")["depth"] == "5"
    assert parse_query("side=a+b%2Fc")["side"] == "a b/c"
    keyed = parse_query("api_key=ldr_secret")
    assert keyed["api_key"] == "ldr_secret" and parse_query("api_key=ldr_secret") is not keyed


def test_duplicate_routes_are_refused() -> None:
    static = next(route for route in ROUTES if "{" not in route.path)
    templated = next(route for route in ROUTES if "{" in route.path)
    for route in (static, templated):
        with pytest.raises(ValueError, match="duplicate"):
            Router([route, route])


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (InvalidRequestError("x"), 400, "invalid_request"),
        (InvalidBookIdError("x"), 400, "invalid_request"),
        (UnknownMarketError("x"), 404, "unknown_market"),
        (MethodNotAllowedError("x"), 405, "method_not_allowed"),
        (ConflictError("x"), 409, "conflict"),
        (RateLimitedError("x", 2.5), 429, "rate_limited"),
        (BookNotSyncedError("x", 1.0), 503, "book_not_synced"),
        (StoreUnavailableError("redis://secret@host refused"), 503, "store_unavailable"),
        (ZeroDivisionError("secret detail"), 500, "internal"),
    ],
)
def test_the_error_table(error: Exception, status: int, code: str) -> None:
    assert status_for(error) == status
    response = error_response(error, "rid-1")
    body = orjson.loads(response.body)["error"]
    assert (response.status, body["code"], body["request_id"]) == (status, code, "rid-1")
    assert "secret" not in body["message"]
    if status in (429, 503):
        assert int(response.headers["Retry-After"]) >= 1


def test_request_ids() -> None:
    assert request_id("client-1.a_b") == "client-1.a_b"
    generated = {request_id(None) for _ in range(100)} | {request_id("x" * 65), request_id("a b")}
    assert len(generated) == 102


def test_rendered_book_is_the_stored_bytes_sliced() -> None:
    snap = Snapshot(snapshot(9, bids=levels(["3", "2", "1"]), asks=levels(["4", "5"])))
    view = render(names_json(ETH), snap, 2, Side.BOTH)
    book = orjson.loads(view.body(7))
    assert book["age_ms"] == 7 and book["bids"] == [["3", "1.0"], ["2", "1.0"]] and len(book["asks"]) == 2
    assert view.etag == 'W/"9.0.2.both"'
    assert "asks" not in orjson.loads(render(names_json(ETH), snap, 2, Side.BIDS).body(0))


def test_ubdcc_levels_are_numbers_with_the_venue_digits() -> None:
    snap = Snapshot(snapshot(1, bids=levels(["0.10000000", "0.09000000", "0.08000000"], "10.00000000")))
    assert (
        levels_as_numbers(snap, "bids", None, None) == b"[0.10000000,10.00000000],[0.09000000,10.00000000],"
        b"[0.08000000,10.00000000]"
    )
    assert orjson.loads(b"[%b]" % levels_as_numbers(snap, "bids", 1, None)) == [[0.1, 10.0]]
    # 1.0 + 0.9 = 1.9 <= 2; adding 0.8 would pass 2
    assert len(orjson.loads(b"[%b]" % levels_as_numbers(snap, "bids", None, Decimal(2)))) == 2
    assert len(orjson.loads(b"[%b]" % levels_as_numbers(snap, "bids", None, Decimal(0)))) == 1
    assert len(orjson.loads(b"[%b]" % levels_as_numbers(snap, "bids", 1, Decimal(100)))) == 1
