"""An incremental RESP2 reply parser with no I/O: bytes in, complete replies out.

Replies: ``+text`` -> :class:`Simple`, ``:n`` -> ``int``, ``$n`` -> ``bytes`` (``None`` for
``$-1``), ``*n`` -> ``list``; ``-error`` raises :class:`RespError`. A pub/sub message is
``[b"message", channel, payload]`` (``b"smessage"`` for a sharded one), its payload a ``memoryview``
or ``bytes``.

The change feed receives thousands of pub/sub messages a second, each several kilobytes, and most
are never read; so a message costs one regex match and no copy: its payload is a view into the
chunk it arrived in, which lives as long as the payload does (until the book's next message). A
payload smaller than a quarter of its chunk is copied instead, so that a quiet book cannot pin a
large chunk of other books' old snapshots. Only a reply split across chunks is joined: views of
its pieces are kept until it can be complete, then joined once.
"""

from __future__ import annotations

import re

# A pub/sub message (or a sharded one) up to its payload: the channel's length, the channel, the
# payload's length.
_MESSAGE = re.compile(rb"\*3\r\n\$(?:7\r\nmessage|8\r\n(s)message)\r\n\$(\d+)\r\n([^\r]*)\r\n\$(\d+)\r\n")


class RespError(Exception):
    """The server answered with an error reply, or sent something that is not RESP2."""


class Simple(bytes):
    """A simple-string reply (``+OK``, ``+PONG``), told apart from a bulk string."""


class _Incomplete(Exception):
    """The data ends inside a reply: it cannot be complete before ``need`` bytes."""

    def __init__(self, need: int) -> None:
        self.need = need


class RespParser:
    """Feed it bytes in any chunks; it returns every reply completed so far, in order."""

    def __init__(self) -> None:
        # The received start of a reply still arriving: views of the chunks it came in, their total
        # length, and the length they must reach before that reply can be complete.
        self._pieces: list[memoryview | bytes] = []
        self._have = 0
        self._need = 0

    def feed(self, data: bytes) -> list[object]:
        """The replies completed by ``data`` (kept as a view while a reply it starts is incomplete)."""
        try:
            return self._feed(data)
        except ValueError as exc:  # a length or integer that is not a number
            raise RespError(f"not a RESP2 reply: {exc}") from exc

    def _feed(self, data: bytes) -> list[object]:
        replies: list[object] = []
        position = 0
        while self._pieces:  # finish the split reply first, joining only the bytes it needs
            take = self._need - self._have
            if take > len(data) - position:
                self._pieces.append(memoryview(data)[position:])
                self._have += len(data) - position
                return replies
            head = b"".join((*self._pieces, memoryview(data)[position : position + take]))
            position += take
            try:
                reply, _ = _reply(head, 0)
            except _Incomplete as incomplete:
                self._pieces, self._have, self._need = [head], len(head), incomplete.need
                continue
            self._pieces, self._have = [], 0  # it ended at exactly _need bytes: it could not before
            replies.append(reply)
        try:
            while position < len(data):
                reply, position = _reply(data, position)
                replies.append(reply)
        except _Incomplete as incomplete:
            self._pieces.append(memoryview(data)[position:])
            self._have, self._need = len(data) - position, incomplete.need - position
        return replies


def _reply(data: bytes, start: int) -> tuple[object, int]:
    """The reply starting at ``start`` and the position after it."""
    message = _MESSAGE.match(data, start)
    if message is not None:  # one match instead of four replies
        sharded, channel_len, channel, size = message.groups()
        if len(channel) == int(channel_len):  # else the channel holds a CR and this is a prefix
            after = message.end()
            stop = after + int(size)
            if len(data) < stop + 2:
                raise _Incomplete(stop + 2)
            payload = memoryview(data)[after:stop] if 4 * (stop - after) >= len(data) else data[after:stop]
            return [b"smessage" if sharded else b"message", channel, payload], stop + 2
    end = data.find(b"\r\n", start)
    if end < 0:
        raise _Incomplete(len(data) + 1)
    marker, after = data[start], end + 2
    if marker == 0x24:  # $
        size = int(data[start + 1 : end])
        if size < 0:
            return None, after
        stop = after + size
        if len(data) < stop + 2:
            raise _Incomplete(stop + 2)
        return data[after:stop], stop + 2
    if marker == 0x2A:  # *
        items: list[object] = []
        for _ in range(int(data[start + 1 : end])):
            item, after = _reply(data, after)
            items.append(item)
        return items, after
    if marker == 0x3A:  # :
        return int(data[start + 1 : end]), after
    if marker == 0x2B:  # +
        return Simple(data[start + 1 : end]), after
    if marker == 0x2D:  # -
        raise RespError(data[start + 1 : end].decode(errors="replace"))
    raise RespError(f"not a RESP2 reply: {data[start : start + 20]!r}")
