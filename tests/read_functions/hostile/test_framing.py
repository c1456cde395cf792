"""Hostile request framing: each refused early, at a bounded cost.

The raw-byte cases run against the HTTP/1.1 rules in memory (``script.py``, an Http1Machine fed
scripted byte sequences): each asserts the status, the machine-readable code, that the connection
closes after the refusal and, for the floods, how many bytes the machine took before it refused
and how many it held. What needs the whole server (authentication, routes, the listener) runs
against a real read server over sockets. The smuggling cases at the end were refused before this
suite existed; they stay here so that no parser change lets one through.
"""

from __future__ import annotations

import itertools
import subprocess
from urllib.parse import urlsplit

import orjson
import pytest

from read_functions.server.http1 import LISTEN_BACKLOG
from read_functions.server.http1_machine import MAX_HEAD_BYTES
from tests.read_functions.hostile.attacks import MIB, Target
from tests.read_functions.hostile.conftest import BOOK
from tests.read_functions.hostile.script import feed, flood, machine, repeated
from tests.read_functions.wire import Reply, connect, get, raw, read_reply

CHUNKED = ("Transfer-Encoding: chunked",)
TAKEN = 8 * MIB  # the bytes any flood below may get in before it is refused; they are 32 MiB and more
GROWTH = 16 * MIB  # what any attack below may make the connection hold


def chunked_get(path: str, rid: str, *headers: str) -> bytes:
    return get(path, rid, *CHUNKED, *headers)


# -- trailers (finding 1) --------------------------------------------------------------------


async def test_a_key_in_a_trailer_does_not_authenticate(target: Target) -> None:
    async with connect(target.url) as (reader, writer):
        writer.write(chunked_get(BOOK, "header", f"X-API-Key: {target.key}") + b"0\r\n\r\n")
        assert (await read_reply(reader)).status == 200  # the key itself works
        writer.write(chunked_get(BOOK, "trailer") + f"0\r\nX-API-Key: {target.key}\r\n\r\n".encode())
        reply = await read_reply(reader)
        assert (reply.status, reply.error_code()) == (401, "unauthorized")
        assert b"update_id" not in reply.body


def test_trailers_are_not_request_headers() -> None:
    """A trailer ``X-Request-ID`` would be echoed if trailers were merged into the headers."""
    fed = feed(
        machine(), chunked_get("/healthz", "from-the-head") + b"0\r\nX-Request-ID: from-a-trailer\r\n\r\n"
    )
    (request,) = fed.requests()
    assert (request.request_id, request.headers["x-request-id"]) == ("from-the-head", "from-the-head")


def test_repeated_trailer_lines_get_431_at_the_head_limit() -> None:
    fed = flood(machine(), chunked_get("/healthz", "t") + b"0\r\n", repeated(b"X-T: a\r\n"), 32 * MIB)
    assert fed.refusal() == (431, "headers_too_large")
    assert fed.fed < TAKEN and fed.held < GROWTH, fed.fed


def test_distinct_trailer_names_get_431_at_the_head_limit() -> None:
    names = (b"".join(b"X-%d: v\r\n" % n for n in range(i, i + 4096)) for i in itertools.count(0, 4096))
    fed = flood(machine(), chunked_get("/healthz", "t") + b"0\r\n", names, 32 * MIB)
    assert fed.refusal() == (431, "headers_too_large")
    assert fed.fed < TAKEN and fed.held < GROWTH, fed.fed


def test_head_and_trailers_together_are_held_to_the_head_limit() -> None:
    half = "a" * (MAX_HEAD_BYTES // 2)
    request = chunked_get("/healthz", "t", f"X-Pad: {half}") + f"0\r\nX-Pad: {half}\r\n\r\n".encode()
    fed = feed(machine(), request)
    assert fed.refusal() == (431, "headers_too_large") and fed.requests() == []


def test_a_trailer_that_never_ends_is_refused() -> None:
    fed = flood(machine(), chunked_get("/healthz", "t") + b"0\r\nX-T: ", repeated(b"a"), 32 * MIB)
    assert fed.refusal() == (413, "payload_too_large")
    assert fed.fed < TAKEN and fed.held < GROWTH, fed.fed


# -- chunk extensions (finding 10) -----------------------------------------------------------


def test_a_chunk_extension_that_never_ends_gets_413() -> None:
    fed = flood(machine(), chunked_get("/healthz", "t") + b"1;ext=", repeated(b"a"), 64 * MIB)
    assert fed.refusal() == (413, "payload_too_large")
    assert fed.fed < TAKEN and fed.held < GROWTH, fed.fed


def test_many_chunks_with_long_extensions_get_413() -> None:
    chunk = b"1;e=" + b"a" * 1000 + b"\r\nx\r\n"  # one body byte per kilobyte
    fed = flood(machine(), chunked_get("/healthz", "t"), repeated(chunk), 64 * MIB)
    assert fed.refusal() == (413, "payload_too_large")
    assert fed.fed < TAKEN and fed.held < GROWTH, fed.fed


def test_short_chunk_extensions_are_ignored() -> None:
    fed = feed(machine(), chunked_get("/healthz", "ext") + b"2;name=value;x\r\n{}\r\n0\r\n\r\n")
    (request,) = fed.requests()
    assert request.body == b"{}" and len(fed.events) == 1  # answered, nothing refused


# -- request lines (finding 10) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_line", "status", "code"),
    [
        (b"GET /healthz HTTP/2.0", 505, "http_version_not_supported"),
        (b"GET /healthz HTTP/0.9", 400, "invalid_request"),
        (b"GET /healthz HTTP/1.2", 400, "invalid_request"),  # llhttp knows no such version
        (b"GET /healthz", 400, "invalid_request"),  # HTTP/0.9: no version
        (b"PRI * HTTP/2.0", 400, "invalid_request"),  # an HTTP/2 connection preface
    ],
)
def test_only_http_10_and_11_are_served(request_line: bytes, status: int, code: str) -> None:
    fed = feed(machine(), request_line + b"\r\nHost: test\r\n\r\n")
    assert fed.refusal() == (status, code) and fed.requests() == []


# -- methods: HEAD and Allow (finding 10) ----------------------------------------------------


@pytest.mark.parametrize("path", ["/healthz", BOOK, f"{BOOK}/info", "/v1/exchanges", "/openapi.json"])
async def test_head_answers_a_get_route_without_its_body(target: Target, path: str) -> None:
    key = f"X-API-Key: {target.key}"
    async with connect(target.url) as (reader, writer):
        writer.write(get(path, "full", key))
        full = await read_reply(reader)
        writer.write(get(path, "head", key, method="HEAD") + get("/healthz", "next"))
        head = await read_reply(reader, head=True)
        assert (full.status, head.status) == (200, 200), full.body
        # Book answers carry age_ms, which may gain a digit between the two requests.
        assert abs(int(head.headers["content-length"]) - len(full.body)) <= (2 if BOOK in path else 0)
        assert head.headers["content-type"] == full.headers["content-type"]
        after = await read_reply(reader)  # would begin with the HEAD answer's body if it had one
        assert (after.status, after.headers["x-request-id"]) == (200, "next")


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("DELETE", "/healthz", "GET, HEAD"),
        ("POST", BOOK, "GET, HEAD"),
        ("PUT", "/v1/subscriptions", "DELETE, GET, HEAD, POST"),
        ("PROPFIND", "/v1/subscriptions/binance.com/ETHBTC", "DELETE"),
    ],
)
async def test_405_says_which_methods_are_allowed(
    target: Target, method: str, path: str, allowed: str
) -> None:
    async with connect(target.url) as (reader, writer):
        writer.write(get(path, "m", f"X-API-Key: {target.key}", method=method))
        reply = await read_reply(reader)
        assert (reply.status, reply.error_code(), reply.headers["allow"]) == (
            405,
            "method_not_allowed",
            allowed,
        )


# -- what errors echo (finding 10) -----------------------------------------------------------


async def post_subscription(target: Target, fields: dict[str, object]) -> Reply:
    body = orjson.dumps({"exchange": "binance.com", "market": "ETHBTC", **fields})
    request = raw(
        "POST /v1/subscriptions HTTP/1.1",
        "Host: test",
        f"X-API-Key: {target.key}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        body=body,
    )
    async with connect(target.url) as (reader, writer):
        writer.write(request)
        return await read_reply(reader)


@pytest.mark.parametrize(
    "pasted",
    [
        "ldr_live_0123456789abcdef0123456789abcdef",  # a key
        "d41d8cd98f00b204e9800998ecf8427e",  # a hex token
        "Hunter2-Password",  # a password
        "correcthorsebatterystapleandmore",  # a long passphrase: one word past 20 letters
    ],
)
async def test_an_unknown_field_that_may_be_a_secret_is_refused_without_echoing_it(
    target: Target, pasted: str
) -> None:
    reply = await post_subscription(target, {pasted: True})
    assert (reply.status, reply.error_code()) == (400, "invalid_request")
    assert pasted.encode() not in reply.body and b"ldr_" not in reply.body
    assert b"1 not shown" in reply.body and b"exchange" in reply.body  # what the route does take


async def test_a_misspelt_field_is_named_with_what_it_may_have_meant(target: Target) -> None:
    reply = await post_subscription(target, {"dept": 500, "replica": 2})
    assert (reply.status, reply.error_code()) == (400, "invalid_request")
    message = orjson.loads(reply.body)["error"]["message"]
    named = "'dept' (did you mean 'depth'?), 'replica' (did you mean 'replicas'?)"
    assert message.startswith(f"unknown fields: {named}; the fields are:"), message


# -- the listener (finding 10) ---------------------------------------------------------------


def test_the_listen_backlog_is_what_the_server_asks_for(target: Target) -> None:
    port = urlsplit(target.url).port
    listing = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True)
    backlogs = {int(line.split()[2]) for line in listing.stdout.splitlines()}  # Send-Q: the backlog
    assert backlogs == {LISTEN_BACKLOG}, listing.stdout


# -- smuggling and malformed framing (refused before this suite; kept so) --------------------

HEAD = "POST /healthz HTTP/1.1\r\nHost: test\r\n"


@pytest.mark.parametrize(
    "request_bytes",
    [
        pytest.param(HEAD + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", id="cl-te"),
        pytest.param(HEAD + "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n", id="te-cl"),
        pytest.param(HEAD + "Content-Length: 1\r\nContent-Length: 2\r\n\r\nab", id="two-lengths"),
        pytest.param(HEAD + "Content-Length: 1, 2\r\n\r\nab", id="length-list"),
        pytest.param(HEAD + "Content-Length: +2\r\n\r\nab", id="signed-length"),
        pytest.param(HEAD + "Transfer-Encoding: gzip\r\n\r\nab", id="te-not-chunked"),
        pytest.param(HEAD + "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", id="te-chunked-not-last"),
        pytest.param(HEAD + "Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", id="te-xchunked"),
        pytest.param(HEAD + "Transfer-Encoding: chunked\r\n\r\nz\r\n\r\n", id="bad-chunk-size"),
        pytest.param(HEAD + "X-A: b\r\n c\r\n\r\n", id="obs-fold"),
        pytest.param(HEAD + "X-A : b\r\n\r\n", id="space-before-colon"),
        pytest.param("GET /healthz HTTP/1.1\nHost: test\n\n", id="bare-lf"),
        pytest.param(HEAD + "X-A: b\rc\r\n\r\n", id="bare-cr"),
        pytest.param(HEAD + "X-A: b\x00c\r\n\r\n", id="nul-in-value"),
        pytest.param("GET /health\x00z HTTP/1.1\r\nHost: test\r\n\r\n", id="nul-in-target"),
        pytest.param("G@T /healthz HTTP/1.1\r\nHost: test\r\n\r\n", id="bad-method"),
    ],
)
def test_smuggling_and_malformed_framing_get_400(request_bytes: str) -> None:
    fed = feed(machine(), request_bytes.encode("latin-1") + get("/healthz", "smuggled"))
    assert fed.refusal() == (400, "invalid_request")
    assert fed.requests() == []  # and the request behind it was never read
