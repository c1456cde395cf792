"""The read API's HTTP/1.1 rules in memory: scripted byte sequences into an Http1Machine.

No socket, no server, no event loop: a script feeds bytes (a flood stops at the first refusal) and
reads back the events, and how many bytes the machine took, and holds, before it refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import orjson

from read_functions.app.messages import Request
from read_functions.server.http1_machine import Answer, Event, Http1Machine

MAX_BODY = 1024 * 1024  # the read API's default (LADDER_MAX_BODY_BYTES)
STREAM_PATH = "/v1/stream"


def machine(max_body: int = MAX_BODY) -> Http1Machine:
    """A connection's machine, as the read API's server makes it (only the stream route upgrades)."""
    return Http1Machine(
        max_body=max_body,
        scheme="http://",
        peer="203.0.113.7",
        takes_upgrade=lambda request: request.raw_path == STREAM_PATH,
    )


@dataclass
class Fed:
    """What a script got out of the machine, how many bytes it fed, and how many the machine held."""

    events: list[Event]
    fed: int
    held: int

    def requests(self) -> list[Request]:
        return [e.request for e in self.events if isinstance(e, Answer) and e.request is not None]

    def refusal(self) -> tuple[int, str]:
        """The refusal's status and error code (it is the last event, and the connection then closes)."""
        answer = self.events[-1]
        assert isinstance(answer, Answer) and answer.refusal is not None, self.events
        assert answer.connection == "close"
        return answer.refusal.status, str(orjson.loads(answer.refusal.body)["error"]["code"])


def feed(m: Http1Machine, *pieces: bytes, now: float = 0.0) -> Fed:
    """Every piece, in order, as separate reads (until the machine refuses)."""
    return flood(m, b"", pieces, total=sum(map(len, pieces)), now=now)


def flood(m: Http1Machine, start: bytes, pieces: Iterable[bytes], total: int, *, now: float = 0.0) -> Fed:
    """``start``, then ``pieces`` until ``total`` bytes or the first refusal."""
    events = m.receive(start, now)
    fed = len(start)
    held = holding(m)
    for piece in pieces:
        if fed >= total or m.refused or m.upgraded:
            break
        events += m.receive(piece, now)
        fed += len(piece)
        held = max(held, holding(m))
    return Fed(events, fed, held)


def holding(m: Http1Machine) -> int:
    """The bytes of the request in progress the machine keeps (its URL, headers and body)."""
    body = m._body or b""
    return sum(map(len, m._url)) + sum(len(k) + len(v) for k, v in m._headers.items()) + len(body)


def repeated(piece: bytes, size: int = 64 * 1024) -> Iterator[bytes]:
    """``piece`` over and over, in reads of about ``size`` bytes."""
    block = piece * max(1, size // len(piece))
    return itertools.repeat(block)
