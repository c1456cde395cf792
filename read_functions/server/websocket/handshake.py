"""The opening handshake of a book stream (RFC 6455 section 4.2), and the compression it may agree.

The core has already authorized the request (``/v1/stream``); what is left is the WebSocket part:
the request must be a valid opening handshake (``Upgrade: websocket``, ``Connection: Upgrade``, a
16-byte ``Sec-WebSocket-Key``, version 13), and the answer names the stream's subprotocol
(``ladder.v1``, or ``ladder.v2`` for the multiplexed stream) when the client offered one (a
browser puts its key beside it, as ``ladder.key.<key>``, and the answer never echoes that).

Compression (permessage-deflate, RFC 7692) is agreed when offered, always with
``server_no_context_takeover``, which a server may add to any offer: each message is deflated on
its own, by a compressor made for it (a 512-byte window, memory level 4: about 16 KiB while it
works) and let go at once. A stream then holds no compressor between messages: a compressor that
remembers the last message (context takeover) compresses the next snapshot of a book to a few
percent when its window holds a whole message, but a window that holds a 100-level book (8 KiB)
costs about 46 KiB a stream for as long as the stream lives, and the default (32 KiB) 262 KiB,
where messages compressed on their own still shrink to a fifth to a half (measured in the commit
that chose this). A one-book stream's client has nothing to say, and nothing it sends is inflated
(see :mod:`.frames`). The multiplexed stream's client does speak, and a client that agreed
compression deflates what it sends (browsers and the ``websockets`` library do): for such a stream
the answer adds ``client_no_context_takeover`` (a server may add it to any offer), so each of the
client's messages inflates on its own and the server keeps no inflater between them either.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from control_plane.errors import InvalidRequestError
from read_functions.app.api_key import offered_protocols

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
WINDOW_BITS = 9
MEMORY_LEVEL = 4
_DEFLATE_TAIL = b"\x00\x00\xff\xff"


@dataclass(frozen=True, slots=True)
class Agreed:
    """What the handshake's answer says, and whether messages are deflated."""

    headers: dict[str, str]
    deflate: bool


def agree(headers: Mapping[str, str], protocol: str, *, client_speaks: bool = False) -> Agreed:
    """The 101 answer's WebSocket headers for a valid opening handshake of a stream that speaks
    ``protocol`` (``client_speaks``: its client sends messages, which it may deflate, each on its
    own); InvalidRequestError else."""
    if "websocket" not in _tokens(headers.get("upgrade")) or "upgrade" not in _tokens(
        headers.get("connection")
    ):
        raise _invalid("Upgrade: websocket and Connection: Upgrade are required")
    if headers.get("sec-websocket-version", "").strip() != "13":
        raise _invalid("Sec-WebSocket-Version: 13 is required")
    key = headers.get("sec-websocket-key", "").strip()
    try:
        valid_key = len(base64.b64decode(key, validate=True)) == 16
    except (binascii.Error, ValueError):
        valid_key = False
    if not valid_key:
        raise _invalid("Sec-WebSocket-Key must be 16 bytes in base64")
    accept = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()  # noqa: S324 - the RFC's
    answer = {"Upgrade": "websocket", "Sec-WebSocket-Accept": accept}
    if offered_protocols(headers):
        answer["Sec-WebSocket-Protocol"] = protocol
    extension = _deflate_answer(headers.get("sec-websocket-extensions", ""))
    if extension is not None:
        answer["Sec-WebSocket-Extensions"] = extension
        if client_speaks:
            answer["Sec-WebSocket-Extensions"] += "; client_no_context_takeover"
    return Agreed(answer, extension is not None)


def deflate(message: bytes) -> bytes:
    """``message`` as one permessage-deflate payload, compressed on its own (see the module's doc)."""
    compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -WINDOW_BITS, MEMORY_LEVEL)
    compressed = compressor.compress(message) + compressor.flush(zlib.Z_SYNC_FLUSH)
    return compressed[: -len(_DEFLATE_TAIL)]


def _deflate_answer(offers: str) -> str | None:
    """The answer to the first permessage-deflate offer this server can take, if any."""
    for offer in offers.split(","):
        name, *raw = (part.strip() for part in offer.split(";"))
        if name.lower() != "permessage-deflate":
            continue
        params: dict[str, str | None] = {}
        for item in raw:
            key, _, value = item.partition("=")
            params[key.strip().lower()] = value.strip().strip('"') or None
        answer = _answer_to(params)
        if answer is not None:
            return answer
    return None


def _answer_to(params: dict[str, str | None]) -> str | None:
    """The answer to one offer, or None to decline it (an unknown parameter, a bad value, or a server
    window this compressor cannot keep within)."""
    answer = "permessage-deflate; server_no_context_takeover"
    for key, value in params.items():
        if key in ("server_no_context_takeover", "client_no_context_takeover"):
            if value is not None:
                return None
        elif key == "client_max_window_bits":
            if value is not None and not _window(value):
                return None
        elif key == "server_max_window_bits":
            if value is None or not _window(value) or int(value) < WINDOW_BITS:
                return None
            answer += f"; server_max_window_bits={WINDOW_BITS}"
        else:
            return None
    return answer


def _window(value: str) -> bool:
    return value.isdigit() and 8 <= int(value) <= 15


def _tokens(value: str | None) -> set[str]:
    return {token.strip().lower() for token in (value or "").split(",")}


def _invalid(why: str) -> InvalidRequestError:
    return InvalidRequestError(f"not a valid WebSocket handshake (RFC 6455 section 4.2.1): {why}")
