"""An incremental RESP2 reply parser with no I/O: bytes in, complete replies out.

The change feed receives thousands of pub/sub messages a second; parsing them from a buffer as
they arrive (instead of awaiting a stream read per line) keeps that cost to a few slices per
message. Replies: ``+text`` -> :class:`Simple`, ``:n`` -> ``int``, ``$n`` -> ``bytes`` (``None``
for ``$-1``), ``*n`` -> ``list``; ``-error`` raises :class:`RespError`.
"""

from __future__ import annotations


class RespError(Exception):
    """The server answered with an error reply, or sent something that is not RESP2."""


class Simple(bytes):
    """A simple-string reply (``+OK``, ``+PONG``), told apart from a bulk string."""


class _Incomplete(Exception):
    """The buffer ends inside a reply; wait for more bytes."""


class RespParser:
    """Feed it bytes in any chunks; it returns every reply completed so far, in order."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[object]:
        buffer = self._buffer
        buffer += data
        replies: list[object] = []
        position = 0
        try:
            while position < len(buffer):
                reply, position = self._reply(buffer, position)
                replies.append(reply)
        except _Incomplete:
            pass
        del buffer[:position]
        return replies

    def _reply(self, buffer: bytearray, start: int) -> tuple[object, int]:
        end = buffer.find(b"\r\n", start)
        if end < 0:
            raise _Incomplete
        marker, line, after = buffer[start], bytes(buffer[start + 1 : end]), end + 2
        if marker == 0x24:  # $
            size = int(line)
            if size < 0:
                return None, after
            if len(buffer) < after + size + 2:
                raise _Incomplete
            return bytes(buffer[after : after + size]), after + size + 2
        if marker == 0x2A:  # *
            items: list[object] = []
            for _ in range(int(line)):
                item, after = self._reply(buffer, after)
                items.append(item)
            return items, after
        if marker == 0x3A:  # :
            return int(line), after
        if marker == 0x2B:  # +
            return Simple(line), after
        if marker == 0x2D:  # -
            raise RespError(line.decode(errors="replace"))
        raise RespError(f"not a RESP2 reply: {bytes(buffer[start : start + 20])!r}")


def command(*parts: bytes) -> bytes:
    """A command in RESP2 (an array of bulk strings)."""
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        out.append(b"$%d\r\n%b\r\n" % (len(part), part))
    return b"".join(out)
