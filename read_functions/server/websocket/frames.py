"""WebSocket frames of a book stream (RFC 6455), sans I/O: what a client may send, read under limits
before any work is done on it, and what the server sends.

Theory of operation
-------------------
A stream's client has nothing to say: it receives books. So :class:`FrameReader` reads what it
sends as a hostile peer's bytes, and refuses as early as the bytes allow, with the close code that
says why:

- a frame without the mask bit (section 5.1: a server must close the connection): 1002;
- reserved bits other than RSV1, an unknown opcode, a fragmented or oversized control frame, a
  continuation with nothing to continue, a malformed close frame: 1002;
- a compressed data message (RSV1 set, permessage-deflate), on the header of its first frame:
  1008, unless the stream reads text and agreed compression (``inflate``); a one-book stream's
  client has nothing to compress, so nothing it sends is ever inflated;
- a data message longer than ``max_message`` bytes, on the header that declares it (before its
  payload arrives): 1009;
- more frames than a token bucket allows (``rate`` a second, ``burst`` at once; pings included,
  since each is answered): 1008.

Data messages within the limits are skipped, never unmasked or kept; only control payloads (at
most 125 bytes) are read, and, for a stream whose client speaks (``read_text``: the multiplexed
stream's subscribe messages), text messages of at most ``max_message`` bytes, each frame read only
once it has arrived whole (so what is held is bounded by the limit); one that is not UTF-8
closes with 1007, and a binary message there with 1003. A compressed text message (``inflate``)
is limited as it came (its compressed bytes), then inflated on its own (the handshake agreed
``client_no_context_takeover``) by an inflater made for it, to at most ``max_message`` bytes: one
that inflates to more closes with 1009 once the limit is passed (a small message that inflates
hugely costs no more than the limit), one that does not inflate with 1007. The reader keeps no
clock: the caller passes the time with the bytes.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from enum import IntEnum

OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA
_DATA = frozenset({OP_CONTINUATION, OP_TEXT, OP_BINARY})
_CONTROL = frozenset({OP_CLOSE, OP_PING, OP_PONG})
_MAX_CONTROL = 125
_DEFLATE_TAIL = b"\x00\x00\xff\xff"


class CloseCode(IntEnum):
    """The close codes a stream sends (RFC 6455 section 7.4.1)."""

    NORMAL = 1000
    GOING_AWAY = 1001
    PROTOCOL_ERROR = 1002
    UNSUPPORTED_DATA = 1003
    NO_STATUS = 1005
    INVALID_TEXT = 1007
    POLICY_VIOLATION = 1008
    TOO_BIG = 1009
    INTERNAL_ERROR = 1011


_SENDABLE = {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014}
"""Codes a peer may put in a close frame (1005, 1006 and 1015 are never sent); 3000-4999 too."""


class ProtocolViolation(Exception):
    """The client broke the protocol or a limit: close the connection with ``code``."""

    def __init__(self, code: CloseCode, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Ping:
    payload: bytes


@dataclass(frozen=True, slots=True)
class Pong:
    payload: bytes


@dataclass(frozen=True, slots=True)
class Text:
    """A whole text message (only when the limits read text)."""

    payload: bytes


@dataclass(frozen=True, slots=True)
class Close:
    """The client's close frame (code 1005 when it carried none)."""

    code: int
    reason: str


Event = Ping | Pong | Close | Text


@dataclass(frozen=True, slots=True)
class InboundLimits:
    """What a stream's client may send."""

    max_message: int = 1024
    """Bytes in one data message (a stream ignores them; a client may send a keepalive text)."""
    rate: float = 10.0
    """Frames a second, on average (pings, pongs and data frames alike)."""
    burst: int = 30
    """Frames at once."""
    read_text: bool = False
    """Text messages are read (and handed on as :class:`Text`), not skipped."""
    inflate: bool = False
    """Compressed text messages are taken (permessage-deflate was agreed; with ``read_text``)."""


class FrameReader:
    """Parses a client's bytes into control events; raises :class:`ProtocolViolation` on the first
    frame that breaks the protocol or a limit."""

    def __init__(self, limits: InboundLimits, now: float) -> None:
        self._limits = limits
        self._buffer = bytearray()
        self._skip = 0  # payload bytes of a data frame still to skip
        self._message = -1  # bytes of the data message in progress, -1 outside one
        self._tokens = float(limits.burst)
        self._filled_at = now
        self._text: bytearray | None = None  # the text message being read, when text is read
        self._compressed = False  # the text message being read is deflated

    def feed(self, data: bytes, now: float) -> list[Event]:
        """The control frames completed by ``data``, in order."""
        events: list[Event] = []
        if self._skip:
            skipped = min(self._skip, len(data))
            self._skip -= skipped
            data = data[skipped:]
        self._buffer += data
        while self._buffer and not self._skip:
            event = self._next_frame(now)
            if event is None:
                break
            if not isinstance(event, bool):
                events.append(event)
        return events

    def _next_frame(self, now: float) -> Event | bool | None:
        """One frame off the buffer: its event, True for a data frame (skipped), None for too few bytes."""
        buffer = self._buffer
        if len(buffer) < 2:
            return None
        first, second = buffer[0], buffer[1]
        fin, rsv1, opcode = first & 0x80, first & 0x40, first & 0x0F
        if not second & 0x80:
            raise ProtocolViolation(CloseCode.PROTOCOL_ERROR, "client frames must be masked (RFC 6455 5.1)")
        if first & 0x30:
            raise ProtocolViolation(CloseCode.PROTOCOL_ERROR, "reserved bits set")
        length = second & 0x7F
        if opcode in _CONTROL:
            if not fin or length > _MAX_CONTROL:
                raise ProtocolViolation(CloseCode.PROTOCOL_ERROR, "a control frame must be whole and short")
        elif opcode not in _DATA:
            raise ProtocolViolation(CloseCode.PROTOCOL_ERROR, f"unknown opcode {opcode:#x}")
        else:
            self._check_data(opcode, bool(rsv1), length)
        header = 6
        if length == 126:
            header = 8
        elif length == 127:
            header = 14
        if len(buffer) < header:
            return None
        if length == 126:
            length = struct.unpack_from("!H", buffer, 2)[0]
        elif length == 127:
            length = struct.unpack_from("!Q", buffer, 2)[0]
        keep = opcode in _DATA and self._keeps(opcode)
        if keep and len(buffer) < header + length:
            if max(self._message, 0) + length > self._limits.max_message:
                self._too_big()
            return None  # a kept frame is read whole: at most max_message bytes wait here
        if opcode in _DATA:
            self._take_data(length, bool(fin))
        self._spend(now)
        if keep:
            return self._kept(buffer, header, length, bool(fin))
        if opcode in _DATA:
            available = min(length, len(buffer) - header)
            del buffer[: header + available]
            self._skip = length - available
            return True
        if len(buffer) < header + length:
            return None
        payload = _unmask(buffer[header - 4 : header], buffer[header : header + length])
        del buffer[: header + length]
        if opcode == OP_PING:
            return Ping(payload)
        if opcode == OP_PONG:
            return Pong(payload)
        return _close(payload)

    def _keeps(self, opcode: int) -> bool:
        """Whether a data frame's payload is read: a text message's, when the limits read text."""
        if not self._limits.read_text:
            return False
        return opcode == OP_TEXT or (opcode == OP_CONTINUATION and self._text is not None)

    def _kept(self, buffer: bytearray, header: int, length: int, fin: bool) -> Text | bool:
        """Unmask a whole frame of a text message; the message once its last frame is in."""
        payload = _unmask(buffer[header - 4 : header], buffer[header : header + length])
        del buffer[: header + length]
        text = self._text = (self._text or bytearray()) + payload
        if not fin:
            return True
        self._text = None
        message = self._inflated(bytes(text)) if self._compressed else bytes(text)
        try:
            message.decode()
        except UnicodeDecodeError:
            raise ProtocolViolation(CloseCode.INVALID_TEXT, "a text message that is not UTF-8") from None
        return Text(message)

    def _inflated(self, payload: bytes) -> bytes:
        """A compressed message, inflated on its own to at most ``max_message`` bytes."""
        limit = self._limits.max_message
        inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        try:
            message = inflater.decompress(payload + _DEFLATE_TAIL, limit + 1)
        except zlib.error:
            raise ProtocolViolation(CloseCode.INVALID_TEXT, "a message that does not inflate") from None
        if len(message) > limit:
            self._too_big()
        return message

    def _check_data(self, opcode: int, compressed: bool, length: int) -> None:
        """What the first two bytes of a data frame already tell."""
        if opcode == OP_CONTINUATION and self._message < 0:
            raise ProtocolViolation(
                CloseCode.PROTOCOL_ERROR, "a continuation frame with no message to continue"
            )
        if opcode != OP_CONTINUATION and self._message >= 0:
            raise ProtocolViolation(CloseCode.PROTOCOL_ERROR, "a new message before the last one ended")
        if compressed and (opcode != OP_TEXT or not (self._limits.read_text and self._limits.inflate)):
            raise ProtocolViolation(CloseCode.POLICY_VIOLATION, "a stream takes no compressed messages")
        if opcode == OP_TEXT:
            self._compressed = compressed
        if opcode == OP_BINARY and self._limits.read_text:
            raise ProtocolViolation(CloseCode.UNSUPPORTED_DATA, "this stream takes JSON text messages only")
        if max(self._message, 0) + length > self._limits.max_message:
            self._too_big()  # the 7-bit length alone says so (126 and 127 are less than they announce)

    def _take_data(self, length: int, fin: bool) -> None:
        size = max(self._message, 0) + length
        if size > self._limits.max_message:
            self._too_big()
        self._message = -1 if fin else size

    def _too_big(self) -> None:
        limit = self._limits.max_message
        raise ProtocolViolation(CloseCode.TOO_BIG, f"a stream takes messages of at most {limit} bytes")

    def _spend(self, now: float) -> None:
        limits = self._limits
        self._tokens = min(float(limits.burst), self._tokens + (now - self._filled_at) * limits.rate)
        self._filled_at = now
        if self._tokens < 1:
            raise ProtocolViolation(
                CloseCode.POLICY_VIOLATION,
                f"more than {limits.rate:g} frames a second (burst {limits.burst})",
            )
        self._tokens -= 1


def _unmask(mask: bytes | bytearray, masked: bytes | bytearray) -> bytes:
    """A client's payload (RFC 6455 section 5.3), XORed as one big integer: no loop per byte."""
    length = len(masked)
    if not length:
        return b""
    key = (bytes(mask) * (length // 4 + 1))[:length]
    return (int.from_bytes(masked, "big") ^ int.from_bytes(key, "big")).to_bytes(length, "big")


def _close(payload: bytes) -> Close:
    if not payload:
        return Close(CloseCode.NO_STATUS, "")
    if len(payload) < 2:
        raise ProtocolViolation(CloseCode.PROTOCOL_ERROR, "a close frame with a 1-byte code")
    code = struct.unpack_from("!H", payload)[0]
    if code not in _SENDABLE and not 3000 <= code <= 4999:
        raise ProtocolViolation(CloseCode.PROTOCOL_ERROR, f"close code {code} may not be sent")
    try:
        reason = payload[2:].decode()
    except UnicodeDecodeError:
        raise ProtocolViolation(CloseCode.INVALID_TEXT, "a close reason that is not UTF-8") from None
    return Close(code, reason)


def frame(opcode: int, payload: bytes, *, compressed: bool = False) -> bytes:
    """One whole, unmasked frame from the server."""
    first = 0x80 | opcode | (0x40 if compressed else 0)
    length = len(payload)
    if length < 126:
        header = struct.pack("!BB", first, length)
    elif length < 1 << 16:
        header = struct.pack("!BBH", first, 126, length)
    else:
        header = struct.pack("!BBQ", first, 127, length)
    return header + payload


def close_frame(code: int, reason: str = "") -> bytes:
    """A close frame; the reason is cut to what a control frame holds (at a character's edge)."""
    encoded = reason.encode()[: _MAX_CONTROL - 2].decode(errors="ignore").encode()
    return frame(OP_CLOSE, struct.pack("!H", code) + encoded)
