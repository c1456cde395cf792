"""The opening handshake's answer and the compression it agrees, rule by rule."""

from __future__ import annotations

import zlib

import pytest

from control_plane.errors import InvalidRequestError
from read_functions.app.api_key import MULTI_STREAM_PROTOCOL, STREAM_PROTOCOL
from read_functions.server.websocket.handshake import agree, deflate

VALID = {
    "upgrade": "websocket",
    "connection": "keep-alive, Upgrade",
    "sec-websocket-version": "13",
    "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
}


def test_the_accept_value_is_the_rfc_s_example() -> None:
    agreed = agree(VALID, STREAM_PROTOCOL)
    assert agreed.headers == {"Upgrade": "websocket", "Sec-WebSocket-Accept": "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="}
    assert not agreed.deflate


@pytest.mark.parametrize(
    ("name", "value"),
    [("upgrade", "h2c"), ("connection", "keep-alive"), ("sec-websocket-version", "8"),
     ("sec-websocket-key", "c2hvcnQ="), ("sec-websocket-key", "not base64!")],
)  # fmt: skip
def test_an_invalid_handshake_is_refused(name: str, value: str) -> None:
    with pytest.raises(InvalidRequestError, match="RFC 6455"):
        agree(VALID | {name: value}, STREAM_PROTOCOL)


def test_the_subprotocol_is_answered_without_the_key_beside_it() -> None:
    agreed = agree(VALID | {"sec-websocket-protocol": "ladder.v1, ladder.key.ldr_secret"}, STREAM_PROTOCOL)
    assert agreed.headers["Sec-WebSocket-Protocol"] == "ladder.v1"
    assert "ldr_secret" not in str(agreed.headers)


@pytest.mark.parametrize(
    ("offer", "answer"),
    [
        ("permessage-deflate", "permessage-deflate; server_no_context_takeover"),
        ("permessage-deflate; client_max_window_bits", "permessage-deflate; server_no_context_takeover"),
        ("permessage-deflate; server_max_window_bits=12",
         "permessage-deflate; server_no_context_takeover; server_max_window_bits=9"),
        ("permessage-deflate; server_max_window_bits=8, permessage-deflate",
         "permessage-deflate; server_no_context_takeover"),  # the first offer it can keep, the second
        ("permessage-deflate; mystery=1", None),
        ("permessage-deflate; server_no_context_takeover=yes", None),
        ("x-webkit-deflate-frame", None),
    ],
)  # fmt: skip
def test_compression_is_agreed_per_rfc_7692(offer: str, answer: str | None) -> None:
    agreed = agree(VALID | {"sec-websocket-extensions": offer}, STREAM_PROTOCOL)
    assert agreed.headers.get("Sec-WebSocket-Extensions") == answer
    assert agreed.deflate == (answer is not None)


def test_a_client_that_speaks_is_told_to_deflate_each_message_on_its_own() -> None:
    offer = VALID | {"sec-websocket-extensions": "permessage-deflate; client_max_window_bits"}
    agreed = agree(offer, MULTI_STREAM_PROTOCOL, client_speaks=True)
    answer = "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
    assert agreed.headers["Sec-WebSocket-Extensions"] == answer and agreed.deflate
    assert "Sec-WebSocket-Extensions" not in agree(VALID, MULTI_STREAM_PROTOCOL, client_speaks=True).headers


def test_each_message_is_deflated_on_its_own() -> None:
    """A fresh inflater reads each message, and so does one kept across them (as some clients do)."""
    messages = [b'{"bids":[["97000.01","1.5"]]}' * 20, b'{"bids":[["97000.02","0.5"]]}' * 20]
    kept = zlib.decompressobj(-15)
    for message in messages:
        payload = deflate(message) + b"\x00\x00\xff\xff"
        assert zlib.decompressobj(-15).decompress(payload) == message
        assert kept.decompress(payload) == message
        assert len(payload) < len(message) / 4
