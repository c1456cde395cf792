"""The stream's frame reader rule by rule: what a client may send, and the close code of what not."""

from __future__ import annotations

import struct

import pytest

from read_functions.server.websocket.frames import (
    OP_BINARY,
    OP_CLOSE,
    OP_CONTINUATION,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    Close,
    CloseCode,
    FrameReader,
    InboundLimits,
    Ping,
    Pong,
    ProtocolViolation,
    Text,
    close_frame,
    frame,
)
from tests.read_functions.hostile.raw_ws import client_frame, compressed

LIMITS = InboundLimits(max_message=100, rate=10.0, burst=5)


def reader() -> FrameReader:
    return FrameReader(LIMITS, now=0.0)


def refused(data: bytes, code: CloseCode, *, limits: InboundLimits = LIMITS) -> str:
    with pytest.raises(ProtocolViolation) as violation:
        FrameReader(limits, now=0.0).feed(data, 0.0)
    assert violation.value.code == code
    return violation.value.reason


def test_control_frames_become_events_and_data_is_skipped() -> None:
    data = (
        client_frame(OP_TEXT, b"hello")
        + client_frame(OP_PING, b"p")
        + client_frame(OP_PONG, b"q")
        + client_frame(OP_CLOSE, struct.pack("!H", 4000) + b"bye")
    )
    assert reader().feed(data, 0.0) == [Ping(b"p"), Pong(b"q"), Close(4000, "bye")]


def test_frames_split_anywhere_read_the_same() -> None:
    data = client_frame(OP_BINARY, b"x" * 90) + client_frame(OP_PING, b"ping") + client_frame(OP_CLOSE, b"")
    for cut in range(len(data)):
        r = reader()
        assert r.feed(data[:cut], 0.0) + r.feed(data[cut:], 0.0) == [Ping(b"ping"), Close(1005, "")]


def test_an_unmasked_frame_is_a_protocol_error() -> None:
    for opcode in (OP_TEXT, OP_BINARY, OP_PING, OP_CLOSE):
        assert "masked" in refused(client_frame(opcode, b"x", mask=False), CloseCode.PROTOCOL_ERROR)


def test_reserved_bits_opcodes_and_fragmented_control_frames_are_protocol_errors() -> None:
    masked_rsv2 = bytes([client_frame(OP_TEXT, b"x")[0] | 0x20]) + client_frame(OP_TEXT, b"x")[1:]
    refused(masked_rsv2, CloseCode.PROTOCOL_ERROR)
    refused(client_frame(0x3, b""), CloseCode.PROTOCOL_ERROR)
    refused(client_frame(OP_PING, b"", fin=False), CloseCode.PROTOCOL_ERROR)
    refused(client_frame(OP_PING, b"x" * 126), CloseCode.PROTOCOL_ERROR)
    refused(client_frame(OP_CONTINUATION, b"x"), CloseCode.PROTOCOL_ERROR)
    refused(client_frame(OP_TEXT, b"a", fin=False) + client_frame(OP_TEXT, b"b"), CloseCode.PROTOCOL_ERROR)


def test_close_frames_must_be_well_formed() -> None:
    refused(client_frame(OP_CLOSE, b"\x03"), CloseCode.PROTOCOL_ERROR)
    refused(client_frame(OP_CLOSE, struct.pack("!H", 1005)), CloseCode.PROTOCOL_ERROR)
    refused(client_frame(OP_CLOSE, struct.pack("!H", 999)), CloseCode.PROTOCOL_ERROR)
    refused(client_frame(OP_CLOSE, struct.pack("!H", 1000) + b"\xff"), CloseCode.INVALID_TEXT)


def test_a_compressed_message_is_refused_on_its_header() -> None:
    first_two = client_frame(OP_TEXT, b"x" * 50, rsv1=True)[:2]
    assert "compressed" in refused(first_two, CloseCode.POLICY_VIOLATION)
    text = InboundLimits(max_message=100, read_text=True)
    assert "compressed" in refused(first_two, CloseCode.POLICY_VIOLATION, limits=text)


def test_a_stream_that_reads_text_and_agreed_compression_inflates_each_message_to_the_limit() -> None:
    limits = InboundLimits(max_message=100, read_text=True, inflate=True)
    message = b'{"op": "subscribe", "books": []}'
    r = FrameReader(limits, now=0.0)
    deflated = compressed(message)
    fragments = client_frame(OP_TEXT, deflated[:5], rsv1=True, fin=False) + client_frame(
        OP_CONTINUATION, deflated[5:]
    )
    data = fragments + client_frame(OP_TEXT, b"{}") + client_frame(OP_TEXT, deflated, rsv1=True)
    assert r.feed(data, 0.0) == [Text(message), Text(b"{}"), Text(message)]
    bomb = compressed(b" " * 50_000)  # under 100 bytes that inflate 500-fold
    assert len(bomb) <= 100
    assert "at most 100" in refused(client_frame(OP_TEXT, bomb, rsv1=True), CloseCode.TOO_BIG, limits=limits)
    refused(client_frame(OP_TEXT, b"\xff" * 20, rsv1=True), CloseCode.INVALID_TEXT, limits=limits)
    refused(client_frame(OP_BINARY, deflated, rsv1=True), CloseCode.POLICY_VIOLATION, limits=limits)


def test_a_message_over_the_limit_is_refused_on_its_header_or_its_fragments() -> None:
    assert reader().feed(client_frame(OP_TEXT, b"x" * 100), 0.0) == []
    refused(client_frame(OP_TEXT, b"x" * 101)[:2], CloseCode.TOO_BIG)  # the 7-bit length
    refused(client_frame(OP_BINARY, b"x" * 70_000)[:10], CloseCode.TOO_BIG)  # the 64-bit length
    fragments = client_frame(OP_TEXT, b"x" * 60, fin=False) + client_frame(OP_CONTINUATION, b"x" * 41)
    refused(fragments, CloseCode.TOO_BIG)
    ok = client_frame(OP_TEXT, b"x" * 60, fin=False) + client_frame(OP_CONTINUATION, b"x" * 40)
    assert reader().feed(ok + client_frame(OP_TEXT, b"y" * 100), 0.0) == []


def test_frames_beyond_the_rate_are_refused_and_the_bucket_refills() -> None:
    r = reader()
    pings = [client_frame(OP_PING, b"") for _ in range(6)]
    assert len(r.feed(b"".join(pings[:5]), 0.0)) == 5
    assert len(r.feed(pings[5], 0.1)) == 1  # a tenth of a second brought one token back
    with pytest.raises(ProtocolViolation) as violation:
        r.feed(pings[0], 0.1)
    assert violation.value.code == CloseCode.POLICY_VIOLATION


def test_server_frames() -> None:
    assert frame(OP_TEXT, b"hi") == b"\x81\x02hi"
    assert frame(OP_TEXT, b"x" * 200, compressed=True)[:4] == b"\xc1\x7e\x00\xc8"
    assert frame(OP_BINARY, b"x" * 70_000)[:10] == b"\x82\x7f" + struct.pack("!Q", 70_000)
    long_reason = close_frame(1008, "é" * 100)
    assert long_reason[:4] == b"\x88\x7c\x03\xf0" and len(long_reason) == 2 + 124  # 61 two-byte characters
    long_reason[4:].decode()  # cut at a character's edge
