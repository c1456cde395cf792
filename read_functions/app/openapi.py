"""The OpenAPI 3.1 document, generated from the route list and the schemas.

Each route contributes its parameters, request body and replies; the error replies it can give
follow from its access level and inputs (a key: 401/403/429, and 503 when the worker sheds
load; path or query parameters: 400/404; the store: 503), so a route cannot answer a status the
document omits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ladder_process.telemetry.setup import ladder_version
from read_functions.app.routing import Audience, Reply, Route
from read_functions.app.schemas import COMPONENTS, Schema, ref

_ERROR_TEXT = {
    400: "Invalid request (invalid_request).",
    401: "Missing, unknown, revoked or expired key (unauthorized).",
    403: "Not allowed (forbidden): not subscribed, not the operator, tenant disabled.",
    404: "No such exchange, market, route object (unknown_exchange, unknown_market, not_found).",
    409: "Already exists (conflict).",
    413: "Body too large (payload_too_large).",
    422: "A tenant limit would be exceeded (limit_exceeded).",
    429: "Rate limit exceeded (rate_limited), too many failed authentications from this address "
    "(too_many_failed_authentications), or the tenant's max_streams open (too_many_streams); see "
    "Retry-After.",
    503: "Book not synced or too old, the exchange's market list not loaded yet (catalog_unavailable), "
    "the store unavailable, or the worker overloaded (overloaded); see Retry-After.",
}
_NO_STORE = frozenset({"/healthz", "/openapi.json", "/metrics", "/test"})


def document(routes: Sequence[Route[Any]]) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Ladder",
            "version": ladder_version(),
            "description": "Live crypto order books, kept in sync once and served to many tenants.",
        },
        "paths": paths,
        "components": {
            "schemas": COMPONENTS,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            },
        },
    }


def _operation(route: Route[Any]) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": route.operation_id or _operation_id(route),
        "summary": route.summary,
        "tags": [route.tag],
        "responses": {str(status): _reply(reply, route) for status, reply in _replies(route).items()},
    }
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
        for name in route.path_params
    ] + [
        {
            "name": p.name,
            "in": "query",
            "required": p.required,
            "schema": dict(p.schema),
            "description": p.description,
        }
        for p in route.params
    ]
    if parameters:
        operation["parameters"] = parameters
    if route.body is not None:
        operation["requestBody"] = {
            "required": route.body_required,
            "content": {"application/json": {"schema": dict(route.body)}},
        }
    if route.access is not Audience.PUBLIC:
        operation["security"] = [{"bearer": []}, {"apiKey": []}]
    return operation


def _replies(route: Route[Any]) -> dict[int, Reply]:
    replies = dict(route.replies)
    errors: set[int] = set()
    if route.params or route.path_params or route.body is not None:
        errors |= {400, 404}
    if route.body is not None:
        errors.add(413)
    if route.access is not Audience.PUBLIC:
        errors |= {401, 403, 429, 503}
    if route.path not in _NO_STORE and route.tag != "console":  # console files are in memory
        errors.add(503)
    if route.tag == "subscriptions" or route.path.endswith("/keys"):
        errors |= {404, 409, 422}
    if route.tag == "admin":
        errors |= {404, 409}
    if route.tag == "ubdcc":
        errors -= {400, 404, 413}  # UBDCC reports these in a 200 envelope
    for status in sorted(errors):
        replies.setdefault(status, Reply(_ERROR_TEXT[status], ref("Error")))
    return replies


def _reply(reply: Reply, route: Route[Any]) -> dict[str, Any]:
    headers: dict[str, Schema] = {"X-Request-ID": {"schema": {"type": "string"}, "required": True}}
    for name in reply.headers:
        headers[name] = {"schema": {"type": "string"}}
    out: dict[str, Any] = {"description": reply.description, "headers": headers}
    if reply.schema is not None:
        out["content"] = {reply.content_type: {"schema": dict(reply.schema)}}
    return out


def _operation_id(route: Route[Any]) -> str:
    words = [s for s in route.path.replace("{", "").replace("}", "").split("/") if s and s != "v1"]
    return "_".join([route.method.lower(), *words])
