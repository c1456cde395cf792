"""The one route list of the API, and the subset the UBDCC compat listener serves.

Every route says who may call it, what it takes and what it answers; the dispatcher serves from
this list and :mod:`read_functions.app.openapi` documents from it, so the two cannot drift apart.
"""

from __future__ import annotations

import orjson

from read_functions.app import openapi
from read_functions.app.messages import JSON, Request, Response
from read_functions.app.routing import Audience, Handler, Param, Reply, Route
from read_functions.app.schemas import ref
from read_functions.deps import Deps
from read_functions.handlers import account, admin, catalog, cluster, console, service, subscriptions
from read_functions.handlers.reads import book_info, books, bulk_reads, consolidated
from read_functions.handlers.reads.consolidated_stream import open_consolidated_stream
from read_functions.handlers.reads.multiplex import open_stream
from read_functions.handlers.ubdcc import handlers as ubdcc

PUBLIC, TENANT, ADMIN = Audience.PUBLIC, Audience.TENANT, Audience.ADMIN

_DEPTH = Param(
    "depth", {"type": "integer", "minimum": 1}, "Levels per side (default 100; capped at what is stored)."
)
_MAX_AGE = Param("max_age_ms", {"type": "integer", "minimum": 0}, "Refuse (503 book_too_old) an older book.")
_BOOK_PARAMS = (_DEPTH, _MAX_AGE)
_CONSOLIDATED_PARAMS = (
    Param(
        "venues",
        {"type": "string"},
        f"Comma-separated exchanges, at most {consolidated.MAX_VENUES} (default: every book of the pair "
        "the tenant subscribes to).",
    ),
    Param(
        "quotes",
        {"type": "string"},
        f"Comma-separated quote currencies to merge as one, the pair's own among them, at most "
        f"{consolidated.MAX_QUOTES} (default: the pair's own only).",
    ),
    _MAX_AGE,
)
_BOOK_HEADERS = ("ETag",)
NO_CONTENT = {204: Reply("Done.", None)}


def _ok(schema: str, status: int = 200, description: str = "OK.") -> dict[int, Reply]:
    return {status: Reply(description, ref(schema))}


def _book_route(suffix: str, handler: Handler[Deps], schema: str, what: str) -> Route[Deps]:
    return Route(
        "GET",
        f"/v1/books/{{exchange}}/{{market}}{suffix}",
        handler,
        TENANT,
        f"Read {what} of one book",
        "books",
        _BOOK_PARAMS,
        replies={
            200: Reply("The book.", ref(schema), headers=_BOOK_HEADERS),
            304: Reply("Not modified since the ETag sent in If-None-Match.", None),
        },
        operation_id=f"get_book{suffix.replace('/', '_')}",
    )


def _document_bytes() -> bytes:
    global _DOCUMENT
    if _DOCUMENT is None:
        _DOCUMENT = orjson.dumps(openapi.document(ROUTES))
    return _DOCUMENT


_DOCUMENT: bytes | None = None


async def openapi_json(request: Request, deps: Deps) -> Response:
    """``GET /openapi.json``: the document of :data:`ROUTES`, rendered once."""
    return Response(200, _document_bytes(), JSON, {})


_UBDCC_BOOK = (
    Param("exchange", {"type": "string"}, "Exchange id."),
    Param("market", {"type": "string"}, "Market."),
)
_UBDCC_READ = (
    *_UBDCC_BOOK,
    Param("limit_count", {"type": "integer", "minimum": 0}, "At most this many levels."),
    Param(
        "threshold_volume",
        {"type": "number", "minimum": 0},
        "Keep levels while the running sum of price x quantity stays at or under this.",
    ),
    Param("debug", {"type": "string"}, "'true' adds a debug block."),
)
_UBDCC_DEBUG = (Param("debug", {"type": "string"}, "'true' adds a debug block."),)
_UBDCC_CREATE = (
    *_UBDCC_BOOK,
    Param("markets", {"type": "string"}, "Comma-separated markets (create_depthcaches)."),
    Param("desired_quantity", {"type": "integer", "minimum": 1}, "Replicas."),
    Param("update_interval", {"type": "integer"}, "Accepted, not used."),
    Param("refresh_interval", {"type": "integer"}, "Accepted, not used."),
    *_UBDCC_DEBUG,
)
_UBDCC_REPLY = {200: Reply("UBDCC envelope (application errors too: result ERROR).", ref("Ubdcc"))}


def _ubdcc(
    method: str,
    name: str,
    handler: Handler[Deps],
    params: tuple[Param, ...],
    summary: str,
    *,
    mutates: bool = False,
) -> Route[Deps]:
    body = ref("UbdccCreate") if method == "POST" else None
    return Route(
        method,
        f"/{name}",
        handler,
        TENANT,
        summary,
        "ubdcc",
        params if method == "GET" else _UBDCC_DEBUG,
        body=body,
        replies=_UBDCC_REPLY,
        operation_id=f"ubdcc_{name}_{method.lower()}",
        mutates=mutates,
    )


UBDCC_ROUTES: tuple[Route[Deps], ...] = (
    Route(
        "GET",
        "/test",
        ubdcc.test,
        PUBLIC,
        "UBDCC connection test",
        "ubdcc",
        replies=_UBDCC_REPLY,
        operation_id="ubdcc_test",
    ),
    _ubdcc(
        "GET",
        "create_depthcache",
        ubdcc.create_depthcache,
        _UBDCC_CREATE,
        "Subscribe to one book",
        mutates=True,
    ),
    _ubdcc("POST", "create_depthcache", ubdcc.create_depthcache, (), "Subscribe to one book"),
    _ubdcc(
        "GET",
        "create_depthcaches",
        ubdcc.create_depthcaches,
        _UBDCC_CREATE,
        "Subscribe to many books",
        mutates=True,
    ),
    _ubdcc("POST", "create_depthcaches", ubdcc.create_depthcaches, (), "Subscribe to many books"),
    _ubdcc("GET", "get_asks", ubdcc.get_asks, _UBDCC_READ, "Asks as numbers"),
    _ubdcc("GET", "get_bids", ubdcc.get_bids, _UBDCC_READ, "Bids as numbers"),
    _ubdcc("GET", "get_depthcache_list", ubdcc.get_depthcache_list, _UBDCC_DEBUG, "The caller's books"),
    _ubdcc(
        "GET", "get_depthcache_info", ubdcc.get_depthcache_info, (*_UBDCC_BOOK, *_UBDCC_DEBUG), "One book"
    ),
    _ubdcc(
        "GET",
        "stop_depthcache",
        ubdcc.stop_depthcache,
        (*_UBDCC_BOOK, *_UBDCC_DEBUG),
        "Unsubscribe",
        mutates=True,
    ),
    _ubdcc("GET", "get_cluster_info", ubdcc.get_cluster_info, _UBDCC_DEBUG, "Service overview"),
    _ubdcc("POST", "add_credentials", ubdcc.add_credentials, (), "Not needed by Ladder (error #8002)"),
    _ubdcc("POST", "remove_credentials", ubdcc.remove_credentials, (), "Not needed by Ladder (error #8002)"),
    _ubdcc(
        "GET", "get_credentials_list", ubdcc.get_credentials_list, _UBDCC_DEBUG, "Not needed (error #8002)"
    ),
)

HEALTH_ROUTES: tuple[Route[Deps], ...] = (
    Route("GET", "/healthz", service.healthz, PUBLIC, "The process is up", "service", replies=_ok("Status")),
    Route(
        "GET",
        "/readyz",
        service.readyz,
        PUBLIC,
        "The store answers and every served exchange has its market list",
        "service",
        replies={
            200: Reply("Ready; each served exchange's catalog state.", ref("Readiness")),
            503: Reply(
                "Not ready: the store is unreachable, the change feed is down, or an exchange's market "
                "list could not be fetched (catalog_unavailable, with each exchange's state).",
                ref("NotReady"),
                headers=("Retry-After",),
            ),
        },
    ),
)

ROUTES: tuple[Route[Deps], ...] = (
    _book_route("", books.get_book, "Book", "both sides"),
    _book_route("/bids", books.get_bids, "BookBids", "the bids"),
    _book_route("/asks", books.get_asks, "BookAsks", "the asks"),
    Route(
        "GET",
        "/v1/books",
        bulk_reads.get_books,
        TENANT,
        "Read several books of one exchange at once, each its own atomic snapshot",
        "books",
        (
            Param("exchange", {"type": "string"}, "Exchange id.", required=True),
            Param(
                "markets",
                {"type": "string"},
                f"Comma-separated markets, at most {bulk_reads.MAX_BOOKS_PER_READ}.",
                required=True,
            ),
            _DEPTH,
        ),
        replies=_ok("Books"),
    ),
    Route(
        "GET",
        "/v1/tops",
        bulk_reads.get_tops,
        TENANT,
        "The best bid and ask of every book the tenant subscribes to",
        "books",
        (Param("exchange", {"type": "string"}, "Only this exchange."),),
        replies=_ok("Tops"),
    ),
    Route(
        "GET",
        "/v1/consolidated/tops",
        consolidated.get_consolidated_tops,
        TENANT,
        "The best bid and ask of many pairs, each across its books on several venues",
        "consolidated",
        (
            Param(
                "pairs",
                {"type": "string"},
                f"Comma-separated pairs (BASE-QUOTE), at most {consolidated.MAX_PAIRS}.",
                required=True,
            ),
            *_CONSOLIDATED_PARAMS,
        ),
        replies=_ok("ConsolidatedTops"),
    ),
    Route(
        "GET",
        "/v1/consolidated/{pair}",
        consolidated.get_consolidated,
        TENANT,
        "One pair's books on several venues merged into one ladder, each level with its books",
        "consolidated",
        (
            Param(
                "depth",
                {"type": "integer", "minimum": 1, "maximum": consolidated.MAX_DEPTH},
                "Consolidated levels per side (default 100).",
            ),
            *_CONSOLIDATED_PARAMS,
        ),
        replies=_ok("ConsolidatedBook"),
    ),
    Route(
        "GET",
        "/v1/books/{exchange}/{market}/info",
        book_info.get_book_info,
        TENANT,
        "How one book is kept: each replica's state, stored depth and counters",
        "books",
        replies=_ok("BookInfo"),
    ),
    Route(
        "GET",
        "/v1/markets",
        catalog.list_markets,
        TENANT,
        "Markets that can be subscribed",
        "markets",
        (Param("exchange", {"type": "string"}, "Only this exchange."),),
        replies=_ok("Markets"),
    ),
    Route(
        "GET",
        "/v1/exchanges",
        catalog.list_exchanges,
        TENANT,
        "Exchanges Ladder knows",
        "markets",
        replies=_ok("Exchanges"),
    ),
    Route(
        "POST",
        "/v1/subscriptions",
        subscriptions.subscribe,
        TENANT,
        "Subscribe to a book, or change the fields named of a subscription held",
        "subscriptions",
        body=ref("SubscriptionRequest"),
        replies={
            201: Reply("Created.", ref("Subscription")),
            200: Reply(
                "Updated: the fields named changed, the others kept (see changed).", ref("Subscription")
            ),
        },
    ),
    Route(
        "GET",
        "/v1/subscriptions",
        subscriptions.list_subscriptions,
        TENANT,
        "The tenant's subscriptions",
        "subscriptions",
        replies=_ok("Subscriptions"),
    ),
    Route(
        "POST",
        "/v1/subscriptions/bulk",
        subscriptions.subscribe_bulk,
        TENANT,
        "Subscribe to many books of one exchange at once (a list, or a filter), one result per market",
        "subscriptions",
        body=ref("BulkSubscriptionRequest"),
        replies=_ok("BulkSubscriptionResult"),
    ),
    Route(
        "POST",
        "/v1/subscriptions/consolidated",
        subscriptions.subscribe_pair,
        TENANT,
        "Subscribe to one pair's books on several venues at once, one result per book",
        "subscriptions",
        body=ref("PairSubscriptionRequest"),
        replies=_ok("PairSubscriptionResult"),
    ),
    Route(
        "DELETE",
        "/v1/subscriptions",
        subscriptions.unsubscribe_bulk,
        TENANT,
        "Unsubscribe from many books of one exchange at once, one result per market",
        "subscriptions",
        (
            Param("exchange", {"type": "string"}, "Exchange id.", required=True),
            Param("markets", {"type": "string"}, "Comma-separated markets (default: every subscribed one)."),
            Param("quote", {"type": "string"}, "Only markets quoted in this asset."),
            Param("base", {"type": "string"}, "Only markets of this base asset."),
        ),
        replies=_ok("BulkUnsubscribeResult"),
    ),
    Route(
        "DELETE",
        "/v1/subscriptions/{exchange}/{market}",
        subscriptions.unsubscribe,
        TENANT,
        "Unsubscribe from a book",
        "subscriptions",
        replies=NO_CONTENT,
    ),
    Route(
        "GET",
        "/v1/stream",
        open_stream,
        TENANT,
        "Stream a book over WebSocket",
        "books",
        (
            Param("exchange", {"type": "string"}, "Exchange id.", required=True),
            Param("market", {"type": "string"}, "Market.", required=True),
            _DEPTH,
            Param("api_key", {"type": "string"}, "The key, for clients that cannot send headers."),
        ),
        replies={101: Reply("Switching to WebSocket: one JSON book per published snapshot.", None)},
        query_key=True,
        websocket=True,
    ),
    Route(
        "GET",
        "/v1/stream/consolidated",
        open_consolidated_stream,
        TENANT,
        "Stream one pair's books on several venues, merged, over WebSocket",
        "consolidated",
        (
            Param("pair", {"type": "string"}, "The pair, BASE-QUOTE (such as BTC-USDT).", required=True),
            Param(
                "depth",
                {"type": "integer", "minimum": 1, "maximum": consolidated.MAX_DEPTH},
                "Consolidated levels per side (default 100).",
            ),
            Param(
                "top",
                {"type": "string", "enum": ["true", "false"]},
                "true: each message is the pair's best bid and ask, as one entry of /v1/consolidated/tops.",
            ),
            *_CONSOLIDATED_PARAMS,
            Param("api_key", {"type": "string"}, "The key, for clients that cannot send headers."),
        ),
        replies={
            101: Reply(
                "Switching to WebSocket: one consolidated book (as GET /v1/consolidated/{pair}) whenever "
                "one of its books changes.",
                None,
            )
        },
        query_key=True,
        websocket=True,
    ),
    Route(
        "GET",
        "/v1/account",
        account.account,
        TENANT,
        "Who the key belongs to: the operator or a tenant",
        "account",
        replies=_ok("Account"),
    ),
    Route(
        "GET",
        "/v1/usage",
        account.usage,
        TENANT,
        "Requests in the last 60 minutes, and use against the tenant's limits",
        "account",
        replies=_ok("Usage"),
    ),
    Route(
        "GET",
        "/v1/keys",
        account.list_keys,
        TENANT,
        "The tenant's API keys",
        "account",
        replies=_ok("ApiKeys"),
    ),
    Route(
        "POST",
        "/v1/keys",
        account.create_key,
        TENANT,
        "Create an API key (shown once)",
        "account",
        body=ref("KeyRequest"),
        body_required=False,
        replies=_ok("CreatedKey", 201, "Created; the only time the key is shown."),
    ),
    Route(
        "DELETE",
        "/v1/keys/{key_id}",
        account.revoke_key,
        TENANT,
        "Revoke one of the tenant's keys",
        "account",
        (Param("grace_s", {"type": "integer", "minimum": 0}, "Keep the key working this long."),),
        replies=NO_CONTENT,
    ),
    Route(
        "POST",
        "/v1/admin/tenants",
        admin.create_tenant,
        ADMIN,
        "Create a tenant",
        "admin",
        body=ref("TenantCreate"),
        replies=_ok("Tenant", 201, "Created."),
    ),
    Route(
        "GET", "/v1/admin/tenants", admin.list_tenants, ADMIN, "Every tenant", "admin", replies=_ok("Tenants")
    ),
    Route(
        "GET",
        "/v1/admin/tenants/{tenant_id}",
        admin.get_tenant,
        ADMIN,
        "One tenant",
        "admin",
        replies=_ok("Tenant"),
    ),
    Route(
        "PATCH",
        "/v1/admin/tenants/{tenant_id}",
        admin.update_tenant,
        ADMIN,
        "Change a tenant",
        "admin",
        body=ref("TenantUpdate"),
        replies=_ok("Tenant"),
    ),
    Route(
        "POST",
        "/v1/admin/tenants/{tenant_id}/keys",
        admin.create_tenant_key,
        ADMIN,
        "Create a tenant's key",
        "admin",
        body=ref("KeyRequest"),
        body_required=False,
        replies=_ok("CreatedKey", 201, "Created; shown this once."),
    ),
    Route(
        "GET",
        "/v1/admin/tenants/{tenant_id}/keys",
        admin.list_tenant_keys,
        ADMIN,
        "A tenant's keys",
        "admin",
        replies=_ok("ApiKeys"),
    ),
    Route(
        "DELETE",
        "/v1/admin/keys/{key_id}",
        admin.revoke_any_key,
        ADMIN,
        "Revoke any key",
        "admin",
        replies=NO_CONTENT,
    ),
    Route(
        "GET",
        "/v1/admin/tenants/{tenant_id}/usage",
        admin.tenant_usage,
        ADMIN,
        "A tenant's usage against its limits",
        "admin",
        replies=_ok("Usage"),
    ),
    Route(
        "GET",
        "/v1/admin/nodes",
        cluster.nodes,
        ADMIN,
        "Ingest nodes, their assignments and last counters",
        "admin",
        replies=_ok("Nodes"),
    ),
    Route(
        "GET",
        "/v1/admin/books",
        cluster.books,
        ADMIN,
        "Every assigned book, replica by replica, and replica disagreements",
        "admin",
        replies=_ok("ClusterBooks"),
    ),
    Route(
        "GET",
        "/v1/admin/egress",
        cluster.egress,
        ADMIN,
        "The venue weight budget of each egress IP",
        "admin",
        replies=_ok("Egress"),
    ),
    Route(
        "GET",
        "/v1/admin/history",
        cluster.history,
        ADMIN,
        "The last hour: publish latency, replicas by status, resyncs, each tenant's requests and errors",
        "admin",
        (Param("minutes", {"type": "integer", "minimum": 1, "maximum": 60}, "How far back (default 60)."),),
        replies=_ok("History"),
    ),
    Route(
        "GET",
        "/v1/admin/audit",
        admin.audit,
        ADMIN,
        "The audit log, newest first",
        "admin",
        (
            Param("limit", {"type": "integer", "minimum": 1, "maximum": 1000}, "Events (default 100)."),
            Param("before", {"type": "string"}, "Only events older than this one (a page's next)."),
            Param("scope", {"type": "string"}, "Only this scope's events: a tenant id, or operator."),
        ),
        replies=_ok("Audit"),
    ),
    *HEALTH_ROUTES,
    Route(
        "GET",
        "/openapi.json",
        openapi_json,
        PUBLIC,
        "This document",
        "service",
        replies={200: Reply("OpenAPI 3.1.", {"type": "object"})},
    ),
    Route(
        "GET",
        "/metrics",
        service.metrics,
        ADMIN,
        "Prometheus metrics of this worker (the admin key)",
        "service",
        replies={200: Reply("Prometheus text.", {"type": "string"}, "text/plain")},
    ),
    *console.routes(),
    *UBDCC_ROUTES,
)

COMPAT_ROUTES: tuple[Route[Deps], ...] = (*UBDCC_ROUTES, *HEALTH_ROUTES)
