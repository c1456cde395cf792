"""The aiohttp adapter: HTTP requests into core :class:`Request`\\ s, core responses out.

It uses aiohttp's low-level server (no application router or middleware): the core already
routes, and the read path is too short to pay for a second layer. The one thing only this
adapter can do is the WebSocket stream: when the core accepts ``/v1/stream`` it returns a plan,
and this adapter upgrades the connection and runs the stream the handler made
(:class:`read_functions.app.messages.Stream`).
:mod:`read_functions.server.http1` hands it a connection for exactly that one request, so any other
answer (a refusal, a failed handshake) closes the connection: aiohttp's own limits, timeouts and
error pages never serve a second request. No access log is kept, so a key sent as ``?api_key=``
is never written anywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import WSMsgType, web

from control_plane.errors import InvalidRequestError
from ladder_process.errors import LadderError
from read_functions.app.api_key import STREAM_PROTOCOL
from read_functions.app.dispatch import Dispatcher, request_id
from read_functions.app.errors import PayloadTooLargeError, close_code, error_response
from read_functions.app.messages import Request, Response, Stream, parse_query

_CLOSE_REASON_MAX = 120


class AiohttpAdapter:
    """The request handler of one listener (``secure``: it serves HTTPS)."""

    def __init__(
        self,
        dispatcher: Dispatcher[Any],
        max_body_bytes: int,
        *,
        secure: bool = False,
        max_head_bytes: int = 8190,
    ) -> None:
        self._dispatch = dispatcher
        self._max_body = max_body_bytes
        self._max_head = max_head_bytes
        self._scheme = "https://" if secure else "http://"

    def server(self) -> web.Server:
        """aiohttp's protocol, taking any head the caller's own limit let through."""
        limit = self._max_head
        return web.Server(
            self.handle, access_log=None, max_line_size=limit, max_field_size=limit, max_headers=limit
        )

    async def handle(self, http: web.BaseRequest) -> web.StreamResponse:
        path, _, query_string = http.raw_path.partition("?")
        headers = http.headers
        rid = request_id(headers.get("X-Request-ID"))
        body = b""
        if http.body_exists:
            try:
                body = await self._read_body(http)
            except PayloadTooLargeError as exc:
                return _to_aiohttp(error_response(exc, rid))
        request = Request(
            method=http.method,
            raw_path=path,
            query=parse_query(query_string),
            headers=headers,
            body=body,
            request_id=rid,
            origin=self._scheme + headers.get("Host", ""),
            query_string=query_string,
            peer=http.remote or "",
        )
        response = await self._dispatch(request)
        if response.stream is None:
            return _to_aiohttp(response)
        socket = web.WebSocketResponse(heartbeat=30.0, protocols=(STREAM_PROTOCOL,))
        if not socket.can_prepare(http).ok:
            refusal = InvalidRequestError("not a valid WebSocket handshake (RFC 6455 section 4.2.1)")
            return _to_aiohttp(error_response(refusal, rid))
        socket.headers.update(response.headers)
        return await self._stream(http, socket, response.stream)

    async def _read_body(self, http: web.BaseRequest) -> bytes:
        if http.content_length is not None and http.content_length > self._max_body:
            raise PayloadTooLargeError.over(self._max_body)
        body = await http.content.read(self._max_body + 1)
        if len(body) > self._max_body:
            raise PayloadTooLargeError.over(self._max_body)
        return body

    async def _stream(
        self, http: web.BaseRequest, socket: web.WebSocketResponse, stream: Stream
    ) -> web.StreamResponse:
        await socket.prepare(http)
        stream.start()
        incoming = asyncio.get_running_loop().create_task(_discard_incoming(socket))
        incoming.add_done_callback(lambda _: stream.close())  # the client went away
        try:
            while (message := await stream.next_message()) is not None:
                await socket.send_frame(message, WSMsgType.TEXT)
        except LadderError as exc:
            await socket.close(code=close_code(exc), message=str(exc).encode()[:_CLOSE_REASON_MAX])
        except ConnectionError:
            pass  # the client went away mid-send
        finally:
            stream.stop()
            incoming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await incoming
        return socket


async def _discard_incoming(socket: web.WebSocketResponse) -> None:
    """Read (and ignore) what the client sends, so that close and ping frames are handled."""
    async for _message in socket:
        pass


def _to_aiohttp(response: Response) -> web.Response:
    """An answer that is not a stream: the connection closes after it (see the module's doc)."""
    headers = response.headers
    if response.content_type is not None:
        headers["Content-Type"] = response.content_type
    answer = web.Response(status=response.status, body=response.body or None, headers=headers)
    answer.force_close()
    return answer
