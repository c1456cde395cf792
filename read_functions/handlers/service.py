"""Service routes: liveness, readiness, the OpenAPI document and Prometheus metrics.

The probes are public and answer from memory (readiness is kept by a background ping, see
:mod:`read_functions.books.readiness`), so probing costs the store nothing; metrics name tenants, so
they need the admin key (a Prometheus scrape job sends it as a bearer token).
"""

from __future__ import annotations

import math

import orjson

from ladder_process.clock import now_ms
from ladder_process.errors import StoreUnavailableError
from read_functions.app.messages import JSON, Request, Response, json_response
from read_functions.deps import Deps

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


async def healthz(request: Request, deps: Deps) -> Response:
    return json_response({"status": "ok"})


async def readyz(request: Request, deps: Deps) -> Response:
    """Ready when the book store answered the last background ping, the change feed is connected,
    and every exchange the ingest nodes serve has a market list (one whose refresh fails keeps
    serving the last list it had, and is ready); the answer gives each exchange's catalog state."""
    if not deps.readiness.reachable:
        raise StoreUnavailableError("book store unreachable")
    if not deps.books.following:
        raise StoreUnavailableError("change feed not connected")
    states = deps.catalog.states()
    exchanges = {
        exchange: {k: v for k, v in s.to_json().items() if k != "exchange"} for exchange, s in states.items()
    }
    missing = [s for s in states.values() if s.phase != "loaded" and not s.markets]
    if not missing:
        return json_response({"status": "ready", "exchanges": exchanges})
    reasons = [
        f"{s.exchange}: market list not loaded ({s.reason or 'first fetch under way'})" for s in missing
    ]
    retry_ms = min((s.retry_at_ms or 0) - now_ms() for s in missing)
    body = {
        "status": "not_ready",
        "error": {
            "code": "catalog_unavailable",
            "message": "; ".join(reasons),
            "request_id": request.request_id,
        },
        "exchanges": exchanges,
    }
    headers = {"Retry-After": str(max(1, math.ceil(retry_ms / 1000)))}
    return Response(503, orjson.dumps(body), JSON, headers)


async def metrics(request: Request, deps: Deps) -> Response:
    return Response(200, deps.telemetry.render(), PROMETHEUS_TEXT, {})
