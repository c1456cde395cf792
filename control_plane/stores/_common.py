"""What both control stores share: how books and replicas are written as strings, and the rule
that turns subscriptions into what each book should be (how many replicas, how deep).

``|`` separates the parts: neither an exchange id nor a market may contain it (see
control_plane.validation and book_store.schema). A replica is ``exchange|market|replica|depth``;
one written before depth existed (``exchange|market|replica``) reads as the default depth.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any, ParamSpec, TypeVar

from book_store.schema import BookKey
from control_plane.depth import DEFAULT_DEPTH
from control_plane.errors import LimitExceededError
from control_plane.models import BookWish, ReplicaAssignment, Tenant
from ladder_process.errors import StoreError, StoreUnavailableError

SEPARATOR = "|"

_P = ParamSpec("_P")
_R = TypeVar("_R")
_Exceptions = tuple[type[BaseException], ...]


def error_boundary(
    backend: str, unreachable: _Exceptions, failed: _Exceptions
) -> Callable[[Callable[_P, Awaitable[_R]]], Callable[_P, Coroutine[Any, Any, _R]]]:
    """Decorator for a store's public methods: the one place where a backend's exceptions become
    ``StoreUnavailableError`` (``unreachable``) or ``StoreError`` (``failed``). Messages name the
    exception class only; the backend's text stays on ``__cause__`` for logs.
    """

    def decorate(method: Callable[_P, Awaitable[_R]]) -> Callable[_P, Coroutine[Any, Any, _R]]:
        @functools.wraps(method)
        async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return await method(*args, **kwargs)
            except unreachable as exc:
                raise StoreUnavailableError(f"the control store ({backend}) cannot be reached") from exc
            except failed as exc:
                raise StoreError(f"the control store ({backend}) failed: {type(exc).__name__}") from exc

        return wrapper

    return decorate


def max_markets_reached(adding: int, room: int) -> LimitExceededError:
    """The refusal of a put that would add ``adding`` markets where only ``room`` more fit."""
    if adding == 1:
        return LimitExceededError("the tenant's max_markets is reached; unsubscribe from a market first")
    return LimitExceededError(
        f"this would add {adding} markets but the tenant's max_markets leaves room for {room}; "
        "nothing was subscribed"
    )


def book_id(book: BookKey) -> str:
    return f"{book.exchange}{SEPARATOR}{book.market}"


def parse_book_id(text: str) -> BookKey:
    exchange, market = text.split(SEPARATOR, 1)
    return BookKey(exchange, market)


def replica_id(replica: ReplicaAssignment) -> str:
    return SEPARATOR.join((book_id(replica.book), str(replica.replica), str(replica.depth)))


def parse_replica_id(text: str, node_id: str) -> ReplicaAssignment:
    exchange, market, replica, *depth = text.split(SEPARATOR)
    return ReplicaAssignment(
        exchange, market, int(replica), node_id, int(depth[0]) if depth else DEFAULT_DEPTH
    )


def name_key(name: str) -> str:
    """Tenant names are unique regardless of case."""
    return name.casefold()


def desired_from(
    wishes: Iterable[tuple[str, BookKey, BookWish]], tenants: Mapping[str, Tenant]
) -> dict[BookKey, BookWish]:
    """Per book, the most replicas and the deepest depth any enabled tenant asked for, each wish
    capped by its tenant's ``max_replicas`` and ``max_depth``.

    The two maxima are taken apart: one tenant may want many shallow replicas and another one
    deep replica, and the book is kept with many deep replicas. ``wishes`` are
    ``(tenant_id, book, wish)``; a wish of an unknown tenant counts for nothing.
    """
    desired: dict[BookKey, BookWish] = {}
    for tenant_id, book, (replicas, depth) in wishes:
        tenant = tenants.get(tenant_id)
        if tenant is None or tenant.disabled:
            continue
        replicas, depth = min(replicas, tenant.max_replicas), min(depth, tenant.max_depth)
        held = desired.get(book)
        if held is not None:
            replicas, depth = max(replicas, held.replicas), max(depth, held.depth)
        desired[book] = BookWish(replicas, depth)
    return desired
