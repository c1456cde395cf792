"""JSON answers become typed models: exact decimals, aware datetimes, checked fields."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from ladder_sdk import APIResponseError, Book, CreatedKey, Level, NodeAssignment, UsageLimits
from ladder_sdk._wire import parse

BOOK = """{"exchange": "binance.com", "market": "ETHBTC", "update_id": 7281945,
 "event_time": 1764500000123, "ingest_time": 1764500000125, "publish_time": 1764500000126,
 "age_ms": 3, "replica": 1, "status": "synced", "truncated": false,
 "bids": [["0.03512000", "4.20000000"], ["0.03511000", "0.5"]],
 "asks": [["0.03513000", "1.00000000"], ["0.03520000", "2"]]}"""


def read_book(text: str) -> Book:
    return parse.book(parse.decode_json(text))


def test_a_book_says_when_a_side_stops_short_of_what_the_venue_holds() -> None:
    assert read_book(BOOK).truncated is False
    assert read_book(BOOK.replace('"truncated": false', '"truncated": true')).truncated is True
    with pytest.raises(APIResponseError):
        read_book(BOOK.replace('"truncated": false', '"truncated": "no"'))


def test_a_book_keeps_the_venues_decimal_strings_exactly() -> None:
    book = read_book(BOOK)
    assert book.bids[0] == Level(Decimal("0.03512000"), Decimal("4.20000000"))
    assert str(book.bids[0].price) == "0.03512000"  # trailing zeros survive: no float on the way
    assert book.asks == (
        Level(Decimal("0.03513000"), Decimal("1.00000000")),
        Level(Decimal("0.03520000"), Decimal("2")),
    )
    assert (book.exchange, book.market, book.update_id, book.replica, book.status, book.age_ms) == (
        "binance.com",
        "ETHBTC",
        7281945,
        1,
        "synced",
        3,
    )


def test_book_times_are_aware_utc_datetimes_with_the_raw_milliseconds_kept() -> None:
    book = read_book(BOOK)
    assert book.event_time_ms == 1764500000123
    assert book.event_time == datetime(2025, 11, 30, 10, 53, 20, 123000, tzinfo=UTC)
    assert book.ingest_time.microsecond == 125000
    assert book.publish_time.tzinfo is UTC
    assert book.publish_time_ms - book.event_time_ms == 3


def test_best_levels_spread_and_mid_are_exact() -> None:
    book = read_book(BOOK)
    assert book.best_bid == Level(Decimal("0.03512000"), Decimal("4.20000000"))
    assert book.best_ask is not None and book.best_ask.price == Decimal("0.03513000")
    assert book.spread == Decimal("0.00001000")
    assert book.mid == Decimal("0.035125")


def test_a_one_sided_answer_leaves_the_other_side_empty() -> None:
    data = json.loads(BOOK)
    del data["asks"]
    book = parse.book(data)
    assert book.asks == ()
    assert book.best_ask is None
    assert book.spread is None and book.mid is None
    assert book.best_bid is not None


def test_prices_sent_as_json_numbers_never_pass_through_float() -> None:
    text = BOOK.replace('"0.03512000"', "0.1").replace('"4.20000000"', "0.30000000000000004")
    book = read_book(text)
    assert book.bids[0].price == Decimal("0.1")
    assert book.bids[0].quantity == Decimal("0.30000000000000004")


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"update_id": "7"}, "update_id"),
        ({"update_id": True}, "update_id"),
        ({"exchange": None}, "exchange"),
        ({"bids": "none"}, "bids"),
        ({"bids": [["1", "2", "3"]]}, "[price, quantity]"),
        ({"asks": [["one", "2"]]}, "not a decimal"),
        ({"asks": [["NaN", "2"]]}, "finite"),
        ({"asks": [[None, "2"]]}, "decimal string"),
    ],
)
def test_an_ill_typed_book_names_what_is_wrong(change: dict[str, object], named: str) -> None:
    data = json.loads(BOOK) | change
    with pytest.raises(APIResponseError, match=named.replace("[", r"\[").replace("]", r"\]")):
        parse.book(data)


def test_a_body_that_is_not_json_or_not_an_object_is_an_api_response_error() -> None:
    with pytest.raises(APIResponseError, match="not JSON"):
        parse.decode_json(b"<html>")
    with pytest.raises(APIResponseError, match="JSON object"):
        parse.book([1, 2])


def test_listings_read_their_envelope() -> None:
    markets = parse.markets(
        {
            "markets": [
                {
                    "exchange": "binance.com",
                    "market": "ETHBTC",
                    "status": "TRADING",
                    "base": "ETH",
                    "quote": "BTC",
                }
            ]
        }
    )
    assert [(m.market, m.base, m.quote) for m in markets] == [("ETHBTC", "ETH", "BTC")]
    assert parse.exchanges({"exchanges": ["binance.com", "alpaca"]}) == ["binance.com", "alpaca"]
    with pytest.raises(APIResponseError):
        parse.exchanges({"exchanges": [1]})


def test_subscription_usage_and_keys() -> None:
    sub = parse.subscriptions(
        {
            "subscriptions": [
                {
                    "exchange": "b",
                    "market": "M",
                    "replicas": 2,
                    "depth": 500,
                    "created_at": 0,
                    "status": "synced",
                }
            ]
        }
    )[0]
    assert (sub.replicas, sub.status, sub.created_at) == (2, "synced", datetime(1970, 1, 1, tzinfo=UTC))
    assert sub.depth == 500
    unlisted = {"exchange": "b", "market": "M", "replicas": 1, "depth": 100, "created_at": 0}
    assert parse.subscription(unlisted).status is None
    for depth in (None, "100", True):
        with pytest.raises(APIResponseError, match="depth"):
            parse.subscription(unlisted | {"depth": depth})
    assert parse.subscription(unlisted).changed == {}
    lowered = parse.subscription(unlisted | {"changed": {"depth": {"from": 500, "to": 100}}})
    assert lowered.changed == {"depth": (500, 100)}
    with pytest.raises(APIResponseError, match=r"changed\.depth"):
        parse.subscription(unlisted | {"changed": {"depth": {"from": 500}}})
    fewer = {"replicas": {"from": 2, "to": 1}}
    bulk = parse.bulk_result(
        {
            "exchange": "b",
            "results": [{"market": "M", "result": "updated", "subscription": unlisted, "changed": fewer}],
        }
    )
    assert bulk.results[0].subscription is not None
    assert bulk.results[0].subscription.changed == {"replicas": (2, 1)}

    usage = parse.usage(
        {"tenant_id": "t1", "requests_total": 5, "minutes": [{"minute": 60000, "requests": 5}]}
    )
    assert usage.minutes[0].minute == datetime(1970, 1, 1, 0, 1, tzinfo=UTC)
    assert usage.requests_total == 5
    assert usage.limits is None and usage.markets is None  # an older server's answer
    limits = {"max_markets": 5, "max_replicas": 2, "max_depth": 700, "rate_limit_rps": 2.5, "burst": 9}
    usage = parse.usage({"tenant_id": "t1", "requests_total": 5, "minutes": [], "limits": limits,
                         "markets": 3, "most_replicas": 2, "deepest": 500})  # fmt: skip
    assert usage.limits == UsageLimits(5, 2, 700, 2.5, 9)
    assert (usage.markets, usage.most_replicas, usage.deepest) == (3, 2, 500)
    assert usage.streams is None and usage.limits.max_streams is None  # a server before max_streams
    usage = parse.usage({"tenant_id": "t1", "requests_total": 5, "minutes": [],
                         "limits": {**limits, "max_streams": 100}, "streams": 7})  # fmt: skip
    assert usage.limits is not None and (usage.streams, usage.limits.max_streams) == (7, 100)
    with pytest.raises(APIResponseError, match="max_depth"):
        parse.usage(
            {"tenant_id": "t1", "requests_total": 5, "minutes": [], "limits": {**limits, "max_depth": "x"}}
        )
    account = parse.account({"role": "operator", "tenant_id": None, "tenant_name": None})
    assert (account.role, account.tenant_id) == ("operator", None)

    key = parse.api_keys(
        {
            "keys": [
                {
                    "id": "k1",
                    "prefix": "ldr_",
                    "last4": "abcd",
                    "created_at": 1000,
                    "last_used_at": None,
                    "expires_at": 2000,
                    "revoked_at": None,
                }
            ]
        }
    )[0]
    assert key.last_used_at is None and key.revoked_at is None
    assert key.expires_at == datetime(1970, 1, 1, 0, 0, 2, tzinfo=UTC)


def test_tenant_and_operator_listings() -> None:
    tenant = parse.tenant(
        {
            "id": "t1",
            "name": "acme",
            "max_markets": 10,
            "max_replicas": 2,
            "max_depth": 1000,
            "rate_limit_rps": 12.5,
            "burst": 20,
            "disabled": False,
            "created_at": 0,
        }
    )
    assert (tenant.name, tenant.rate_limit_rps, tenant.disabled) == ("acme", 12.5, False)
    assert tenant.max_depth == 1000 and tenant.max_streams is None  # a server before max_streams
    assert parse.tenant({**tenant.__dict__, "created_at": 0, "max_streams": 500}).max_streams == 500
    with pytest.raises(APIResponseError, match="max_depth"):
        parse.tenant({**tenant.__dict__, "created_at": 0, "max_depth": "deep"})
    with pytest.raises(APIResponseError, match="disabled"):
        parse.tenant({**tenant.__dict__, "created_at": 0, "disabled": "no"})

    node = parse.nodes(
        {
            "nodes": [
                {
                    "id": "n1",
                    "heartbeat_at": 5000,
                    "live": True,
                    "capacity": 9,
                    "assignments": [{"exchange": "b", "market": "M", "replica": 2, "node_id": "n1"}],
                }
            ]
        }
    )[0]
    assert node.id == "n1" and node.heartbeat_at == datetime(1970, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert (node.live, node.draining, node.address) == (True, None, None)
    assert node.assignments == (NodeAssignment("b", "M", 2),)
    assert node.raw["capacity"] == 9  # what the SDK does not model is still there
    entry = parse.audit(
        {
            "audit": [
                {"at": 0, "actor": "operator", "action": "tenant.create", "target": "t1", "detail": {"n": 1}}
            ]
        }
    )[0]
    assert (entry.actor, entry.action, entry.target, entry.detail["n"]) == (
        "operator",
        "tenant.create",
        "t1",
        1,
    )
    with pytest.raises(APIResponseError, match="actor"):
        parse.audit_entry({"at": 0, "action": "x", "target": "y"})
    assert node.stats is None
    reported = parse.node({"id": "n2", "stats": {"replicas": 3, "process": {"cpu_s": 1.5}}})
    assert reported.stats is not None and reported.stats["replicas"] == 3


def test_cluster_books_and_egress() -> None:
    replica = {
        "replica": 1,
        "node_id": None,
        "status": "stale",
        "update_id": None,
        "age_ms": None,
        "resyncs": {"gap": 2, "disconnect": 1},
        "restarts": 3,
        "stale_episodes": None,
        "mismatches": 1,
        "audit_mismatches": 0,
    }
    [book] = parse.cluster_books(
        {
            "books": [{"exchange": "b", "market": "M", "status": "stale", "replicas": [replica]}],
            "disagreements": [],
        }
    )
    [state] = book.replicas
    assert (book.status, state.node_id, state.restarts, state.resyncs["gap"]) == ("stale", None, 3, 2)
    with pytest.raises(APIResponseError, match="resyncs"):
        parse.replica_state(replica | {"resyncs": {"gap": "2"}})
    pool = {
        "egress_id": "e",
        "pool": "p",
        "used": 5,
        "limit": 10,
        "window_ends_in_ms": 100,
        "closed_for_ms": 0,
        "refusals": {"429": 1, "418": 0},
        "exchanges": ["b"],
        "nodes": ["n1"],
        "weight_spent": 7,
    }
    [budget] = parse.egress({"egress": [pool]})
    assert (budget.used, budget.limit, budget.refusals["429"], budget.nodes) == (5, 10, 1, ("n1",))
    with pytest.raises(APIResponseError, match="nodes"):
        parse.egress({"egress": [pool | {"nodes": [1]}]})


def test_created_key_repr_and_str_never_show_the_secret() -> None:
    new_key = "ldr_abcdefghijklmnopqrstuvwxyz0123456789AB"
    created = parse.created_key({"id": "k9", "key": new_key, "prefix": "ldr_", "last4": "89AB"})
    assert created.key == new_key
    assert new_key not in repr(created) and new_key not in str(created)
    assert "k9" in repr(created)
    assert isinstance(created, CreatedKey)


def test_models_are_frozen() -> None:
    book = read_book(BOOK)
    with pytest.raises(AttributeError):
        book.update_id = 1  # type: ignore[misc]
