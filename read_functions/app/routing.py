"""The route table: one list of :class:`Route` values, matched on raw path segments.

Templates are ``/v1/books/{exchange}/{market}``: a ``{name}`` segment captures one path segment,
percent-decoded after splitting, so ``BTC%2FUSD`` is the single market ``BTC/USD``. Static paths
are found with one dict look-up; templated ones are grouped by segment count and their first
segment after the version (``books``, ``admin``...), so a path is compared with one or two
templates at most, and the result is remembered: readers ask for the same few thousand paths
over and over, and a remembered one costs one dict look-up. Each route also carries what the
OpenAPI document says about it, so the document is generated from the very list that serves
requests.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, TypeVar
from urllib.parse import unquote

from control_plane.errors import ApiError, InvalidRequestError, NotFoundError
from read_functions.app.errors import MethodNotAllowedError
from read_functions.app.messages import Request, Response

C = TypeVar("C")
"""What a route's handler is given beside the request: the process's dependencies, which the core
never looks into (``read_functions.deps.Deps`` where the app is wired together)."""

Handler = Callable[[Request, C], Awaitable[Response]]
JsonSchema = Mapping[str, Any]


class Audience(enum.Enum):
    """Who may call a route."""

    PUBLIC = "public"  # no key
    TENANT = "tenant"  # a tenant's key (or the operator's, acting for no tenant)
    ADMIN = "admin"  # the operator key only


@dataclass(frozen=True, slots=True)
class Param:
    """A query parameter, for validation messages and the OpenAPI document."""

    name: str
    schema: JsonSchema
    description: str
    required: bool = False


@dataclass(frozen=True, slots=True)
class Reply:
    """One documented response of a route."""

    description: str
    schema: JsonSchema | None = None
    content_type: str = "application/json"
    headers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Route(Generic[C]):
    method: str
    path: str
    handler: Handler[C]
    access: Audience
    summary: str
    tag: str
    params: tuple[Param, ...] = ()
    body: JsonSchema | None = None
    body_required: bool = True
    replies: Mapping[int, Reply] = field(default_factory=dict)
    operation_id: str = ""
    query_key: bool = False  # the key may come as ?api_key= (the WebSocket stream only)
    websocket: bool = False  # answered over a WebSocket: the one kind of route a connection may upgrade on
    mutates: bool = False  # a GET that changes state (UBDCC's create and stop); see changes_state
    segments: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "segments", tuple(self.path.split("/")))

    @property
    def changes_state(self) -> bool:
        """True for a route that may change what is stored (every method but GET, and some GETs)."""
        return self.method != "GET" or self.mutates

    @property
    def path_params(self) -> tuple[str, ...]:
        return tuple(s[1:-1] for s in self.segments if s.startswith("{"))


PathParams = Mapping[str, str]
_NO_PARAMS: PathParams = MappingProxyType({})
MATCHES_KEPT = 16_384
"""Templated paths remembered per router (one per book and side read lately)."""
_KEPT_PATH_LENGTH = 160  # a longer path is matched every time, so the memory kept stays small


class Router(Generic[C]):
    """Finds the route of a method and raw path, and the decoded path parameters."""

    def __init__(self, routes: Sequence[Route[C]]) -> None:
        self.routes = tuple(routes)
        self._static: dict[str, dict[str, Route[C]]] = {}
        self._templated: dict[tuple[int, str], list[Route[C]]] = {}
        self._matched: dict[tuple[str, str], tuple[Route[C], PathParams]] = {}
        for route in self.routes:
            if "{" in route.path:
                group = self._templated.setdefault(_group(route.segments), [])
                if any(r.method == route.method and r.segments == route.segments for r in group):
                    raise ValueError(f"duplicate route {route.method} {route.path}")
                group.append(route)
            else:
                methods = self._static.setdefault(route.path, {})
                if route.method in methods:
                    raise ValueError(f"duplicate route {route.method} {route.path}")
                methods[route.method] = route

    def match(self, method: str, raw_path: str) -> tuple[Route[C], PathParams]:
        """The route and its (read-only) path parameters; NotFoundError or MethodNotAllowedError.

        HEAD is answered by the GET route (RFC 9110 section 9.3.2): the adapter drops the body.
        """
        if method == "HEAD":
            method = "GET"
        matched = self._matched.get((method, raw_path))
        if matched is not None:
            return matched
        methods = self._static.get(raw_path)
        if methods is not None:
            route = methods.get(method)
            if route is None:
                raise _not_allowed(methods)
            return route, _NO_PARAMS
        parts = raw_path.split("/")
        allowed: dict[str, Route[C]] = {}
        for route in self._templated.get(_group(parts), ()):
            params = _bind(route.segments, parts)
            if params is None:
                continue
            if route.method == method:
                matched = route, MappingProxyType(params)
                if len(raw_path) <= _KEPT_PATH_LENGTH:
                    if len(self._matched) >= MATCHES_KEPT:
                        self._matched.clear()
                    self._matched[(method, raw_path)] = matched
                return matched
            allowed[route.method] = route
        if allowed:
            raise _not_allowed(allowed)
        raise NotFoundError("no such route")

    def streams(self, method: str, raw_path: str) -> bool:
        """Whether the route of this request answers over a WebSocket (``Route.websocket``)."""
        try:
            route, _ = self.match(method, raw_path)
        except ApiError:
            return False
        return route.websocket


def _group(segments: Sequence[str]) -> tuple[int, str]:
    """Segment count and the segment after ``/v1`` (templates never start with a parameter)."""
    return len(segments), segments[2] if len(segments) > 2 else ""


def _bind(template: tuple[str, ...], parts: list[str]) -> dict[str, str] | None:
    params: dict[str, str] = {}
    for expected, actual in zip(template, parts, strict=True):
        if expected.startswith("{"):
            if not actual:
                return None
            params[expected[1:-1]] = _decode(actual) if "%" in actual else actual
        elif expected != actual:
            return None
    return params


def _decode(segment: str) -> str:
    try:
        return unquote(segment, errors="strict")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError("a path segment is not valid UTF-8 after percent-decoding") from exc


def _not_allowed(methods: Mapping[str, Route[Any]]) -> MethodNotAllowedError:
    allowed = set(methods)
    if "GET" in allowed:
        allowed.add("HEAD")
    return MethodNotAllowedError(allowed)
