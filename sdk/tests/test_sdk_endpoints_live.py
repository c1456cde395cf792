"""Every endpoint, from both the sync and the async client, against a real HTTP server."""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
from ladder_sdk import (
    Account,
    ApiKey,
    AsyncLadder,
    AsyncLadderAdmin,
    AuditEntry,
    Book,
    BookRead,
    BulkResult,
    ClusterBook,
    ConfigurationError,
    ConsolidatedBook,
    ConsolidatedTop,
    CreatedKey,
    EgressBudget,
    Ladder,
    LadderAdmin,
    Market,
    Node,
    PairResult,
    Subscription,
    Tenant,
    Top,
    Usage,
)

NEW_KEY = "ldr_NEWnewNEWnewNEWnewNEWnewNEWnew654321"
TENANT = {
    "id": "t1",
    "name": "acme",
    "max_markets": 5,
    "max_replicas": 2,
    "max_depth": 1000,
    "rate_limit_rps": 10,
    "burst": 20,
    "disabled": False,
    "created_at": 1764500000000,
}
KEY = {
    "id": "k1",
    "prefix": "ldr_",
    "last4": "wxyz",
    "created_at": 1,
    "last_used_at": None,
    "expires_at": 5,
    "revoked_at": None,
}
MARKET = {"exchange": "binance.com", "market": "ETHBTC", "status": "TRADING", "base": "ETH", "quote": "BTC"}
NODE = {
    "id": "node-1",
    "address": "127.0.0.1:9100",
    "capacity": 100,
    "started_at": 1,
    "heartbeat_at": 2,
    "draining": False,
    "load": 1.5,
    "live": True,
    "assignments": [{"exchange": "binance.com", "market": "ETHBTC", "replica": 1, "node_id": "node-1"}],
}
USAGE = {
    "tenant_id": "t1",
    "requests_total": 3,
    "minutes": [{"minute": 0, "requests": 3}],
    "limits": {"max_markets": 5, "max_replicas": 2, "max_depth": 1000, "rate_limit_rps": 10, "burst": 20},
    "markets": 1,
    "most_replicas": 2,
    "deepest": 100,
}
REPLICA = {
    "replica": 0,
    "node_id": "node-1",
    "status": "synced",
    "update_id": 9,
    "publish_time": 1,
    "age_ms": 3,
    "resyncs": {"gap": 1},
    "restarts": 1,
    "handovers": 0,
    "stale_episodes": 0,
    "refreshes": 0,
    "audits": 0,
    "audit_mismatches": 0,
    "last_audit_ms": None,
    "mismatches": 0,
}
BOOKS = {
    "books": [{"exchange": "binance.com", "market": "ETHBTC", "status": "synced", "replicas": [REPLICA]}],
    "disagreements": [],
}
EGRESS = {
    "egress": [
        {
            "egress_id": "default",
            "pool": "api.binance.com",
            "limit": 4800,
            "used": 20,
            "window_ends_in_ms": 1000,
            "closed_for_ms": 0,
            "exchanges": ["binance.com"],
            "nodes": ["node-1"],
            "weight_spent": 20,
            "refusals": {"429": 0, "418": 0},
        }
    ]
}
AUDIT = {"at": 3, "actor": "operator", "action": "tenant.create", "target": "t1", "detail": {"name": "acme"}}
SUB = {"exchange": "binance.com", "market": "ETHBTC", "replicas": 2, "depth": 100, "created_at": 1}
BULK = {
    "exchange": "binance.com",
    "created": 1,
    "updated": 0,
    "failed": 1,
    "results": [
        {"market": "ETHBTC", "result": "created", "subscription": SUB},
        {"market": "NOPE", "result": "failed", "error": {"code": "unknown_market", "message": "no"}},
    ],
}
UNBULK = {
    "exchange": "binance.com",
    "deleted": 1,
    "failed": 0,
    "results": [{"market": "ETHBTC", "result": "deleted"}],
}
TOPS = {
    "tops": [
        {"exchange": "binance.com", "market": "BTCUSDT", "status": "synced", "update_id": 5,
         "publish_time": 1, "replica": 0, "age_ms": 3, "truncated": False, "bid": ["1.0", "2"], "ask": None},
        {"exchange": "binance.com", "market": "ETHBTC", "status": "resyncing"},
    ]
}  # fmt: skip
MERGED = {
    "id": "okx:BTC-USDT",
    "exchange": "okx",
    "market": "BTC-USDT",
    "quote": "USDT",
    "update_id": 9,
    "replica": 1,
    "status": "synced",
    "truncated": False,
    "publish_time": 1,
    "age_ms": 4,
}
CONSOLIDATED = {
    "base": "BTC",
    "quote": "USDT",
    "quotes": ["USDT"],
    "depth": 5,
    "books": [MERGED | {"id": "binance.com:BTCUSDT", "exchange": "binance.com", "market": "BTCUSDT"}, MERGED],
    "left_out": [
        {
            "exchange": "bybit",
            "market": "BTCUSDT",
            "code": "book_not_synced",
            "message": "no",
            "status": "resyncing",
        },
        {
            "exchange": "coinbase",
            "market": "BTC-USDC",
            "code": "alias",
            "message": "another name of coinbase BTC-USD, merged once",
            "alias_of": "BTC-USD",
        },
    ],
    "crossed": False,
    "truncated": False,
    "bids": [
        ["100", "1.5", {"binance.com:BTCUSDT": "1.00000000", "okx:BTC-USDT": "0.5"}],
        ["99.5", "2", {"okx:BTC-USDT": "2"}],
    ],
    "asks": [
        ["100.5", "0.25", {"binance.com:BTCUSDT": "0.25000000"}],
        ["101", "3", {"okx:BTC-USDT": "1", "binance.com:BTCUSDT": "2.00000000"}],
    ],
}
CONSOLIDATED_TOPS = {
    "tops": [
        {k: v for k, v in CONSOLIDATED.items() if k not in ("depth", "bids", "asks")}
        | {"bid": CONSOLIDATED["bids"][0], "ask": None},  # type: ignore[index]
        {"pair": "LTC-USDT", "error": {"code": "unknown_market", "message": "no"}},
    ]
}
PAIR = {
    "pair": "BTC-USDT",
    "created": 1,
    "updated": 0,
    "skipped": 1,
    "failed": 1,
    "results": [
        {"exchange": "okx", "market": "BTC-USDT", "result": "created", "subscription": SUB},
        {
            "exchange": "coinbase",
            "market": "BTC-USDC",
            "result": "skipped",
            "alias_of": "BTC-USD",
            "error": {"code": "alias", "message": "another name of coinbase BTC-USD, subscribed once"},
        },
        {
            "exchange": "alpaca-crypto",
            "result": "failed",
            "error": {"code": "unknown_market", "message": "no"},
        },
    ],
}


@dataclass(frozen=True)
class Case:
    """One client method call and the request and answer it must come with."""

    call: str
    args: tuple[object, ...]
    kwargs: dict[str, object]
    method: str
    raw_path: str
    status: int
    answer: object
    result: type | None
    query: dict[str, str] = field(default_factory=dict)
    body: object = None


TENANT_CASES = [
    Case("book", ("binance.com", "ETHBTC"), {"depth": 5, "max_age_ms": 250},
         "GET", "/v1/books/binance.com/ETHBTC", 200, None, Book, query={"depth": "5", "max_age_ms": "250"}),
    Case("bids", ("alpaca", "BTC/USD"), {},
         "GET", "/v1/books/alpaca/BTC%2FUSD/bids", 200, None, Book),
    Case("asks", ("binance.com", "ETHBTC"), {"depth": 1},
         "GET", "/v1/books/binance.com/ETHBTC/asks", 200, None, Book, query={"depth": "1"}),
    Case("markets", (), {"exchange": "binance.com"},
         "GET", "/v1/markets", 200, {"markets": [MARKET]}, Market, query={"exchange": "binance.com"}),
    Case("exchanges", (), {},
         "GET", "/v1/exchanges", 200, {"exchanges": ["binance.com"]}, str),
    Case("subscribe", ("binance.com", "ETHBTC"), {"replicas": 2},
         "POST", "/v1/subscriptions", 201, SUB, Subscription,
         body={"exchange": "binance.com", "market": "ETHBTC", "replicas": 2}),
    Case("subscribe", ("binance.com-futures", "BTCUSDT"), {"depth": 1000},
         "POST", "/v1/subscriptions", 200, SUB | {"depth": 1000}, Subscription,
         body={"exchange": "binance.com-futures", "market": "BTCUSDT", "depth": 1000}),
    Case("subscribe_many", ("binance.com", ("ETHBTC", "NOPE")), {"replicas": 2},
         "POST", "/v1/subscriptions/bulk", 200, BULK, BulkResult,
         body={"exchange": "binance.com", "markets": ["ETHBTC", "NOPE"], "replicas": 2}),
    Case("subscribe_all", ("binance.com",), {"quote": "USDT", "depth": 50},
         "POST", "/v1/subscriptions/bulk", 200, BULK, BulkResult,
         body={"exchange": "binance.com", "quote": "USDT", "depth": 50}),
    Case("unsubscribe_many", ("binance.com", ["ETHBTC", "BTCUSDT"]), {},
         "DELETE", "/v1/subscriptions", 200, UNBULK, BulkResult,
         query={"exchange": "binance.com", "markets": "ETHBTC,BTCUSDT"}),
    Case("unsubscribe_all", ("binance.com",), {"base": "ETH"},
         "DELETE", "/v1/subscriptions", 200, UNBULK, BulkResult,
         query={"exchange": "binance.com", "base": "ETH"}),
    Case("tops", (), {"exchange": "binance.com"},
         "GET", "/v1/tops", 200, TOPS, Top, query={"exchange": "binance.com"}),
    Case("books", ("binance.com", ["ETHBTC", "NOPE"]), {"depth": 5},
         "GET", "/v1/books", 200, None, BookRead,
         query={"exchange": "binance.com", "markets": "ETHBTC,NOPE", "depth": "5"}),
    Case("consolidated", ("BTC-USDT", ["binance.com", "okx"]),
         {"depth": 5, "quotes": ("USDT",), "max_age_ms": 9},
         "GET", "/v1/consolidated/BTC-USDT", 200, CONSOLIDATED, ConsolidatedBook,
         query={"venues": "binance.com,okx", "quotes": "USDT", "depth": "5", "max_age_ms": "9"}),
    Case("consolidated_tops", (["BTC-USDT", "LTC-USDT"],), {},
         "GET", "/v1/consolidated/tops", 200, CONSOLIDATED_TOPS, ConsolidatedTop,
         query={"pairs": "BTC-USDT,LTC-USDT"}),
    Case("subscribe_pair", ("BTC-USDT", ("okx", "alpaca-crypto")), {"depth": 50},
         "POST", "/v1/subscriptions/consolidated", 200, PAIR, PairResult,
         body={"pair": "BTC-USDT", "venues": ["okx", "alpaca-crypto"], "depth": 50}),
    Case("unsubscribe", ("alpaca", "BTC/USD"), {},
         "DELETE", "/v1/subscriptions/alpaca/BTC%2FUSD", 204, None, None),
    Case("subscriptions", (), {},
         "GET", "/v1/subscriptions", 200, {"subscriptions": [SUB | {"status": "synced"}]}, Subscription),
    Case("account", (), {},
         "GET", "/v1/account", 200, {"role": "tenant", "tenant_id": "t1", "tenant_name": "acme"}, Account),
    Case("usage", (), {},
         "GET", "/v1/usage", 200, USAGE, Usage),
    Case("keys", (), {},
         "GET", "/v1/keys", 200, {"keys": [KEY]}, ApiKey),
    Case("create_key", (), {"expires_in_s": 60},
         "POST", "/v1/keys", 201, {"id": "k2", "key": NEW_KEY}, CreatedKey, body={"expires_in_s": 60}),
    Case("revoke_key", ("k/1",), {"grace_s": 30},
         "DELETE", "/v1/keys/k%2F1", 204, None, None, query={"grace_s": "30"}),
]  # fmt: skip

ADMIN_CASES = [
    Case("create_tenant", ("acme",), {"max_markets": 5, "rate_limit_rps": 10},
         "POST", "/v1/admin/tenants", 201, TENANT, Tenant,
         body={"name": "acme", "max_markets": 5, "rate_limit_rps": 10}),
    Case("create_tenant", ("deep",), {"max_depth": 5000},
         "POST", "/v1/admin/tenants", 201, TENANT | {"max_depth": 5000}, Tenant,
         body={"name": "deep", "max_depth": 5000}),
    Case("create_tenant", ("streamer",), {"max_streams": 500},
         "POST", "/v1/admin/tenants", 201, TENANT | {"max_streams": 500}, Tenant,
         body={"name": "streamer", "max_streams": 500}),
    Case("tenants", (), {},
         "GET", "/v1/admin/tenants", 200, {"tenants": [TENANT]}, Tenant),
    Case("tenant", ("t1",), {},
         "GET", "/v1/admin/tenants/t1", 200, TENANT, Tenant),
    Case("update_tenant", ("t1",), {"disabled": True, "burst": 5},
         "PATCH", "/v1/admin/tenants/t1", 200, TENANT | {"disabled": True}, Tenant,
         body={"disabled": True, "burst": 5}),
    Case("update_tenant", ("t1",), {"max_depth": 20},
         "PATCH", "/v1/admin/tenants/t1", 200, TENANT | {"max_depth": 20}, Tenant, body={"max_depth": 20}),
    Case("update_tenant", ("t1",), {"max_streams": 0},
         "PATCH", "/v1/admin/tenants/t1", 200, TENANT | {"max_streams": 0}, Tenant, body={"max_streams": 0}),
    Case("create_tenant_key", ("t1",), {},
         "POST", "/v1/admin/tenants/t1/keys", 201, {"id": "k3", "key": NEW_KEY}, CreatedKey, body={}),
    Case("tenant_keys", ("t1",), {},
         "GET", "/v1/admin/tenants/t1/keys", 200, {"keys": [KEY | {"revoked_at": 9}]}, ApiKey),
    Case("revoke_key", ("k1",), {},
         "DELETE", "/v1/admin/keys/k1", 204, None, None),
    Case("nodes", (), {},
         "GET", "/v1/admin/nodes", 200, {"nodes": [NODE]}, Node),
    Case("tenant_usage", ("t1",), {},
         "GET", "/v1/admin/tenants/t1/usage", 200, USAGE, Usage),
    Case("books", (), {},
         "GET", "/v1/admin/books", 200, BOOKS, ClusterBook),
    Case("egress", (), {},
         "GET", "/v1/admin/egress", 200, EGRESS, EgressBudget),
    Case("audit", (), {"limit": 5},
         "GET", "/v1/admin/audit", 200, {"audit": [AUDIT]}, AuditEntry, query={"limit": "5"}),
]  # fmt: skip


def script(server: Any, case: Case) -> None:
    answer = server.book(7, "alpaca", "BTC/USD") if case.result is Book else case.answer
    if case.result is BookRead:
        failed = {
            "exchange": "binance.com",
            "market": "NOPE",
            "error": {"code": "unknown_market", "message": "no"},
        }
        answer = {"books": [server.book(7, "binance.com", "ETHBTC"), failed]}
    server.script(case.method, case.raw_path, (case.status, answer))


def check(server: Any, case: Case, result: object, api_key: str) -> None:
    (seen,) = server.requests_to(case.raw_path)
    assert seen.method == case.method
    assert seen.query == case.query
    assert seen.headers["Authorization"] == f"Bearer {api_key}"
    assert re.fullmatch(r"[0-9a-f]{32}-0", seen.headers["X-Request-ID"])
    assert seen.headers["User-Agent"].startswith("ladder-sdk/0.1.0 ")
    assert (json.loads(seen.body) if seen.body else None) == case.body
    if case.result is None:
        assert result is None
    elif isinstance(result, list):
        assert result and all(isinstance(item, case.result) for item in result)
    else:
        assert isinstance(result, case.result)


@pytest.mark.parametrize("case", TENANT_CASES + ADMIN_CASES, ids=lambda case: case.call)
def test_sync_clients_send_and_read_every_endpoint(server: Any, api_key: str, case: Case) -> None:
    script(server, case)
    kind = LadderAdmin if case in ADMIN_CASES else Ladder
    with kind(api_key, base_url=server.url) as client:
        result = getattr(client, case.call)(*case.args, **case.kwargs)
    check(server, case, result, api_key)


@pytest.mark.parametrize("case", TENANT_CASES + ADMIN_CASES, ids=lambda case: case.call)
async def test_async_clients_send_and_read_every_endpoint(server: Any, api_key: str, case: Case) -> None:
    script(server, case)
    kind = AsyncLadderAdmin if case in ADMIN_CASES else AsyncLadder
    async with kind(api_key, base_url=server.url) as client:
        pending = getattr(client, case.call)(*case.args, **case.kwargs)
        assert inspect.isawaitable(pending)
        result = await pending
    check(server, case, result, api_key)


def test_every_client_method_is_covered_by_a_case() -> None:
    streams = {"stream", "watch"}  # WebSockets: test_sdk_stream_live, tests/.../test_multiplex
    tenant = {name for name in dir(Ladder) if not name.startswith("_")} - {"close", "base_url", *streams}
    admin = {name for name in dir(LadderAdmin) if not name.startswith("_")} - {"close", "base_url"}
    assert tenant == {case.call for case in TENANT_CASES}
    assert admin == {case.call for case in ADMIN_CASES}


def test_bulk_and_multi_book_answers_are_read_in_full(server: Any, api_key: str) -> None:
    server.script("POST", "/v1/subscriptions/bulk", (200, BULK))
    server.script("GET", "/v1/tops", (200, TOPS))
    failed = {
        "exchange": "binance.com",
        "market": "NOPE",
        "error": {"code": "unknown_market", "message": "no"},
    }
    server.script("GET", "/v1/books", (200, {"books": [server.book(7, "binance.com", "ETHBTC"), failed]}))
    with Ladder(api_key, base_url=server.url) as client:
        bulk = client.subscribe_all("binance.com", quote="USDT")
        synced, resyncing = client.tops()
        book, missing = client.books("binance.com", ["ETHBTC", "NOPE"])
    assert (bulk.count("created"), bulk.count("failed")) == (1, 1)
    assert bulk.results[0].subscription is not None and bulk.results[0].subscription.replicas == 2
    assert [(r.market, r.error_code) for r in bulk.failed] == [("NOPE", "unknown_market")]
    assert synced.synced and synced.bid is not None and str(synced.bid.price) == "1.0" and synced.ask is None
    assert (synced.update_id, synced.age_ms, synced.truncated) == (5, 3, False)
    assert not resyncing.synced and resyncing.update_id is None and resyncing.bid is None
    assert book.ok and book.book is not None and book.book.update_id == 7
    assert not missing.ok and (missing.market, missing.error_code) == ("NOPE", "unknown_market")


def test_consolidated_answers_are_read_in_full_and_price_a_fill_exactly(server: Any, api_key: str) -> None:
    server.script("GET", "/v1/consolidated/BTC-USDT", (200, CONSOLIDATED))
    server.script("GET", "/v1/consolidated/tops", (200, CONSOLIDATED_TOPS))
    server.script("POST", "/v1/subscriptions/consolidated", (200, PAIR))
    with Ladder(api_key, base_url=server.url) as client:
        merged = client.consolidated("BTC-USDT")
        top, missing = client.consolidated_tops(["BTC-USDT", "LTC-USDT"])
        pair = client.subscribe_pair("BTC-USDT", ["okx", "alpaca-crypto"])
    assert [b.id for b in merged.books] == ["binance.com:BTCUSDT", "okx:BTC-USDT"]
    assert [(b.exchange, b.code, b.status, b.alias_of) for b in merged.left_out] == [
        ("bybit", "book_not_synced", "resyncing", None),
        ("coinbase", "alias", None, "BTC-USD"),
    ]
    best = merged.best_bid
    assert best is not None and best.quantity == Decimal("1.5")
    assert dict(best.books) == {"binance.com:BTCUSDT": Decimal("1"), "okx:BTC-USDT": Decimal("0.5")}
    assert merged.spread == Decimal("0.5") and not merged.crossed
    buy = merged.cost_to_fill("buy", "1.25")
    assert (buy.filled, buy.cost, buy.complete) == (Decimal("1.25"), Decimal("126.125"), True)
    assert buy.average_price == Decimal("100.9")
    assert dict(buy.books) == {  # the 101 level's parts are taken in the order the answer gives them
        "binance.com:BTCUSDT": (Decimal("0.25"), Decimal("25.125")),
        "okx:BTC-USDT": (Decimal("1"), Decimal("101")),
    }
    assert top.ok and top.pair == "BTC-USDT" and top.bid == best and top.ask is None
    assert not missing.ok and (missing.pair, missing.error_code) == ("LTC-USDT", "unknown_market")
    assert [(r.exchange, r.market, r.result, r.alias_of) for r in pair.results] == [
        ("okx", "BTC-USDT", "created", None),
        ("coinbase", "BTC-USDC", "skipped", "BTC-USD"),
        ("alpaca-crypto", "", "failed", None),
    ]
    assert pair.count("created") == 1 and pair.failed[0].error_code == "unknown_market"
    skipped = pair.results[1]
    assert skipped.ok and skipped.subscription is None and skipped.error_code == "alias"
    assert pair.count("skipped") == 1 and len(pair.failed) == 1


def test_update_tenant_refuses_unknown_fields_before_sending(server: Any, api_key: str) -> None:
    with LadderAdmin(api_key, base_url=server.url) as admin:
        with pytest.raises(ConfigurationError, match="max_markets"):
            admin.update_tenant("t1", max_market=3)
        with pytest.raises(ConfigurationError):
            admin.update_tenant("t1")
    assert server.seen == []
