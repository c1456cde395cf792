"""JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of every body the API sends or accepts.

The OpenAPI document is assembled from these and the route list; the tests validate real
responses against the same schemas, so a shape change that is not written down here fails.
"""

from __future__ import annotations

from typing import Any

from control_plane.accounts.subscriptions import MAX_BULK_MARKETS
from control_plane.accounts.tenants import MAX_STREAMS_LIMIT
from control_plane.depth import DEFAULT_DEPTH, DEFAULT_MAX_DEPTH, MAX_DEPTH_LIMIT, VENUE_MAX_DEPTH
from control_plane.models import DEFAULT_MAX_STREAMS

Schema = dict[str, Any]

INT = {"type": "integer"}
STR = {"type": "string"}
NULLABLE_INT = {"type": ["integer", "null"]}
BOOL = {"type": "boolean"}


def obj(required: dict[str, Any], optional: dict[str, Any] | None = None, *, closed: bool = True) -> Schema:
    return {
        "type": "object",
        "required": list(required),
        "properties": {**required, **(optional or {})},
        "additionalProperties": not closed,
    }


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def array_of(item: Schema) -> Schema:
    return {"type": "array", "items": item}


LEVEL = {
    "type": "array",
    "prefixItems": [STR, STR],
    "minItems": 2,
    "maxItems": 2,
    "description": "[price, quantity] as the venue's decimal strings",
}
_BOOK_META = {
    "exchange": STR,
    "market": STR,
    "update_id": INT,
    "event_time": NULLABLE_INT,
    "ingest_time": {**NULLABLE_INT, "description": "when the node received the last venue event applied"},
    "confirmed_time": {
        **NULLABLE_INT,
        "description": "when the node last confirmed with the venue that nothing changed since (quiet books)",
    },
    "publish_time": INT,
    "age_ms": {
        "type": "integer",
        "description": "ms since the venue state behind the book was last known: the later of ingest_time "
        "and confirmed_time (max_age_ms refuses on it)",
    },
    "replica": INT,
    "status": {"type": "string", "enum": ["synced"]},
    "truncated": {
        "type": "boolean",
        "description": "a side stops short of the asked depth while the venue may hold more levels",
    },
}
# The schema bounds a depth over all venues; the text names each venue's own maximum.
_VENUE_MAXIMA = ", ".join(f"{exchange} {limit}" for exchange, limit in VENUE_MAX_DEPTH.items())
DEPTH = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_DEPTH_LIMIT,
    "description": (
        f"Levels per side the subscription wants the book kept at (default {DEFAULT_DEPTH}; left out "
        f"of an update, the subscription keeps its depth): at most the venue's snapshot maximum "
        f"({_VENUE_MAXIMA}) and the tenant's max_depth."
    ),
}
TENANT_FIELDS = {
    "name": STR,
    "max_markets": INT,
    "max_replicas": INT,
    "max_depth": {
        "type": "integer",
        "minimum": 1,
        "maximum": MAX_DEPTH_LIMIT,
        "description": f"The deepest any of the tenant's subscriptions may be (default {DEFAULT_MAX_DEPTH}).",
    },
    "max_streams": {
        "type": "integer",
        "minimum": 0,
        "maximum": MAX_STREAMS_LIMIT,
        "description": f"Streams the tenant may hold open at once (default {DEFAULT_MAX_STREAMS}).",
    },
    "rate_limit_rps": {"type": "number"},
    "burst": INT,
}
API_KEY = {
    "id": STR,
    "prefix": STR,
    "last4": STR,
    "created_at": INT,
    "last_used_at": NULLABLE_INT,
    "expires_at": NULLABLE_INT,
    "revoked_at": NULLABLE_INT,
    "parent_id": {
        "type": ["string", "null"],
        "description": "The key that minted this one (null when the operator did); it never outlives it.",
    },
}
SUBSCRIPTION = {"exchange": STR, "market": STR, "replicas": INT, "depth": DEPTH, "created_at": INT}
_CHANGE = obj({"from": INT, "to": INT})
CHANGED = {
    "type": "object",
    "properties": {"replicas": _CHANGE, "depth": _CHANGE},
    "additionalProperties": False,
    "description": "What an update changed, each as {from, to} (a lowering too); empty when nothing did. "
    "A field the request left out is kept, never reset to its default.",
}
REPLICA_COUNTERS = ("restarts", "handovers", "stale_episodes", "stall_checks", "quiet_checks", "stalls",
                    "refreshes", "audits", "audit_mismatches", "last_audit_ms", "mismatches", "lag_ms",
                    "max_lag_ms", "lagging_episodes")  # fmt: skip
"""The counters a replica's node reports that ``GET /v1/books/.../info`` passes on (besides resyncs)."""
REPLICA_EVENTS = ("last_resync", "last_stale")
"""The events a replica's node reports with them: the last resync's and the last turn to stale's."""
_EVENT = {
    "oneOf": [{"type": "null"}, obj({"reason": STR, "at_ms": INT})],
    "description": "why and when (null: never, or a node that does not report it)",
}
_STORED_LEVELS = {"bids": INT, "asks": INT, "more_bids": BOOL, "more_asks": BOOL}
_REPLICA_INFO = {
    "replica": INT,
    "status": {"type": "string", "enum": ["synced", "resyncing", "stale", "refused"]},
    "update_id": INT,
    "ingest_time": NULLABLE_INT,
    "confirmed_time": NULLABLE_INT,
    "publish_time": INT,
    "age_ms": INT,
    "head": obj(_STORED_LEVELS),
    "deep": {"oneOf": [{"type": "null"}, obj({**_STORED_LEVELS, "update_id": INT, "publish_time": INT})]},
    "resyncs": {"type": ["object", "null"], "additionalProperties": INT},
    **{name: NULLABLE_INT for name in REPLICA_COUNTERS},
    **dict.fromkeys(REPLICA_EVENTS, _EVENT),
    "checksum": {
        "oneOf": [{"type": "null"}, obj({"venue": INT, "matched": {"type": ["boolean", "null"]}})],
        "description": "The venue's checksum last verified against the book, and whether the book gave "
        "it (Kraken: the CRC32 of the top 10 levels, verified at every message; a mismatch resyncs "
        "the book, counted in resyncs.checksum); null where the venue sends none.",
    },
}

BOOK_STATUS: Schema = {
    "type": "string",
    "enum": ["synced", "resyncing", "stale", "refused", "unplaced", "starting"],
    "description": "refused: the venue refuses Ladder's key; unplaced: no replica could be placed "
    "(see reason)",
}

_STATUS = {"type": "string", "enum": ["synced", "resyncing", "stale", "starting"]}
NULLABLE_NUMBER = {"type": ["number", "null"]}
_CLUSTER_REPLICA = {
    "replica": INT,
    "node_id": {"type": ["string", "null"], "description": "the node assigned to keep it (null: none now)"},
    "status": _STATUS,
    "update_id": NULLABLE_INT,
    "publish_time": NULLABLE_INT,
    "age_ms": NULLABLE_INT,
    "resyncs": {"type": ["object", "null"], "additionalProperties": INT},
    **{name: NULLABLE_INT for name in REPLICA_COUNTERS},
    **dict.fromkeys(REPLICA_EVENTS, _EVENT),
    "status_reason": {
        "type": ["string", "null"],
        "description": "why a replica is not synced (null when it is): the last resync's reason, why it "
        "turned stale, or that its node has not been heard from",
    },
    "status_since_ms": {"type": ["integer", "null"], "description": "since when that is so, when known"},
}
_DISAGREEMENT = {
    "exchange": STR,
    "market": STR,
    **{k: _CLUSTER_REPLICA[k] for k in ("replica", "node_id", "update_id", "mismatches", "audit_mismatches",
                                        "last_audit_ms")},
}  # fmt: skip
_LATENCY = obj({"count": INT, "p50": NULLABLE_NUMBER, "p90": NULLABLE_NUMBER, "p99": NULLABLE_NUMBER})
_NODE_STATS = obj(
    {
        "node_id": STR,
        "egress_id": STR,
        "replicas": INT,
        "synced": INT,
        "process": obj({"cpu_s": {"type": "number"}, "rss_bytes": NULLABLE_INT, "at_ms": INT}),
        "publish_latency_ms": {
            "type": "object",
            "additionalProperties": _LATENCY,
            "description": "per exchange, frame received -> published over about the last minute (ms)",
        },
    },
    closed=False,
)
_NODE = obj(
    {
        "id": STR,
        "address": STR,
        "capacity": INT,
        "started_at": INT,
        "heartbeat_at": INT,
        "draining": BOOL,
        "load": {"type": "number"},
        "live": BOOL,
        "assignments": array_of(obj({"exchange": STR, "market": STR, "replica": INT, "node_id": STR})),
        "stats": {"oneOf": [{"type": "null"}, _NODE_STATS], "description": "the node's last counters"},
    }
)
_EGRESS_POOL = obj(
    {
        "egress_id": STR,
        "pool": {"type": "string", "description": "the venue's weight pool (its REST host)"},
        "limit": {"type": "integer", "description": "weight a minute the nodes may use"},
        "used": {"type": "integer", "description": "weight used in the current minute"},
        "window_ends_in_ms": INT,
        "closed_for_ms": {"type": "integer", "description": "> 0: a 429/418 closed the pool this long"},
        "exchanges": array_of(STR),
        "nodes": array_of(STR),
        "weight_spent": {"type": "integer", "description": "since each node started"},
        "refusals": obj({"429": INT, "418": INT}),
    }
)
ERROR_DETAIL = obj({"code": STR, "message": STR})
_CONSOLIDATED_LEVEL = {
    "type": "array",
    "prefixItems": [STR, STR, {"type": "object", "additionalProperties": STR}],
    "minItems": 3,
    "maxItems": 3,
    "description": "[price, total quantity, {book id: quantity}]: price and total exact, in canonical "
    "form (plain decimal, no trailing zeros); each book's quantity as its venue wrote it",
}
_CONSOLIDATED_BOOK = obj(
    {
        "id": {"type": "string", "description": "exchange:market, as the levels name the book"},
        "exchange": STR,
        "market": STR,
        "quote": STR,
        "update_id": INT,
        "replica": INT,
        "status": {"type": "string", "enum": ["synced"]},
        "truncated": _BOOK_META["truncated"],
        "publish_time": INT,
        "age_ms": _BOOK_META["age_ms"],
    }
)
_LEFT_OUT = obj(
    {"exchange": STR, "code": STR, "message": STR},
    {"market": STR, "status": BOOK_STATUS, "alias_of": STR},
)
_CONSOLIDATED = {
    "base": STR,
    "quote": STR,
    "quotes": {**array_of(STR), "description": "the quote currencies merged: the pair's own unless asked"},
    "books": {**array_of(_CONSOLIDATED_BOOK), "description": "the books merged, each at its own update_id"},
    "left_out": {
        **array_of(_LEFT_OUT),
        "description": (
            "books named but not merged, with the error a read of each alone would give, or code "
            "alias and alias_of: another name of a venue book merged"
        ),
    },
    "crossed": {
        "type": "boolean",
        "description": "the best bid is above the best ask (on another venue): information, not an error",
    },
    "truncated": {
        "type": "boolean",
        "description": "a side stops short of the depth at the last price a truncated book is known to",
    },
}
_PAIR = {"type": "string", "description": "BASE-QUOTE, such as BTC-USDT"}


def _bulk_result(done: tuple[str, ...]) -> Schema:
    """A bulk call's answer: how many markets ended each way, and each market's result."""
    item = obj(
        {"market": STR, "result": {"type": "string", "enum": [*done, "failed"]}},
        {"subscription": obj(SUBSCRIPTION), "changed": CHANGED, "error": ERROR_DETAIL},
    )
    return obj({"exchange": STR, **{name: INT for name in (*done, "failed")}, "results": array_of(item)})


COMPONENTS: dict[str, Schema] = {
    "Error": obj({"error": obj({"code": STR, "message": STR, "request_id": STR})}),
    "Level": LEVEL,
    "Book": obj({**_BOOK_META, "bids": array_of(ref("Level")), "asks": array_of(ref("Level"))}),
    "BookBids": obj({**_BOOK_META, "bids": array_of(ref("Level"))}),
    "BookAsks": obj({**_BOOK_META, "asks": array_of(ref("Level"))}),
    "BookError": obj({"exchange": STR, "market": STR, "error": ERROR_DETAIL}),
    "Books": obj({"books": array_of({"oneOf": [ref("Book"), ref("BookError")]})}),
    "Top": {
        "oneOf": [
            obj(
                {
                    "exchange": STR,
                    "market": STR,
                    "status": {"type": "string", "enum": ["synced"]},
                    "update_id": INT,
                    "publish_time": INT,
                    "replica": INT,
                    "age_ms": INT,
                    "truncated": _BOOK_META["truncated"],
                    "bid": {
                        "oneOf": [{"type": "null"}, ref("Level")],
                        "description": "best bid (null: none)",
                    },
                    "ask": {
                        "oneOf": [{"type": "null"}, ref("Level")],
                        "description": "best ask (null: none)",
                    },
                }
            ),
            obj(
                {
                    "exchange": STR,
                    "market": STR,
                    "status": {"type": "string", "enum": ["resyncing", "stale", "refused", "starting"]},
                }
            ),
        ]
    },
    "Tops": obj({"tops": array_of(ref("Top"))}),
    "BookInfo": obj(
        {
            "exchange": STR,
            "market": STR,
            "status": BOOK_STATUS,
            "replicas": array_of(obj(_REPLICA_INFO)),
        },
        {"reason": STR},
    ),
    "Market": obj(
        {
            "exchange": STR,
            "market": STR,
            "status": STR,
            "base": STR,
            "quote": STR,
            "kind": {"type": "string", "enum": ["spot", "perpetual", "future", "option", "unknown"]},
        },
        {"alias": {**STR, "description": "the market of the same exchange whose book this one is"}},
    ),
    "ConsolidatedLevel": _CONSOLIDATED_LEVEL,
    "ConsolidatedBook": obj(
        {
            **_CONSOLIDATED,
            "depth": INT,
            "bids": array_of(ref("ConsolidatedLevel")),
            "asks": array_of(ref("ConsolidatedLevel")),
        }
    ),
    "ConsolidatedTop": obj(
        {
            **_CONSOLIDATED,
            "bid": {"oneOf": [{"type": "null"}, ref("ConsolidatedLevel")]},
            "ask": {"oneOf": [{"type": "null"}, ref("ConsolidatedLevel")]},
        }
    ),
    "ConsolidatedTops": obj(
        {"tops": array_of({"oneOf": [ref("ConsolidatedTop"), obj({"pair": _PAIR, "error": ERROR_DETAIL})]})}
    ),
    "PairSubscriptionRequest": obj(
        {"pair": _PAIR, "venues": {**array_of(STR), "description": "the exchanges to subscribe it on"}},
        {
            "quotes": {**array_of(STR), "description": "every quote to subscribe (default: the pair's own)"},
            "replicas": {"type": "integer", "minimum": 1},
            "depth": DEPTH,
        },
    ),
    "PairSubscriptionResult": obj(
        {
            "pair": _PAIR,
            "created": INT,
            "updated": INT,
            "skipped": INT,
            "failed": INT,
            "results": array_of(
                obj(
                    {
                        "exchange": STR,
                        "result": {"type": "string", "enum": ["created", "updated", "skipped", "failed"]},
                    },
                    {
                        "market": STR,
                        "subscription": obj(SUBSCRIPTION),
                        "changed": CHANGED,
                        "error": {
                            **ERROR_DETAIL,
                            "description": "why it failed; skipped: code alias (another name of a book)",
                        },
                        "alias_of": {**STR, "description": "skipped: the market subscribed in its place"},
                    },
                )
            ),
        }
    ),
    "Markets": obj({"markets": array_of(ref("Market"))}),
    "Exchanges": obj({"exchanges": array_of(STR)}),
    "SubscriptionRequest": obj(
        {"exchange": STR, "market": STR},
        {
            "replicas": {
                "type": "integer",
                "minimum": 1,
                "description": "Replicas to keep (a new subscription: 1; an existing one: left as it is).",
            },
            "depth": DEPTH,
        },
    ),
    "Subscription": obj(SUBSCRIPTION, {"changed": CHANGED}),
    "BulkSubscriptionRequest": obj(
        {"exchange": STR},
        {
            "markets": {
                "type": "array",
                "items": STR,
                "maxItems": MAX_BULK_MARKETS,
                "description": "The markets; without it, every trading market that matches quote and base.",
            },
            "quote": {"type": "string", "description": "Only markets quoted in this asset (e.g. USDT)."},
            "base": {"type": "string", "description": "Only markets of this base asset."},
            "status": {
                "type": "string",
                "enum": ["TRADING"],
                "description": "Only trading markets (the default).",
            },
            "replicas": {
                "type": "integer",
                "minimum": 1,
                "description": "Replicas of every market (new ones: 1; held ones: each keeps its own).",
            },
            "depth": DEPTH,
        },
    ),
    "BulkSubscriptionResult": _bulk_result(("created", "updated")),
    "BulkUnsubscribeResult": _bulk_result(("deleted",)),
    "Subscriptions": obj(
        {
            "subscriptions": array_of(
                obj(
                    {**SUBSCRIPTION, "status": BOOK_STATUS},
                    {"reason": STR},
                )
            )
        }
    ),
    "Usage": obj(
        {
            "tenant_id": STR,
            "requests_total": INT,
            "minutes": array_of(
                obj(
                    {
                        "minute": INT,
                        "requests": INT,
                        "errors": {"type": "integer", "description": "answers of 400 and up, 429 included"},
                    }
                )
            ),
            "limits": obj({k: v for k, v in TENANT_FIELDS.items() if k != "name"}),
            "markets": {"type": "integer", "description": "subscriptions, against max_markets"},
            "most_replicas": {"type": "integer", "description": "the most any subscription asks"},
            "deepest": {"type": "integer", "description": "the deepest any subscription asks"},
            "streams": {"type": "integer", "description": "open streams, against max_streams"},
        }
    ),
    "Account": obj(
        {
            "role": {"type": "string", "enum": ["operator", "tenant"]},
            "tenant_id": {"type": ["string", "null"]},
            "tenant_name": {"type": ["string", "null"]},
        }
    ),
    "ApiKey": obj(API_KEY),
    "ApiKeys": obj({"keys": array_of(ref("ApiKey"))}),
    "CreatedKey": obj({**API_KEY, "key": STR}),
    "KeyRequest": obj({}, {"expires_in_s": {"type": "integer", "minimum": 1}}),
    "Tenant": obj({"id": STR, **TENANT_FIELDS, "disabled": {"type": "boolean"}, "created_at": INT}),
    "Tenants": obj({"tenants": array_of(ref("Tenant"))}),
    "TenantCreate": obj({"name": STR}, {k: v for k, v in TENANT_FIELDS.items() if k != "name"}),
    "TenantUpdate": obj({}, {**TENANT_FIELDS, "disabled": {"type": "boolean"}}),
    "Nodes": obj({"nodes": array_of(_NODE)}),
    "ClusterBooks": obj(
        {
            "books": array_of(
                obj(
                    {
                        "exchange": STR,
                        "market": STR,
                        "status": _STATUS,
                        "replicas": array_of(obj(_CLUSTER_REPLICA)),
                    }
                )
            ),
            "disagreements": array_of(obj(_DISAGREEMENT)),
        }
    ),
    "Egress": obj({"egress": array_of(_EGRESS_POOL)}),
    "History": obj(
        {
            "interval_ms": {"type": "integer", "description": "between two samples"},
            "samples": array_of(
                obj(
                    {
                        "at": INT,
                        "latency_ms": {
                            "type": "object",
                            "additionalProperties": _LATENCY,
                            "description": "per exchange, frame received -> published over about the last "
                            "minute: each percentile the highest any node reported, count summed",
                        },
                        "replicas": {
                            "type": "object",
                            "additionalProperties": INT,
                            "description": "replicas by the status their nodes publish them with",
                        },
                        "resyncs": {
                            "type": "object",
                            "additionalProperties": INT,
                            "description": "resyncs by reason since the sample before",
                        },
                    }
                )
            ),
            "tenants": array_of(
                obj(
                    {
                        "tenant_id": STR,
                        "name": STR,
                        "minutes": array_of(obj({"minute": INT, "requests": INT, "errors": INT})),
                    }
                )
            ),
        }
    ),
    "Audit": obj(
        {
            "audit": array_of(
                obj(
                    {
                        "id": STR,
                        "at": INT,
                        "actor": STR,
                        "scope": STR,
                        "action": STR,
                        "target": STR,
                        "detail": {"type": "object"},
                    }
                )
            ),
            "next": {
                "type": ["string", "null"],
                "description": "pass as before= for the events before this page (null: no more)",
            },
        }
    ),
    "Status": obj({"status": STR}),
    "CatalogState": obj(
        {
            "phase": {"type": "string", "enum": ["fetching", "loaded", "unavailable"]},
            "since_ms": {"type": "integer", "description": "when the catalog entered this phase"},
            "checked_ms": {"type": "integer", "description": "the last attempt to fetch it"},
            "reason": {"type": "string", "description": "why the last attempt failed ('' when loaded)"},
            "retry_at_ms": {**NULLABLE_INT, "description": "when the next attempt is due, after a failure"},
            "failures": {"type": "integer", "description": "attempts failed in a row"},
            "markets": {"type": "integer", "description": "markets in the catalog served now"},
        }
    ),
    "Readiness": obj(
        {
            "status": {"type": "string", "enum": ["ready"]},
            "exchanges": {"type": "object", "additionalProperties": ref("CatalogState")},
        }
    ),
    "NotReady": obj(
        {"error": obj({"code": STR, "message": STR, "request_id": STR})},
        {
            "status": {"type": "string", "enum": ["not_ready"]},
            "exchanges": {"type": "object", "additionalProperties": ref("CatalogState")},
        },
    ),
    "Ubdcc": {
        "type": "object",
        "description": "UBDCC envelope: result OK with the route's payload, or ERROR with error_id",
        "required": ["result", "event"],
        "properties": {
            "result": {"type": "string", "enum": ["OK", "ERROR"]},
            "event": STR,
            "error_id": {"type": "string", "pattern": "^#[0-9]{4}$"},
            "message": STR,
            "debug": obj({"cluster_execution_time": {"type": "number"}}, closed=False),
        },
        "additionalProperties": True,
    },
    "UbdccCreate": {
        "type": "object",
        "properties": {
            "exchange": STR,
            "market": STR,
            "markets": {"type": ["array", "string"], "items": STR},
            "desired_quantity": {"type": ["integer", "null"]},
            "update_interval": {"type": ["integer", "null"]},
            "refresh_interval": {"type": ["integer", "null"]},
        },
        "additionalProperties": True,
    },
}
