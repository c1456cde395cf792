"""The AWS Lambda adapter: API Gateway HTTP API (payload 2.0) and Function URL events.

Both event kinds share the 2.0 shape (``rawPath``, ``rawQueryString``, lower-cased ``headers``,
``requestContext.http``, ``body`` maybe base64). One event loop is created at import and kept for
the life of the sandbox; the store connection, caches and control service are built on the first
event and reused by every warm invocation. Books are read without a change feed (the sandbox is
frozen between invocations, so a subscription could not keep a cache true); keys and
entitlements stay cached with their usual 1 s bound. Usage is flushed at the end of an
invocation when the last flush is a second old. WebSocket streams need the server deployment.
"""

from __future__ import annotations

import asyncio
import base64
import os
from typing import Any

from control_plane.errors import InvalidRequestError
from ladder_process.redaction import install_log_redaction, secrets_of
from read_functions.app.dispatch import request_id
from read_functions.app.errors import PayloadTooLargeError, error_response
from read_functions.app.messages import Request, Response, parse_query
from read_functions.server.aws_secrets import resolve_secret_arns
from read_functions.settings import load_settings
from read_functions.wiring import ReadApp


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


_LOOP = _new_loop()

_TEXT_TYPES = ("application/json", "text/")
_state: dict[str, ReadApp] = {}


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    """The Lambda entry point (``read_functions.server.lambda_handler.handler``)."""
    return _LOOP.run_until_complete(_handle(event))


async def _handle(event: dict[str, Any]) -> dict[str, Any]:
    app = _state.get("app") or await _start()
    try:
        request = to_request(event, app.settings.max_body_bytes)
    except PayloadTooLargeError as exc:
        return to_lambda(error_response(exc, request_id(None)))
    response = await app.api(request)
    if response.stream is not None:
        response = error_response(
            InvalidRequestError("WebSocket streaming is served by the server deployment, not Lambda"),
            request.request_id,
        )
    await app.flush_if_due()
    return to_lambda(response)


async def _start() -> ReadApp:
    resolve_secret_arns(os.environ)
    settings = load_settings()
    install_log_redaction(*secrets_of(settings))  # on the runtime's own handler
    app = _state["app"] = await ReadApp.open(settings, follow_changes=False)
    return app


def to_request(event: dict[str, Any], max_body_bytes: int) -> Request:
    """A core request from an API Gateway v2 / Function URL event."""
    context = event.get("requestContext") or {}
    http = context.get("http") or {}
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    raw_body = event.get("body") or ""
    body = base64.b64decode(raw_body) if event.get("isBase64Encoded") else str(raw_body).encode()
    if len(body) > max_body_bytes:
        raise PayloadTooLargeError.over(max_body_bytes)
    path = event.get("rawPath") or http.get("path") or "/"
    query_string = event.get("rawQueryString") or ""
    return Request(
        method=str(http.get("method", "GET")).upper(),
        raw_path=path,
        query=parse_query(query_string),
        headers=headers,
        body=body,
        request_id=request_id(headers.get("x-request-id")),
        origin=f"https://{context.get('domainName', 'lambda')}",
        query_string=query_string,
        peer=str(http.get("sourceIp", "")),
    )


def to_lambda(response: Response) -> dict[str, Any]:
    """The 2.0 response format; anything but uncompressed text goes base64-encoded."""
    headers = dict(response.headers)
    if response.content_type is not None:
        headers["Content-Type"] = response.content_type
    text = (
        response.content_type is not None
        and response.content_type.startswith(_TEXT_TYPES)
        and "Content-Encoding" not in headers
    )
    body = response.body.decode() if text else base64.b64encode(response.body).decode()
    return {"statusCode": response.status, "headers": headers, "body": body, "isBase64Encoded": not text}
