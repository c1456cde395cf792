"""The API key a request presents, and the places it may present it.

Headers everywhere (``X-API-Key``, ``Authorization: Bearer``); on the stream route only, where
browsers cannot set headers on a WebSocket, also a ``ladder.key.<key>`` subprotocol or
``?api_key=``.
"""

from __future__ import annotations

from collections.abc import Mapping

from read_functions.app.messages import Request

STREAM_PROTOCOL = "ladder.v1"
"""The WebSocket subprotocol a stream answers with; a browser offers it beside its key."""
MULTI_STREAM_PROTOCOL = "ladder.v2"
"""The subprotocol of the multiplexed stream: many books on one socket, subscribed by message."""
KEY_PROTOCOL_PREFIX = "ladder.key."
"""A browser's key, offered as the WebSocket subprotocol ``ladder.key.<key>`` (never echoed)."""


def presented_key(request: Request, *, query_allowed: bool = False) -> str | None:
    """The API key in ``X-API-Key`` or ``Authorization: Bearer`` (or, where allowed, a
    ``ladder.key.<key>`` WebSocket subprotocol or ``?api_key=``).

    Only the stream route allows the last two: browsers cannot set headers on a WebSocket, and
    the subprotocol keeps the key out of the URL (the console uses it). A key in a URL is never
    logged here (the server keeps no access log).
    """
    key = request.headers.get("x-api-key")
    if key:
        return key.strip()
    authorization = request.headers.get("authorization")
    if authorization:
        scheme, _, credentials = authorization.partition(" ")
        if scheme.lower() == "bearer" and credentials.strip():
            return credentials.strip()
    if query_allowed:
        for offered in offered_protocols(request.headers):
            if offered.startswith(KEY_PROTOCOL_PREFIX) and len(offered) > len(KEY_PROTOCOL_PREFIX):
                return offered.removeprefix(KEY_PROTOCOL_PREFIX)
        return request.query.get("api_key") or None
    return None


def offered_protocols(headers: Mapping[str, str]) -> list[str]:
    """The WebSocket subprotocols a client offers (a browser's key may be one: never log these)."""
    return [p.strip() for p in (headers.get("sec-websocket-protocol") or "").split(",") if p.strip()]
