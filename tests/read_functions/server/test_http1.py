"""The read API's own HTTP/1.1 (read_functions/server/http1.py) in raw bytes over real sockets.

Each test writes exact request bytes and parses the answers itself, so what is checked is what
goes over the wire: order, framing, ``Connection`` handling, refusals and timeouts.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import time
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import orjson
import pytest
import redis.asyncio as redis

from read_functions.app.dispatch import Dispatcher
from read_functions.app.messages import Request, Response
from read_functions.app.routing import Router
from read_functions.routes import ROUTES
from read_functions.server.http1 import MAX_PIPELINED, Http1Server, encode_response
from read_functions.server.http1_machine import MAX_HEAD_BYTES
from read_functions.server.workers import bind
from tests.read_functions.helpers import ADMIN_KEY, ETH, Stack, snapshot
from tests.read_functions.wire import (
    Reply,
    assert_closed,
    assert_open,
    assert_refused,
    chunked,
    connect,
    get,
    raw,
    read_reply,
)
from tests.stores import pause

BOOK = "/v1/books/binance.com/ETHBTC"
STREAM = "/v1/stream?exchange=binance.com&market=ETHBTC"
DATE = "Mon, 01 Jan 2024 00:00:00 GMT"
WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def tenant_body() -> bytes:
    fields = {"name": f"t{time.perf_counter_ns()}", "max_markets": 1, "max_replicas": 1}
    return orjson.dumps({**fields, "rate_limit_rps": 10, "burst": 10})


@contextlib.asynccontextmanager
async def running(server: Http1Server) -> AsyncIterator[str]:
    """``server`` on a free port until the block ends; its URL."""
    listener = bind("test", "127.0.0.1", 0, 1, None)
    await server.start(listener.sockets[0], None)
    try:
        yield listener.url
    finally:
        await server.close()


@contextlib.asynccontextmanager
async def serving(stack: Stack, **timeouts: float) -> AsyncIterator[tuple[Http1Server, str]]:
    """A main-API server of its own on a free port, over the stack's dependencies."""
    server = Http1Server.for_api(
        Dispatcher(Router(ROUTES), stack.deps), stack.deps.settings, secure=False, **timeouts
    )
    async with running(server) as url:
        yield server, url


# -- keep-alive ------------------------------------------------------------------------------


async def test_keep_alive_until_connection_close(stack: Stack) -> None:
    async with connect(stack.url) as (reader, writer):
        for rid in ("first", "second", "third"):
            writer.write(get("/healthz", rid))
            reply = await read_reply(reader)
            assert (reply.status, reply.headers["x-request-id"]) == (200, rid)
            assert "connection" not in reply.headers and orjson.loads(reply.body) == {"status": "ok"}
        await assert_open(reader)
        writer.write(get("/healthz", "last", "Connection: close"))
        reply = await read_reply(reader)
        assert (reply.status, reply.headers["connection"]) == (200, "close")
        await assert_closed(reader)


async def test_http10_closes_unless_asked_to_keep_alive(stack: Stack) -> None:
    async with connect(stack.url) as (reader, writer):
        writer.write(get("/healthz", "plain", version="1.0"))
        reply = await read_reply(reader)
        assert (reply.status, reply.headers["connection"]) == (200, "close")
        await assert_closed(reader)
    async with connect(stack.url) as (reader, writer):
        for rid in ("kept", "again"):
            writer.write(get("/healthz", rid, "Connection: keep-alive", version="1.0"))
            reply = await read_reply(reader)
            assert (reply.status, reply.headers["x-request-id"]) == (200, rid)
            assert reply.headers["connection"] == "keep-alive"
        await assert_open(reader)


async def test_absolute_form_target(stack: Stack) -> None:
    async with connect(stack.url) as (reader, writer):
        writer.write(get(f"{stack.url}/healthz", "absolute"))
        assert (await read_reply(reader)).status == 200


# -- pipelining ------------------------------------------------------------------------------


async def test_pipelined_requests_are_answered_in_order(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(42))
    key = f"X-API-Key: {headers['X-API-Key']}"
    kinds = [("/healthz", (), 200), ("/v1/nope", (), 404), (BOOK, (key,), 200), (BOOK, (), 401)]
    count = MAX_PIPELINED + 4  # more than are read before the first answers go out
    expected = [(f"p{i}", *kinds[i % len(kinds)]) for i in range(count)]
    async with connect(stack.url) as (reader, writer):
        writer.write(b"".join(get(path, rid, *extra) for rid, path, extra, _ in expected))
        for rid, path, _, status in expected:
            reply = await read_reply(reader)
            assert (reply.headers["x-request-id"], reply.status) == (rid, status), path
            if path == BOOK and status == 200:
                assert orjson.loads(reply.body)["update_id"] == 42
        await assert_open(reader)


async def test_half_close_gets_every_answer_then_the_close(stack: Stack) -> None:
    async with connect(stack.url) as (reader, writer):
        writer.write(b"".join(get("/healthz", f"h{i}") for i in range(3)))
        writer.write_eof()
        assert [(await read_reply(reader)).headers["x-request-id"] for _ in range(3)] == ["h0", "h1", "h2"]
        await assert_closed(reader)


# -- refusals --------------------------------------------------------------------------------


async def test_malformed_request_gets_400_after_the_answers_before_it(stack: Stack) -> None:
    async with connect(stack.url) as (reader, writer):
        writer.write(get("/healthz", "fine") + b"GET /healthz HTTP/1.1\r\nno colon here\r\n\r\n")
        assert (await read_reply(reader)).headers["x-request-id"] == "fine"
        reply = await read_reply(reader)
        assert_refused(reply, 400, "invalid_request")
        await assert_closed(reader)
    async with connect(stack.url) as (reader, writer):
        writer.write(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a TLS hello on the plain port
        reply = await read_reply(reader)
        assert_refused(reply, 400, "invalid_request")
        await assert_closed(reader)


async def test_request_head_over_32_kib_gets_431(stack: Stack) -> None:
    async with connect(stack.url) as (reader, writer):
        writer.write(get("/healthz", "big", f"X-Padding: {'a' * MAX_HEAD_BYTES}"))  # one read
        reply = await read_reply(reader)
        assert_refused(reply, 431, "headers_too_large")
        await assert_closed(reader)


async def test_a_header_that_never_ends_gets_431(stack: Stack) -> None:
    async with connect(stack.url) as (reader, writer):
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Padding: ")
        await asyncio.sleep(0.05)  # a read of its own: every later byte is one the parser holds back
        for _ in range(MAX_HEAD_BYTES // 1024):  # the head passes the limit with the last piece
            writer.write(b"a" * 1024)
            await writer.drain()
            await asyncio.sleep(0.001)
        reply = await read_reply(reader)
        assert_refused(reply, 431, "headers_too_large")
        await assert_closed(reader)


async def test_a_head_split_across_reads_then_a_large_body_is_served(stack: Stack) -> None:
    body = tenant_body() + b" " * (stack.deps.settings.max_body_bytes - 1024)  # JSON may end in spaces
    request = raw(
        "POST /v1/admin/tenants HTTP/1.1",
        "Host: test",
        f"Authorization: Bearer {ADMIN_KEY}",
        f"Content-Length: {len(body)}",
        body=body,
    )
    async with connect(stack.url) as (reader, writer):
        writer.write(request[:30])
        await asyncio.sleep(0.05)
        writer.write(request[30:])  # the end of the head and the whole body in one read
        reply = await read_reply(reader)
        assert reply.status == 201, reply.body


async def test_a_head_just_under_the_limit_is_served(stack: Stack) -> None:
    async with connect(stack.url) as (reader, writer):
        writer.write(get("/healthz", "near", f"X-Padding: {'a' * (MAX_HEAD_BYTES - 200)}"))
        assert (await read_reply(reader)).status == 200


async def test_body_over_the_limit_gets_413(stack: Stack) -> None:
    limit = stack.deps.settings.max_body_bytes
    admin = f"Authorization: Bearer {ADMIN_KEY}"
    post = ("POST /v1/admin/tenants HTTP/1.1", "Host: test", admin, "Content-Type: application/json")
    async with connect(stack.url) as (reader, writer):
        writer.write(raw(*post, f"Content-Length: {limit + 1}"))  # refused before any body is sent
        reply = await read_reply(reader)
        assert_refused(reply, 413, "payload_too_large")
        await assert_closed(reader)
    async with connect(stack.url) as (reader, writer):
        writer.write(raw(*post, "Transfer-Encoding: chunked", body=chunked(b"x" * (limit + 1), 8192)))
        reply = await read_reply(reader)
        assert_refused(reply, 413, "payload_too_large")
        await assert_closed(reader)


async def test_chunked_body_and_expect_100_continue(stack: Stack) -> None:
    admin = f"Authorization: Bearer {ADMIN_KEY}"
    post = ("POST /v1/admin/tenants HTTP/1.1", "Host: test", admin, "Content-Type: application/json")
    async with connect(stack.url) as (reader, writer):
        writer.write(raw(*post, "Transfer-Encoding: chunked", body=chunked(tenant_body(), 7)))
        reply = await read_reply(reader)
        assert reply.status == 201, reply.body
        body = tenant_body()
        writer.write(raw(*post, f"Content-Length: {len(body)}", "Expect: 100-continue"))
        assert (await read_reply(reader)).status == 100  # before any body byte is sent
        writer.write(body)
        reply = await read_reply(reader)
        assert reply.status == 201, reply.body
        assert orjson.loads(reply.body)["name"] == orjson.loads(body)["name"]


# -- HEAD and repeated headers ---------------------------------------------------------------


async def test_head_gets_headers_without_a_body(stack: Stack) -> None:
    async with connect(stack.url) as (reader, writer):
        writer.write(get("/healthz", "peek"))
        full = await read_reply(reader)
        writer.write(get("/healthz", "head", method="HEAD") + get("/healthz", "after", "Connection: close"))
        head = await read_reply(reader, head=True)
        assert (head.status, head.headers["x-request-id"]) == (200, "head")
        assert int(head.headers["content-length"]) == len(full.body)
        assert head.headers["content-type"] == "application/json"
        after = await read_reply(reader)  # would start with the HEAD answer's body if one were sent
        assert (after.status, after.headers["x-request-id"], after.body) == (200, "after", full.body)
        await assert_closed(reader)


async def test_two_different_api_keys_are_one_invalid_key(stack: Stack) -> None:
    first = (await stack.subscriber(ETH))["X-API-Key"]
    second = (await stack.subscriber(ETH))["X-API-Key"]
    await stack.publish(ETH, 0, snapshot(7))
    async with connect(stack.url) as (reader, writer):
        writer.write(get(BOOK, "one", f"X-API-Key: {first}"))
        assert (await read_reply(reader)).status == 200
        writer.write(get(BOOK, "both", f"X-API-Key: {first}", f"X-API-Key: {second}"))
        reply = await read_reply(reader)
        assert (reply.status, reply.error_code()) == (401, "unauthorized")
        assert b"update_id" not in reply.body


# -- timeouts --------------------------------------------------------------------------------


async def test_idle_and_stalled_connections_time_out(stack: Stack) -> None:
    async def idle(url: str) -> float:
        async with connect(url) as (reader, writer):
            writer.write(get("/healthz", "once"))
            assert (await read_reply(reader)).status == 200
            answered = time.monotonic()
            await assert_closed(reader)
            return time.monotonic() - answered

    async def stalled(url: str) -> tuple[float, Reply]:
        async with connect(url) as (reader, writer):
            writer.write(b"GET /healthz HTTP/1.1\r\nX-Request-ID: slow\r\nHost: te")  # the head stalls
            started = time.monotonic()
            reply = await read_reply(reader)
            waited = time.monotonic() - started
            await assert_closed(reader)
            return waited, reply

    async with serving(stack, keepalive_timeout_s=1.5, request_timeout_s=1.5) as (_, url):
        idle_s, (stalled_s, reply) = await asyncio.gather(idle(url), stalled(url))
    # The coarse clock ticks once a second: a 1.5 s limit is noticed 1 to 2 s after it started.
    assert 0.9 <= idle_s <= 3.5 and 0.9 <= stalled_s <= 3.5, (idle_s, stalled_s)
    assert_refused(reply, 408, "request_timeout")
    assert reply.headers["x-request-id"] == "slow"


# -- WebSocket upgrades ----------------------------------------------------------------------


async def read_text_frame(reader: asyncio.StreamReader) -> bytes:
    """One unmasked, unfragmented text frame from the server."""
    first, second = await asyncio.wait_for(reader.readexactly(2), 5)
    assert first == 0x81, hex(first)
    length = second & 0x7F
    if length >= 126:
        length = int.from_bytes(await reader.readexactly(2 if length == 126 else 8), "big")
    return await asyncio.wait_for(reader.readexactly(length), 5)


async def test_upgrade_after_a_pipelined_request(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(9))
    nonce = base64.b64encode(b"0123456789abcdef").decode()
    upgrade = get(
        STREAM,
        "upgrade",
        f"X-API-Key: {headers['X-API-Key']}",
        "Connection: Upgrade",
        "Upgrade: websocket",
        "Sec-WebSocket-Version: 13",
        f"Sec-WebSocket-Key: {nonce}",
    )
    async with connect(stack.url) as (reader, writer):
        writer.write(get("/healthz", "plain") + upgrade)
        plain = await read_reply(reader)
        assert (plain.status, plain.headers["x-request-id"]) == (200, "plain")
        switched = await read_reply(reader)
        assert switched.status == 101 and switched.headers["upgrade"].lower() == "websocket"
        assert switched.headers["x-request-id"] == "upgrade"  # aiohttp got the head as it was sent
        accept = base64.b64encode(hashlib.sha1((nonce + WS_GUID).encode()).digest()).decode()
        assert switched.headers["sec-websocket-accept"] == accept
        assert orjson.loads(await read_text_frame(reader))["update_id"] == 9


async def test_ws_connect_still_streams(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(3))
    async with stack.http.ws_connect(f"{stack.url}{STREAM}", headers=headers) as socket:
        message = await asyncio.wait_for(socket.receive_json(), 5)
        assert message["update_id"] == 3


async def test_a_server_without_an_upgrade_adapter_answers_upgrades_itself() -> None:
    async def core(request: Request) -> Response:
        return Response(200, orjson.dumps({"rid": request.request_id}))

    async with running(Http1Server(core, max_body_bytes=1024, secure=False)) as url, connect(url) as conn:
        reader, writer = conn
        upgrade = get("/", "up", "Connection: Upgrade", "Upgrade: websocket")
        writer.write(get("/", "plain") + upgrade + get("/", "after"))
        for rid in ("plain", "up", "after"):
            reply = await read_reply(reader)
            assert (reply.status, orjson.loads(reply.body)) == (200, {"rid": rid})
        await assert_open(reader)


async def test_a_core_that_raises_still_answers_500_and_the_connection_goes_on() -> None:
    async def core(request: Request) -> Response:
        if request.raw_path == "/boom":
            raise RuntimeError("a secret that must not be echoed")
        return Response(200, b"{}")

    async with running(Http1Server(core, max_body_bytes=1024, secure=False)) as url, connect(url) as conn:
        reader, writer = conn
        writer.write(get("/boom", "a") + get("/", "b"))
        failed = await read_reply(reader)
        assert (failed.status, failed.error_code()) == (500, "internal")
        assert b"secret" not in failed.body
        assert (await read_reply(reader)).status == 200


# -- shutdown --------------------------------------------------------------------------------


async def test_close_finishes_the_answer_in_flight_and_refuses_new_connections(
    stack: Stack, redis_client: redis.Redis
) -> None:
    async with serving(stack) as (server, url), connect(url) as (reader, writer):
        writer.write(get("/healthz", "warm"))
        assert (await read_reply(reader)).status == 200
        await pause(redis_client, 700)  # the store holds the tenant list for 0.7 s
        writer.write(get("/v1/admin/tenants", "inflight", f"Authorization: Bearer {ADMIN_KEY}"))
        await asyncio.sleep(0.2)
        closing = asyncio.create_task(server.close())
        await asyncio.sleep(0.05)
        parts = urlsplit(url)
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection(parts.hostname, parts.port)
        assert not closing.done()
        reply = await read_reply(reader)
        assert (reply.status, reply.headers["x-request-id"]) == (200, "inflight")
        await assert_closed(reader)
        await asyncio.wait_for(closing, 5)


# -- encode_response -------------------------------------------------------------------------


def test_encode_refuses_a_header_value_with_a_line_break() -> None:
    for value in ("a\r\nSet-Cookie: x=1", "a\nb", "a\rb"):
        with pytest.raises(ValueError):
            encode_response(
                Response(200, b"{}", headers={"X-Echo": value}), DATE, head=False, connection=None
            )


@pytest.mark.parametrize("status", [204, 304])
def test_encode_no_content_and_not_modified_carry_no_body(status: int) -> None:
    encoded = encode_response(
        Response(status, b'{"a":1}', headers={"ETag": '"1"'}), DATE, head=False, connection=None
    )
    head, _, body = encoded.partition(b"\r\n\r\n")
    assert body == b"" and encoded.endswith(b"\r\n\r\n")
    assert b"Content-Length" not in head and b"Content-Type" not in head and b'ETag: "1"' in head
    assert head.startswith(f"HTTP/1.1 {status} ".encode())


def test_encode_head_keeps_the_length_without_the_body() -> None:
    response = Response(200, b'{"a":1}', headers={"X-Request-ID": "r"})
    full = encode_response(response, DATE, head=False, connection="close")
    head = encode_response(response, DATE, head=True, connection="close")
    assert full == head + b'{"a":1}' and b"Content-Length: 7\r\n" in head and head.endswith(b"\r\n\r\n")
    assert b"Connection: close\r\n" in head and f"Date: {DATE}\r\n".encode() in head
