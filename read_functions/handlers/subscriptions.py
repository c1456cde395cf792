"""The tenant's subscriptions: ``POST``/``GET /v1/subscriptions`` and ``DELETE .../{exchange}/{market}``."""

from __future__ import annotations

from book_store.keys import BookKey
from book_store.unplaced import UnplacedBooks
from control_plane.auth import require_tenant
from control_plane.depth import DEFAULT_DEPTH
from read_functions.access import subscriptions_changed
from read_functions.book_read import best_status
from read_functions.deps import Deps, now_ms
from read_functions.messages import Request, Response, empty_response, json_response
from read_functions.params import json_object, require_fields

_FIELDS = frozenset({"exchange", "market", "replicas", "depth"})


async def subscribe(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    tenant_id = require_tenant(request.principal)
    body = json_object(request)
    require_fields(body, _FIELDS)
    subscription, created = await deps.control.subscribe(
        tenant_id,
        body.get("exchange"),
        body.get("market"),
        body.get("replicas", 1),
        body.get("depth", DEFAULT_DEPTH),
        actor=request.principal,
    )
    await deps.announce(subscriptions_changed(tenant_id))
    return json_response(subscription.to_json(), 201 if created else 200)


async def list_subscriptions(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    subscriptions = await deps.control.subscriptions(require_tenant(request.principal))
    books = [BookKey(s.exchange, s.market) for s in subscriptions]
    replicas = await deps.books.peek_many(books)
    unplaced = await UnplacedBooks(deps.redis).reasons([b for b in books if not replicas[b]])
    now = now_ms()
    silence = deps.settings.max_silence_ms
    return json_response({
        "subscriptions": [
            {**s.to_json(), "status": best_status(replicas[book], now, silence, unplaced.get(book)),
             **({"reason": unplaced[book]} if book in unplaced else {})}
            for s, book in zip(subscriptions, books, strict=True)
        ]
    })  # fmt: skip


async def unsubscribe(request: Request, deps: Deps) -> Response:
    assert request.principal is not None
    params = request.path_params
    tenant_id = require_tenant(request.principal)
    await deps.control.unsubscribe(tenant_id, params["exchange"], params["market"], actor=request.principal)
    await deps.announce(subscriptions_changed(tenant_id))
    return empty_response()
