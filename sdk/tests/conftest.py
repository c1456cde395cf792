"""A real aiohttp server, scripted per test, that the SDK's clients talk to over real sockets.

The server runs on its own event loop in a background thread, so blocking (`Ladder`) and asyncio
(`AsyncLadder`) clients can both use it. A test scripts the answers to each route, in order, and
afterwards reads what the server saw. The stream route plays one scripted session per connection.
Tests reach everything through fixtures (the server object carries `book` and `error` for sample
bodies), so they import nothing from here and run under any pytest import mode.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import pytest
import trustme
from aiohttp import WSCloseCode, web
from ladder_sdk import RetryPolicy

TEST_KEY = "ldr_TESTtestTESTtestTESTtestTESTtest123456"


def book_json(update_id: int, exchange: str = "binance.com", market: str = "ETHBTC") -> dict[str, object]:
    """A book answer in the API's shape."""
    return {
        "exchange": exchange,
        "market": market,
        "update_id": update_id,
        "event_time": 1764500000123,
        "ingest_time": 1764500000125,
        "publish_time": 1764500000126,
        "age_ms": 3,
        "replica": 1,
        "status": "synced",
        "truncated": False,
        "bids": [["0.03512000", "4.20000000"], ["0.03511000", "1.5"]],
        "asks": [["0.03513000", "1.00000000"]],
    }


def error_json(code: str, message: str = "nope", request_id: str = "req-1") -> dict[str, object]:
    """An error body in the API's shape."""
    return {"error": {"code": code, "message": message, "request_id": request_id}}


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    body: object = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class Seen:
    """One request as the server received it."""

    method: str
    raw_path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    at: float


# A scripted answer: (status, JSON body or None[, headers[, delay in seconds]]).
Answer = tuple[int, object] | tuple[int, object, dict[str, str]] | tuple[int, object, dict[str, str], float]
# Stream session steps: ("send", update_id) | ("drop",) | ("close", code) | ("hold",)
# | ("reject", status, JSON body[, headers]) to refuse the WebSocket handshake.
Step = (
    tuple[Literal["send"], int]
    | tuple[Literal["drop"]]
    | tuple[Literal["close"], int]
    | tuple[Literal["hold"]]
    | tuple[Literal["reject"], int, object]
    | tuple[Literal["reject"], int, object, dict[str, str]]
)


class ScriptedServer:
    """The scripted aiohttp server; `url` is its base URL (http or https)."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.replies: dict[tuple[str, str], deque[Reply]] = defaultdict(deque)
        self.seen: list[Seen] = []
        self.sessions: deque[list[Step]] = deque()
        self.stream_seen: list[Seen] = []
        self._ssl = ssl_context
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.url = ""

    book = staticmethod(book_json)
    error = staticmethod(error_json)

    def script(self, method: str, raw_path: str, *answers: Answer) -> None:
        """Answer the next requests to `method raw_path` with `answers`, in order."""
        self.replies[(method, raw_path)].extend(Reply(*answer) for answer in answers)

    def script_stream(self, *sessions: list[Step]) -> None:
        """Play one session per incoming stream connection, in order."""
        self.sessions.extend(sessions)

    def requests_to(self, raw_path: str) -> list[Seen]:
        """The requests the server got for one path."""
        return [seen for seen in self.seen if seen.raw_path == raw_path]

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/v1/stream", self._stream)
        app.router.add_route("*", "/{tail:.*}", self._answer)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._ssl)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"{'https' if self._ssl else 'http'}://127.0.0.1:{port}"

    def _record(self, request: web.Request, body: bytes) -> Seen:
        return Seen(
            method=request.method,
            raw_path=request.raw_path.split("?", 1)[0],
            query=dict(request.query),
            headers=dict(request.headers),
            body=body,
            at=time.monotonic(),
        )

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        seen = self._record(request, await request.read())
        self.seen.append(seen)
        queue = self.replies.get((seen.method, seen.raw_path))
        if not queue:
            return web.json_response(error_json("not_found", f"unscripted {seen.raw_path}"), status=404)
        return await _respond(queue.popleft())

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        self.stream_seen.append(self._record(request, b""))
        steps: list[Step] = self.sessions.popleft() if self.sessions else [("hold",)]
        if steps[0][0] == "reject":
            return await _respond(Reply(*steps[0][1:]))
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        for step in steps:
            if step[0] == "send":
                update_id = step[1]
                assert isinstance(update_id, int)
                await ws.send_str(json.dumps(book_json(update_id)))
            elif step[0] == "drop":
                assert request.transport is not None
                request.transport.abort()
                return ws
            elif step[0] == "close":
                code = step[1]
                assert isinstance(code, int)
                await ws.close(code=code, message=b"closed by the test")
                return ws
            elif step[0] == "hold":
                await ws.receive()  # until the client goes away
        await ws.close(code=WSCloseCode.GOING_AWAY)
        return ws


async def _respond(reply: Reply) -> web.StreamResponse:
    if reply.delay:
        await asyncio.sleep(reply.delay)
    if reply.body is None:
        return web.Response(status=reply.status, headers=reply.headers)
    return web.json_response(reply.body, status=reply.status, headers=reply.headers)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A plain-HTTP scripted server on a free port."""
    running = ScriptedServer()
    running.start()
    yield running
    running.stop()


@pytest.fixture
def api_key() -> str:
    """A key in Ladder's shape, for the clients under test."""
    return TEST_KEY


@pytest.fixture
def fast_backoff() -> RetryPolicy:
    """A RetryPolicy whose computed backoff stays in the milliseconds."""
    return RetryPolicy(initial_delay=0.01, max_delay=0.05)


@pytest.fixture(scope="session")
def ca() -> trustme.CA:
    """A throwaway certificate authority."""
    return trustme.CA()


@pytest.fixture
def tls_server(ca: trustme.CA) -> Iterator[ScriptedServer]:
    """An HTTPS scripted server whose certificate only the throwaway CA vouches for."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    running = ScriptedServer(ssl_context=context)
    running.start()
    yield running
    running.stop()


@pytest.fixture
def dead_url() -> str:
    """A URL on which nothing listens (a port that was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"
