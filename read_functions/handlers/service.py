"""Service routes: liveness, readiness, the OpenAPI document and Prometheus metrics.

The probes are public and answer from memory (readiness is kept by a background ping, see
:mod:`read_functions.books.readiness`), so probing costs the store nothing; metrics name tenants, so
they need the admin key (a Prometheus scrape job sends it as a bearer token).
"""

from __future__ import annotations

from ladder_process.errors import StoreUnavailableError
from read_functions.app.messages import Request, Response, json_response
from read_functions.deps import Deps

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


async def healthz(request: Request, deps: Deps) -> Response:
    return json_response({"status": "ok"})


async def readyz(request: Request, deps: Deps) -> Response:
    """Ready when the book store answered the last background ping and the change feed is connected."""
    if not deps.readiness.reachable:
        raise StoreUnavailableError("book store unreachable")
    if not deps.books.following:
        raise StoreUnavailableError("change feed not connected")
    return json_response({"status": "ready"})


async def metrics(request: Request, deps: Deps) -> Response:
    return Response(200, deps.telemetry.render(), PROMETHEUS_TEXT, {})
