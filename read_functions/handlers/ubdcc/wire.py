"""The UBDCC wire conventions: envelopes, error ids, parameters and level conversion.

UBDCC answers application errors with HTTP 200 and ``{"result": "ERROR", "error_id": "#NNNN",
"event": ..., "message": ...}``, treats a parameter that is missing, empty or the string
``None`` as absent, and adds a ``debug`` block when asked. Its levels are JSON numbers: they are
made here from the stored decimal strings by dropping the quotes of the pre-encoded bytes, so
the digits the venue sent are the digits the client parses. Only these routes emit numbers.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

import orjson

from book_store.codec import Snapshot
from read_functions.app.messages import JSON, Request, Response

APP_NAME = "ubdcc-restapi"
# How deep create_depthcache(s) subscribes. UBDCC's nodes load 1000-level REST snapshots, spot and
# futures alike, keep 1000 levels per side, and get_asks / get_bids hand out every level they hold
# (limit_count only cuts): its clients read up to 1000 levels. 1000 is also the USD-M maximum.
UBDCC_DEPTH = 1000


class ErrorId(enum.Enum):
    """The error ids UBDCC clients know, and the few Ladder adds (``#8xxx``)."""

    MISSING_CREATE_PARAMETER = "#1016"
    ALREADY_EXISTS = "#1024"
    MISSING_READ_PARAMETER = "#1025"
    NOT_RUNNING = "#4000"
    UNAVAILABLE = "#5000"
    OUT_OF_SYNC = "#6000"
    NOT_FOUND = "#7000"
    UNKNOWN_MARKET = "#8000"
    LIMIT_EXCEEDED = "#8001"
    NOT_SUPPORTED = "#8002"


class UbdccError(Exception):
    """An application error UBDCC-style: answered with HTTP 200 and ``result: ERROR``."""

    def __init__(self, error_id: ErrorId, message: str) -> None:
        super().__init__(message)
        self.error_id = error_id


class Call:
    """One UBDCC request: its event name, parameters (query or JSON body) and debug timing."""

    def __init__(self, request: Request, event: str, body: dict[str, object] | None = None) -> None:
        self.request = request
        self.event = event
        self.started = time.perf_counter()
        self._body = body
        self.debug = (request.query.get("debug") or str((body or {}).get("debug", ""))).lower() == "true"
        self.used: list[str] = []

    def param(self, name: str) -> object | None:
        """A parameter, or None when missing, empty or ``None`` (UBDCC's convention)."""
        value = self._body.get(name) if self._body is not None else self.request.query.get(name)
        if value is None or value == "" or value == "None":
            return None
        return value

    def text(self, name: str, missing: ErrorId) -> str:
        value = self.param(name)
        if value is None:
            raise UbdccError(missing, f"Missing parameter: {name}")
        if not isinstance(value, str):
            raise UbdccError(missing, f"Parameter {name} must be a string")
        return value

    def integer(self, name: str, invalid: ErrorId, *, lo: int, hi: int) -> int | None:
        value = self.param(name)
        if value is None:
            return None
        try:
            number = int(value) if isinstance(value, int | str) and not isinstance(value, bool) else None
        except ValueError:
            number = None
        if number is None or not lo <= number <= hi:
            raise UbdccError(invalid, f"Parameter {name} must be an integer between {lo} and {hi}")
        return number

    def decimal(self, name: str, invalid: ErrorId) -> Decimal | None:
        value = self.param(name)
        if value is None:
            return None
        try:
            number = Decimal(str(value)) if not isinstance(value, bool) else None
        except InvalidOperation:
            number = None
        if number is None or not number.is_finite() or number < 0:
            raise UbdccError(invalid, f"Parameter {name} must be a non-negative number")
        return number

    def ok(self, payload: Mapping[str, object] | None = None, *, raw: bytes = b"") -> Response:
        """``{"result": "OK", "event": ..., **payload}``; ``raw`` is spliced in pre-encoded."""
        head = {"result": "OK", "event": self.event, **(payload or {})}
        if self.debug:
            head["debug"] = self._debug_block()
        body = orjson.dumps(head)
        if raw:
            body = b"%b,%b}" % (body[:-1], raw)
        return Response(200, body, JSON, {})

    def error(self, exc: UbdccError) -> Response:
        payload: dict[str, object] = {
            "result": "ERROR",
            "error_id": exc.error_id.value,
            "event": self.event,
            "message": str(exc),
        }
        if self.debug:
            payload["debug"] = self._debug_block()
        return Response(200, orjson.dumps(payload), JSON, {})

    def _debug_block(self) -> dict[str, object]:
        return {
            "cluster_execution_time": time.perf_counter() - self.started,
            "request_time": 0,
            "transmission_time": 0,
            "url": self.request.url,
            "used_pods": self.used,
        }


def levels_as_numbers(
    snapshot: Snapshot, side: str, limit_count: int | None, threshold: Decimal | None
) -> bytes:
    """The side's levels as ``[price, qty],...`` with JSON numbers, best first.

    ``threshold``: keep levels from the best while the running sum of price x quantity stays at
    or under it (the best level is always kept); ``limit_count`` applies after.
    """
    count = snapshot.depth if limit_count is None else limit_count
    if threshold is not None:
        count = min(count, _levels_within(snapshot, side, threshold))
    blob = snapshot.bids(count) if side == "bids" else snapshot.asks(count)
    return bytes(blob).replace(b'"', b"")


def _levels_within(snapshot: Snapshot, side: str, threshold: Decimal) -> int:
    blob = snapshot.bids(snapshot.depth) if side == "bids" else snapshot.asks(snapshot.depth)
    levels = orjson.loads(b"".join((b"[", blob, b"]")))
    total = Decimal(0)
    for kept, (price, quantity) in enumerate(levels):
        total += Decimal(price) * Decimal(quantity)
        if total > threshold:
            return max(kept, 1)
    return len(levels)
