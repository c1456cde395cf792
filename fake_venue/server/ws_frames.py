"""Server-to-client WebSocket frames, built once and written to many sockets.

A server's frames are never masked (RFC 6455 5.1) and this venue never negotiates compression, so
the bytes of one frame are the same for every client: an event is encoded and framed once and the
same ``bytes`` object is queued on each subscribed connection.
"""

from __future__ import annotations

import struct

TEXT = 0x1
CLOSE = 0x8
PING = 0x9
PONG = 0xA


def frame(opcode: int, payload: bytes) -> bytes:
    """One final (FIN) frame carrying ``payload``."""
    size = len(payload)
    first = 0x80 | opcode
    if size < 126:
        header = struct.pack("!BB", first, size)
    elif size < 65536:
        header = struct.pack("!BBH", first, 126, size)
    else:
        header = struct.pack("!BBQ", first, 127, size)
    return header + payload


def text_frame(payload: bytes) -> bytes:
    return frame(TEXT, payload)
