"""Service routes: liveness, readiness, the OpenAPI document and Prometheus metrics."""

from __future__ import annotations

from redis.exceptions import RedisError

from book_store.errors import StoreUnavailableError
from read_functions.deps import Deps
from read_functions.messages import Request, Response, json_response

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


async def healthz(request: Request, deps: Deps) -> Response:
    return json_response({"status": "ok"})


async def readyz(request: Request, deps: Deps) -> Response:
    """Ready when the book store answers and the change feed is connected."""
    try:
        await deps.redis.ping()
    except (RedisError, OSError) as exc:
        raise StoreUnavailableError("book store unreachable") from exc
    if not deps.books.following:
        raise StoreUnavailableError("change feed not connected")
    return json_response({"status": "ready"})


async def metrics(request: Request, deps: Deps) -> Response:
    return Response(200, deps.telemetry.render(), PROMETHEUS_TEXT, {})
