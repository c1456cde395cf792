"""The request pipeline every adapter calls: route, authenticate, limit, count, handle, map errors.

Order of checks: the route (404/405), then the key (401/403), then the tenant's rate limit (429)
and usage count; the handler does the rest (validation 400/404, entitlement 403, book state 503).
Every exception ends here and nowhere else: :func:`read_functions.app.errors.error_response` turns it
into a status and an error body. Every response gets ``X-Request-ID``; a tenant's responses also
get its ``RateLimit-*`` headers.

The dispatcher knows nothing of what a process is built from: it is given a :class:`Context`, the
few parts it uses itself (the load, access, the rate limiter, usage, telemetry), and hands that
same object to the handler it routes to, without looking into it.

Load shedding: a worker counts the requests it holds (every listener's together) and times them.
A request that waits for anything (the store, a lease of rate-limit tokens, a key's first
look-up) is held until its answer; one served from memory is done within its event-loop turn.
Past ``max_in_flight`` held requests, or while held requests wait longer than ``max_queue_ms``
(see :mod:`read_functions.app.load_shedding`), a new one on a route that needs a key is answered 503
``overloaded`` with ``Retry-After`` before it is authenticated, so a worker whose store slowed
down, or that is asked more than it can answer, refuses quickly instead of queueing requests
into their clients' timeouts. Probes and public routes, answered from memory, are never shed.
The checks are a few comparisons on times already taken: the hot path does not pay for them.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

from control_plane.errors import ForbiddenError
from control_plane.models import Principal
from ladder_process.redaction import redact
from read_functions.app.api_key import presented_key
from read_functions.app.errors import OverloadedError, error_response
from read_functions.app.load_shedding import Load
from read_functions.app.messages import Request, Response
from read_functions.app.routing import Audience, Route, Router
from read_functions.tenancy.access import Access
from read_functions.tenancy.rate_limit import Quota, RateLimiter, TenantRateLimitedError
from read_functions.tenancy.usage import UsageCounter

PrincipalSource = Callable[[Request, Route[Any]], Awaitable[Principal]]


class RequestTelemetry(Protocol):
    def request_done(self, request: Request, route: str, status: int, seconds: float) -> None: ...


class Context(Protocol):
    """What dispatch itself uses of the process's dependencies."""

    @property
    def load(self) -> Load: ...

    @property
    def access(self) -> Access: ...

    @property
    def limiter(self) -> RateLimiter: ...

    @property
    def usage(self) -> UsageCounter: ...

    @property
    def telemetry(self) -> RequestTelemetry: ...


C = TypeVar("C", bound=Context)

_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def _new_prefix() -> str:
    """8 random hex digits and the pid in hex: unique across workers and restarts."""
    return f"{os.urandom(4).hex()}{os.getpid():x}-"


_id_prefix = _new_prefix()
_ids = itertools.count(1)


def request_id(sent: str | None) -> str:
    """The caller's ``X-Request-ID`` when it is safe to echo (and not a pasted key), else a new one."""
    if sent and _SAFE_REQUEST_ID.fullmatch(sent) and redact(sent) == sent:
        return sent
    return f"{_id_prefix}{next(_ids)}"


def reset_request_ids() -> None:
    """A forked worker must not hand out its parent's ids."""
    global _id_prefix
    _id_prefix = _new_prefix()


class Dispatcher(Generic[C]):
    """Answers core requests for one listener (the main API, or the UBDCC compat listener)."""

    def __init__(self, router: Router[C], deps: C, principal_source: PrincipalSource | None = None) -> None:
        self.router = router
        self.deps = deps
        self._principal_source = principal_source or self._from_key

    async def __call__(self, request: Request) -> Response:
        started = time.perf_counter()
        deps = self.deps
        route_name = "unmatched"
        quota: Quota | None = None
        load = deps.load
        load.in_flight += 1
        admitted = False
        try:
            route, request.path_params = self.router.match(request.method, request.raw_path)
            route_name = route.path
            if route.access is not Audience.PUBLIC:
                if load.refuses(started):
                    raise OverloadedError("this worker is answering as many requests as it can; retry")
                admitted = True
                principal = request.principal = await self._principal_source(request, route)
                if route.access is Audience.ADMIN and not principal.is_admin:
                    raise ForbiddenError("this route needs the admin key")
                if principal.tenant_id is not None:
                    quota = await deps.limiter.take(await deps.access.tenant(principal.tenant_id))
                    deps.usage.count(principal.tenant_id)
            response = await route.handler(request, deps)
        except Exception as exc:  # the one boundary where any error becomes a response
            response = error_response(exc, request.request_id)
            if isinstance(exc, TenantRateLimitedError):
                quota = exc.quota
        finally:
            load.in_flight -= 1
        if (
            response.status >= 400
            and request.principal is not None
            and request.principal.tenant_id is not None
        ):
            deps.usage.error(request.principal.tenant_id)
        if quota is not None:
            quota.add_headers(response.headers)
        response.headers["X-Request-ID"] = request.request_id
        ended = time.perf_counter()
        elapsed = ended - started
        if admitted:
            load.done(elapsed, ended)
        deps.telemetry.request_done(request, route_name, response.status, elapsed)
        return response

    async def _from_key(self, request: Request, route: Route[Any]) -> Principal:
        key = presented_key(request, query_allowed=route.query_key)
        return await self.deps.access.principal(key, source=request.peer)
