"""The UBDCC-compatible routes at the root (``/test``, ``/get_asks``, ``/create_depthcache``, ...).

They act on the calling tenant's subscriptions (on the compat listener: the one compat tenant).
Reads follow the same rules as ``/v1/books`` (catalog, entitlement, synced replicas only) and
report what UBDCC clients expect: ``#7000`` for a book the caller does not have, ``#4000`` when
no replica exists yet, ``#6000`` when replicas exist but none is in sync, ``#5000`` when the
store cannot answer. Auth and rate-limit refusals stay HTTP errors: they are not UBDCC's.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable

from book_store.codec import Snapshot
from book_store.liveness import Heartbeats
from book_store.reader import choose_replica
from book_store.schema import BookKey, InvalidBookIdError
from control_plane.accounts.auth import require_tenant
from control_plane.errors import (
    CatalogUnavailableError,
    ForbiddenError,
    InvalidRequestError,
    LimitExceededError,
    NotFoundError,
    UnknownExchangeError,
    UnknownMarketError,
)
from control_plane.models import Principal, Subscription
from ladder_process.clock import now_ms
from ladder_process.errors import StoreError
from ladder_process.telemetry.setup import ladder_version
from read_functions.app.messages import Request, Response
from read_functions.app.params import json_object
from read_functions.deps import Deps
from read_functions.handlers.reads.rules import authorize_book, cached_entry, deepest
from read_functions.handlers.ubdcc.wire import (
    APP_NAME,
    UBDCC_DEPTH,
    Call,
    ErrorId,
    UbdccError,
    levels_as_numbers,
)
from read_functions.tenancy.access import subscriptions_changed

UbdccHandler = Callable[[Call, Deps], Awaitable[Response]]
MAX_LEVELS = 1_000_000


def ubdcc(
    event: str, *, creating: bool = False
) -> Callable[[UbdccHandler], Callable[[Request, Deps], Awaitable[Response]]]:
    """Wrap a UBDCC handler: parse its parameters, answer Ladder's errors the UBDCC way."""
    missing = ErrorId.MISSING_CREATE_PARAMETER if creating else ErrorId.MISSING_READ_PARAMETER
    unknown = ErrorId.UNKNOWN_MARKET if creating else ErrorId.NOT_FOUND

    def wrap(handler: UbdccHandler) -> Callable[[Request, Deps], Awaitable[Response]]:
        @functools.wraps(handler)
        async def route(request: Request, deps: Deps) -> Response:
            body = None
            if request.method == "POST":
                try:
                    body = json_object(request, allow_empty=True)
                except InvalidRequestError as exc:
                    return Call(request, event).error(UbdccError(missing, str(exc)))
            call = Call(request, event, body)
            try:
                return await handler(call, deps)
            except UbdccError as exc:
                return call.error(exc)
            except (UnknownExchangeError, UnknownMarketError) as exc:
                return call.error(UbdccError(unknown, str(exc)))
            except (InvalidRequestError, InvalidBookIdError) as exc:
                return call.error(UbdccError(missing, str(exc)))
            except LimitExceededError as exc:
                return call.error(UbdccError(ErrorId.LIMIT_EXCEEDED, str(exc)))
            except NotFoundError as exc:
                return call.error(UbdccError(ErrorId.NOT_FOUND, str(exc)))
            except CatalogUnavailableError as exc:
                return call.error(UbdccError(ErrorId.UNAVAILABLE, str(exc)))
            except StoreError:
                return call.error(UbdccError(ErrorId.UNAVAILABLE, "the store is unavailable; retry shortly"))

        return route

    return wrap


async def test(request: Request, deps: Deps) -> Response:
    """``/test``: the client's connection check; says nothing about stored data."""
    return Call(request, "TEST").ok(
        {"message": "Hello World!", "app": {"name": APP_NAME, "version": ladder_version()}}
    )


@ubdcc("CREATE_DEPTHCACHE", creating=True)
async def create_depthcache(call: Call, deps: Deps) -> Response:
    tenant_id = _tenant(call)
    exchange = call.text("exchange", ErrorId.MISSING_CREATE_PARAMETER)
    market = call.text("market", ErrorId.MISSING_CREATE_PARAMETER)
    replicas = call.integer("desired_quantity", ErrorId.MISSING_CREATE_PARAMETER, lo=1, hi=100) or 1
    if await _subscription(deps, tenant_id, exchange, market) is not None:
        raise UbdccError(ErrorId.ALREADY_EXISTS, f"DepthCache {exchange} {market} already exists")
    await deps.control.subscriptions.subscribe(
        tenant_id, exchange, market, replicas, UBDCC_DEPTH, actor=_principal(call)
    )
    await deps.announce(subscriptions_changed(tenant_id))
    return call.ok()


@ubdcc("CREATE_DEPTHCACHES", creating=True)
async def create_depthcaches(call: Call, deps: Deps) -> Response:
    tenant_id = _tenant(call)
    exchange = call.text("exchange", ErrorId.MISSING_CREATE_PARAMETER)
    raw = call.param("markets")
    if isinstance(raw, str):
        markets = [m.strip() for m in raw.split(",") if m.strip()]
    elif isinstance(raw, list) and all(isinstance(m, str) for m in raw):
        markets = [m for m in raw if m]
    else:
        raise UbdccError(ErrorId.MISSING_CREATE_PARAMETER, "Missing parameter: markets")
    replicas = call.integer("desired_quantity", ErrorId.MISSING_CREATE_PARAMETER, lo=1, hi=100) or 1
    for market in markets:  # refuse the whole request before creating anything
        BookKey(exchange, market)
        await deps.catalog.market(exchange, market)
    existing = {(s.exchange, s.market) for s in await deps.control.subscriptions.list_for(tenant_id)}
    for market in dict.fromkeys(markets):
        if (exchange, market) not in existing:
            await deps.control.subscriptions.subscribe(
                tenant_id, exchange, market, replicas, UBDCC_DEPTH, actor=_principal(call)
            )
    await deps.announce(subscriptions_changed(tenant_id))
    return call.ok()


@ubdcc("GET_ASKS")
async def get_asks(call: Call, deps: Deps) -> Response:
    return await _levels(call, deps, "asks")


@ubdcc("GET_BIDS")
async def get_bids(call: Call, deps: Deps) -> Response:
    return await _levels(call, deps, "bids")


async def _levels(call: Call, deps: Deps, side: str) -> Response:
    exchange = call.text("exchange", ErrorId.MISSING_READ_PARAMETER)
    market = call.text("market", ErrorId.MISSING_READ_PARAMETER)
    limit_count = call.integer("limit_count", ErrorId.MISSING_READ_PARAMETER, lo=0, hi=MAX_LEVELS)
    threshold = call.decimal("threshold_volume", ErrorId.MISSING_READ_PARAMETER)
    try:
        ref = await authorize_book(deps, _principal(call), exchange, market)
    except ForbiddenError as exc:
        raise UbdccError(ErrorId.NOT_FOUND, f"DepthCache {exchange} {market} not found") from exc
    entry = await cached_entry(deps, ref)
    now = now_ms()
    snapshot = entry.served(now, deps.settings.max_silence_ms)
    if snapshot is None:
        if entry.replicas:
            raise UbdccError(ErrorId.OUT_OF_SYNC, f"no replica of {exchange} {market} is in sync right now")
        raise UbdccError(ErrorId.NOT_RUNNING, f"no replica of {exchange} {market} is running yet")
    if limit_count is None or limit_count > snapshot.depth:
        snapshot = deepest(deps, entry, snapshot, now)
    call.used.append(f"{exchange}/{market}#{snapshot.replica}")
    levels = levels_as_numbers(snapshot, side, limit_count, threshold)
    extra = {"update_id": snapshot.update_id, "publish_time": snapshot.publish_time,
             "age_ms": max(0, now - snapshot.known_time), "replica": snapshot.replica}  # fmt: skip
    return call.ok(extra, raw=b'"%b":[%b]' % (side.encode(), levels))


@ubdcc("GET_DEPTHCACHE_LIST")
async def get_depthcache_list(call: Call, deps: Deps) -> Response:
    return call.ok({"depthcache_list": await _depthcache_list(call, deps)})


@ubdcc("GET_DEPTHCACHE_INFO")
async def get_depthcache_info(call: Call, deps: Deps) -> Response:
    exchange = call.text("exchange", ErrorId.MISSING_READ_PARAMETER)
    market = call.text("market", ErrorId.MISSING_READ_PARAMETER)
    subscription = await _subscription(deps, _tenant(call), exchange, market)
    if subscription is None:
        raise UbdccError(ErrorId.NOT_FOUND, f"DepthCache {exchange} {market} not found")
    book = BookKey(exchange, market)
    replicas = (await deps.books.peek_many([book]))[book]
    return call.ok(
        {
            "depthcache_info": _info(
                subscription, replicas, now_ms(), deps.settings.max_silence_ms, deps.books.heartbeats
            )
        }
    )


@ubdcc("STOP_DEPTHCACHE")
async def stop_depthcache(call: Call, deps: Deps) -> Response:
    exchange = call.text("exchange", ErrorId.MISSING_READ_PARAMETER)
    market = call.text("market", ErrorId.MISSING_READ_PARAMETER)
    tenant_id = _tenant(call)
    try:
        await deps.control.subscriptions.unsubscribe(tenant_id, exchange, market, actor=_principal(call))
    except NotFoundError as exc:
        raise UbdccError(ErrorId.NOT_FOUND, f"DepthCache {exchange} {market} not found") from exc
    await deps.announce(subscriptions_changed(tenant_id))
    return call.ok()


@ubdcc("GET_CLUSTER_INFO")
async def get_cluster_info(call: Call, deps: Deps) -> Response:
    depthcaches = await _depthcache_list(call, deps)
    pods = {f"ladder-read-{deps.telemetry.worker}": {"ROLE": "ladder-read", "VERSION": ladder_version()}}
    db = {"depthcaches": depthcaches, "pods": pods, "timestamp": time.time()}
    return call.ok({"db": db, "version": ladder_version()})


@ubdcc("ADD_CREDENTIALS")
async def add_credentials(call: Call, deps: Deps) -> Response:
    raise UbdccError(ErrorId.NOT_SUPPORTED, "Ladder reads public order books and needs no venue credentials")


@ubdcc("REMOVE_CREDENTIALS")
async def remove_credentials(call: Call, deps: Deps) -> Response:
    raise UbdccError(ErrorId.NOT_SUPPORTED, "Ladder reads public order books and needs no venue credentials")


@ubdcc("GET_CREDENTIALS_LIST")
async def get_credentials_list(call: Call, deps: Deps) -> Response:
    raise UbdccError(ErrorId.NOT_SUPPORTED, "Ladder reads public order books and needs no venue credentials")


def _principal(call: Call) -> Principal:
    principal = call.request.principal
    assert principal is not None  # every route but /test requires a caller
    return principal


def _tenant(call: Call) -> str:
    return require_tenant(_principal(call))


async def _subscription(deps: Deps, tenant_id: str, exchange: str, market: str) -> Subscription | None:
    for subscription in await deps.control.subscriptions.list_for(tenant_id):
        if subscription.exchange == exchange and subscription.market == market:
            return subscription
    return None


async def _depthcache_list(call: Call, deps: Deps) -> dict[str, dict[str, object]]:
    subscriptions = await deps.control.subscriptions.list_for(_tenant(call))
    books = [BookKey(s.exchange, s.market) for s in subscriptions]
    stored = await deps.books.peek_many(books)
    now = now_ms()
    listing: dict[str, dict[str, object]] = {}
    for subscription, book in zip(subscriptions, books, strict=True):
        info = _info(subscription, stored[book], now, deps.settings.max_silence_ms, deps.books.heartbeats)
        listing.setdefault(subscription.exchange, {})[subscription.market] = info
    return listing


def _info(
    subscription: Subscription,
    replicas: dict[int, Snapshot],
    now: int,
    max_silence_ms: int,
    heartbeats: Heartbeats,
) -> dict[str, object]:
    """One DepthCache the UBDCC way; a replica is ``running`` only while synced and fresh."""
    created_s = subscription.created_at / 1000
    distribution: dict[str, dict[str, object]] = {}
    for replica, snapshot in sorted(replicas.items()):
        running = choose_replica([snapshot], now, max_silence_ms, heartbeats) is not None
        distribution[str(replica)] = {
            "STATUS": "running" if running else "starting",
            "CREATED_TIME": created_s,
            "LAST_RESTART_TIME": None,
            "RESTARTS": 0,
            "LADDER_STATUS": snapshot.status.label,
            "UPDATE_ID": snapshot.update_id,
            "PUBLISH_TIME": snapshot.publish_time,
        }
    for pending in range(len(distribution), subscription.replicas):
        distribution[f"pending-{pending}"] = {
            "STATUS": "starting", "CREATED_TIME": created_s, "LAST_RESTART_TIME": None, "RESTARTS": 0,
        }  # fmt: skip
    return {
        "CREATED_TIME": created_s,
        "DESIRED_QUANTITY": subscription.replicas,
        "DISTRIBUTION": distribution,
        "EXCHANGE": subscription.exchange,
        "MARKET": subscription.market,
        "UPDATE_INTERVAL": None,
        "REFRESH_INTERVAL": None,
    }
