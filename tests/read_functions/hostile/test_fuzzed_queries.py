"""Schemathesis where the main property test does not reach: the compat listener, and the stream's
query sent with a real WebSocket handshake. No generated input may get a 5xx, and a refused
handshake is a JSON error after which the connection closes.
"""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok

from read_functions.app import openapi
from read_functions.routes import COMPAT_ROUTES, ROUTES
from tests.read_functions.hostile.attacks import Target

Operation = schemathesis.APIOperation[Any, Any, Any, Any]
Case = schemathesis.Case[Operation]


def examples(count: int) -> settings:
    """Hypothesis settings: ``count`` examples, reproducible, no example database."""
    return settings(
        max_examples=count,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )


def operations(routes: Any) -> list[Operation]:
    found = []
    for result in schemathesis.openapi.from_dict(openapi.document(routes)).get_all_operations():
        assert isinstance(result, Ok), result.err()
        found.append(result.ok())
    return found


def test_the_compat_listener_answers_every_generated_request_without_a_5xx(target: Target) -> None:
    session = requests.Session()
    for operation in operations(COMPAT_ROUTES):
        has_inputs = bool(operation.path_parameters or operation.query or operation.body)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)[: 2 if has_inputs else 1]:

            @given(case=operation.as_strategy(generation_mode=mode))
            @examples(6)
            def check(case: Case) -> None:
                response = case.call_and_validate(
                    base_url=target.compat_url, session=session, timeout=10, checks=[not_a_server_error]
                )
                answered = (case.method, case.path, response.status_code, response.text)
                assert response.headers.get("content-type") == ["application/json"], answered

            check()


def handshake(target: Target, query: str, key: str) -> tuple[int, bytes, bool]:
    """A WebSocket handshake on the stream route: the status, the body, whether it then closed."""
    parts = urlsplit(target.url)
    request = (
        f"GET /v1/stream?{query} HTTP/1.1\r\nHost: test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZg==\r\n"
        f"X-API-Key: {key}\r\n\r\n"
    ).encode("latin-1", "replace")
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as sock:
        sock.sendall(request)
        received = b""
        while b"\r\n\r\n" not in received:
            piece = sock.recv(65536)
            assert piece, "closed before an answer"
            received += piece
        head, _, body = received.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        if status == 101:
            return status, b"", False
        length = int(
            next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")).split(
                b":"
            )[1]
        )
        while len(body) < length:
            body += sock.recv(65536)
        closed = True
        try:
            closed = sock.recv(1) == b""
        except (ConnectionResetError, TimeoutError) as exc:
            closed = isinstance(exc, ConnectionResetError)
        return status, body, closed


def test_the_stream_query_under_a_real_handshake_never_gets_a_5xx(target: Target) -> None:
    (stream,) = [op for op in operations(ROUTES) if op.path == "/v1/stream"]
    assert handshake(target, "exchange=binance.com&market=ETHBTC", target.key)[0] == 101  # it can pass
    statuses: set[int] = set()
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

        @given(case=stream.as_strategy(generation_mode=mode))
        @examples(40)
        def check(case: Case) -> None:
            query = urlencode(case.query or {}, doseq=True)
            status, body, closed = handshake(target, query, target.key)
            statuses.add(status)
            assert status == 101 or 400 <= status < 500, (status, body)
            if status != 101:
                assert orjson.loads(body)["error"]["code"], body
                assert closed, "a refused handshake must close the connection"

        check()
    assert any(400 <= s < 500 for s in statuses), statuses
