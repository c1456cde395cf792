"""An open-loop HTTP load generator: requests leave at a fixed arrival rate, never waiting for answers.

Closed-loop clients (wrk, k6's VU loops) send the next request when the last answer arrives, so a
slow server slows its own load and hides its latency (coordinated omission). Here each request has
a due time fixed in advance by the arrival rate (constant, or ramping linearly from one stage's
rate to the next, as k6's ``ramping-arrival-rate`` does); at that time it leaves on an idle
keep-alive connection, or a new one (up to a bound), so a slow server meets a growing crowd, as it
does in production. Latency counts from the due time; a request unanswered ``timeout_s`` after it
was due is a timeout and its connection is given up, as clients do.

The generator runs in its own process on uvloop, with a hand-written HTTP/1.1 client protocol (the
answer's head is parsed for the status and ``Content-Length``, nothing else), so that it takes as
little as possible of the cores it shares with what it measures; it reports the CPU it used, so a
report can show that share. (wrk2 would do the same in C, but Debian has no package for it, and
wrk, which Debian has, is closed-loop.)
"""

from __future__ import annotations

import asyncio
import bisect
import math
import random
import resource
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any
from urllib.parse import urlsplit

from bench import forked
from bench.report import percentiles

TIMEOUT = 0
"""``status`` of a request unanswered ``timeout_s`` after it was due."""
SOCKET_ERROR = -1
"""``status`` of a request whose connection failed under it."""
_PENDING = -2
REPORT_S = 60.0
"""What a generator may take beyond its stages to start, finish its last requests and send its
outcome (millions of requests pickled)."""


@dataclass(frozen=True)
class Stage:
    """``seconds`` during which the arrival rate moves linearly from ``start_rate`` to ``end_rate``."""

    start_rate: float
    end_rate: float
    seconds: float
    name: str = ""

    def arrivals(self, t: float) -> float:
        """Requests due in the first ``t`` seconds of the stage."""
        slope = (self.end_rate - self.start_rate) / self.seconds
        return self.start_rate * t + slope * t * t / 2

    def due(self, n: int) -> float:
        """When (seconds into the stage) the ``n``-th request (from 1) of the stage is due."""
        slope = (self.end_rate - self.start_rate) / self.seconds
        if abs(slope) < 1e-12:
            return n / self.start_rate
        return (math.sqrt(self.start_rate**2 + 2 * slope * n) - self.start_rate) / slope


def steady(rate: float, seconds: float, name: str = "") -> Stage:
    return Stage(rate, rate, seconds, name)


def ramp(
    targets: Sequence[float], seconds: Sequence[float], start: float, names: Sequence[str] = ()
) -> list[Stage]:
    """k6's stages: from ``start``, the rate moves linearly to each target over its ``seconds``."""
    stages, rate = [], start
    for i, (target, length) in enumerate(zip(targets, seconds, strict=True)):
        stages.append(Stage(rate, target, length, names[i] if names else f"{rate:g} -> {target:g} req/s"))
        rate = target
    return stages


@dataclass
class Outcome:
    """Every request of one run: when it was due (seconds since the run began), its stage, its
    status (HTTP status, :data:`TIMEOUT` or :data:`SOCKET_ERROR`), its latency from its due time,
    and how late it left; plus the generator's own CPU time."""

    stages: list[Stage]
    due_s: list[float] = field(default_factory=list)
    stage: list[int] = field(default_factory=list)
    status: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    send_delay_ms: list[float] = field(default_factory=list)
    generator_cpu_s: float = 0.0
    seconds: float = 0.0

    def select(self, stage: int | None = None, window: tuple[float, float] | None = None) -> Summary:
        """The requests of one stage, or due within a window of the run, summed up (requests are
        recorded in due order, so both are one slice)."""
        lo, hi = 0, len(self.due_s)
        if stage is not None:
            lo, hi = bisect.bisect_left(self.stage, stage), bisect.bisect_right(self.stage, stage)
        if window is not None:
            lo = max(lo, bisect.bisect_left(self.due_s, window[0]))
            hi = min(hi, bisect.bisect_left(self.due_s, window[1]))
        hi = max(lo, hi)
        return Summary.of(self.status[lo:hi], self.latency_ms[lo:hi], self.send_delay_ms[lo:hi])

    def windows(self, seconds: float) -> list[tuple[float, float, Summary]]:
        """(start, asked rate, summary) of each ``seconds``-long window of the run."""
        count = math.ceil(self.seconds / seconds - 1e-9)
        out = []
        for i in range(count):
            summary = self.select(window=(i * seconds, (i + 1) * seconds))
            length = min(seconds, self.seconds - i * seconds)  # the last window may be short
            out.append((i * seconds, summary.sent / length, summary))
        return out


@dataclass
class Summary:
    """What a set of requests got: counts by outcome and latency percentiles (answered ones)."""

    sent: int
    statuses: dict[int, int]
    timeouts: int
    socket_errors: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    send_delay_p99_ms: float

    @classmethod
    def of(cls, statuses: Sequence[int], latencies: Sequence[float], delays: Sequence[float]) -> Summary:
        counts: dict[int, int] = {}
        for status in statuses:
            counts[status] = counts.get(status, 0) + 1
        answered = [lat for status, lat in zip(statuses, latencies, strict=True) if status > 0]
        pct = percentiles(answered, (50, 95, 99))
        late = percentiles(delays, (99,))
        return cls(
            sent=len(statuses),
            statuses={k: v for k, v in counts.items() if k > 0},
            timeouts=counts.get(TIMEOUT, 0),
            socket_errors=counts.get(SOCKET_ERROR, 0),
            p50_ms=pct.get("p50", 0.0),
            p95_ms=pct.get("p95", 0.0),
            p99_ms=pct.get("p99", 0.0),
            max_ms=pct.get("max", 0.0),
            send_delay_p99_ms=late.get("p99", 0.0),
        )

    @property
    def failed(self) -> int:
        """k6's ``http_req_failed``: no answer, or a status of 400 and above."""
        return self.timeouts + self.socket_errors + sum(v for k, v in self.statuses.items() if k >= 400)

    @property
    def failed_pct(self) -> float:
        return 100.0 * self.failed / max(1, self.sent)

    def p95_with_failures_ms(self, timeout_s: float) -> float:
        """p95 as k6 reports it, timeouts counted at the timeout (k6 times a request until it gives up)."""
        answered = self.sent - self.timeouts - self.socket_errors
        if answered >= 0.95 * self.sent:
            return self.p95_ms
        return 1000.0 * timeout_s

    def row(self) -> dict[str, Any]:
        return {**vars(self), "failed": self.failed, "failed_pct": self.failed_pct}


# -- the generator process --------------------------------------------------------------------------
class _Client(asyncio.Protocol):
    """One keep-alive connection carrying one request at a time."""

    def __init__(self, generator: _Generator) -> None:
        self._generator = generator
        self.transport: asyncio.Transport | None = None
        self.request = -1  # index of the request in flight
        self._buffer = b""
        self._length = -1  # bytes of the answer, head and body, once its head is in
        self._status = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._generator.idle(self)

    def send(self, index: int, request: bytes) -> None:
        assert self.transport is not None
        self.request = index
        self.transport.write(request)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._length < 0:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self._buffer[:end].lower()
            self._status = int(head[9:12])  # "HTTP/1.1 200 ..."
            length, at = 0, head.find(b"\r\ncontent-length:")
            if at >= 0:
                stop = head.find(b"\r\n", at + 17)
                length = int(head[at + 17 : stop if stop >= 0 else end])
            self._length = end + 4 + length
        if len(self._buffer) >= self._length:
            self._buffer, self._length, request = self._buffer[self._length :], -1, self.request
            self.request = -1
            if request >= 0:
                self._generator.answered(request, self._status)
            self._generator.idle(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._generator.lost(self)


class _Generator:
    def __init__(self, url: str, requests: Sequence[bytes], max_connections: int, timeout_s: float) -> None:
        parts = urlsplit(url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._requests = list(requests)
        self._max = max_connections
        self._timeout_s = timeout_s
        self._loop = asyncio.get_running_loop()
        self._idle: list[_Client] = []
        self._busy: set[_Client] = set()
        self._opening = 0
        self._pending: deque[int] = deque()
        self._started = 0.0
        self.outcome = Outcome([])

    def idle(self, client: _Client) -> None:
        self._busy.discard(client)
        self._idle.append(client)
        self._dispatch()

    def answered(self, index: int, status: int) -> None:
        outcome = self.outcome
        if outcome.status[index] != _PENDING:  # counted as a timeout already
            return
        outcome.status[index] = status
        outcome.latency_ms[index] = (time.perf_counter() - self._started - outcome.due_s[index]) * 1000

    def lost(self, client: _Client) -> None:
        self._busy.discard(client)
        if client in self._idle:
            self._idle.remove(client)
        if client.request >= 0:
            if self.outcome.status[client.request] == _PENDING:
                self.outcome.status[client.request] = SOCKET_ERROR
            client.request = -1

    async def run(self, stages: list[Stage]) -> Outcome:
        outcome = self.outcome = Outcome(stages)
        self._started = time.perf_counter()
        expired_at = stage_start = 0.0
        for number, stage in enumerate(stages):
            sent = 0
            while (now := time.perf_counter() - self._started) < stage_start + stage.seconds:
                due_count = int(stage.arrivals(now - stage_start)) - sent
                for _ in range(due_count):
                    outcome.due_s.append(stage_start + stage.due(sent + 1))
                    outcome.stage.append(number)
                    outcome.status.append(_PENDING)
                    outcome.latency_ms.append(0.0)
                    outcome.send_delay_ms.append(0.0)
                    self._pending.append(len(outcome.due_s) - 1)
                    sent += 1
                self._dispatch()
                if now - expired_at >= 0.1:
                    expired_at = now
                    self._expire(now)
                await asyncio.sleep(0.001)
            stage_start += stage.seconds
        outcome.seconds = stage_start
        drain_until = time.perf_counter() + self._timeout_s + 0.5
        while (self._pending or self._busy) and time.perf_counter() < drain_until:
            self._expire(time.perf_counter() - self._started)
            await asyncio.sleep(0.05)
        for client in [*self._idle, *self._busy]:
            if client.transport is not None:
                client.transport.abort()
        outcome.status = [TIMEOUT if status == _PENDING else status for status in outcome.status]
        return outcome

    def _dispatch(self) -> None:
        pending, outcome = self._pending, self.outcome
        now = time.perf_counter() - self._started
        requests = self._requests
        choose = random.choice
        while pending and self._idle:
            client = self._idle.pop()
            index = pending.popleft()
            outcome.send_delay_ms[index] = (now - outcome.due_s[index]) * 1000
            self._busy.add(client)
            client.send(index, requests[0] if len(requests) == 1 else choose(requests))
        room = self._max - len(self._busy) - len(self._idle) - self._opening
        for _ in range(min(room, len(pending) - self._opening)):
            self._opening += 1
            self._loop.create_task(self._open())

    async def _open(self) -> None:
        try:
            await self._loop.create_connection(lambda: _Client(self), self._host, self._port)
        except OSError:
            pass  # the requests it was for stay pending: another connection, or their timeout, takes them
        finally:
            self._opening -= 1

    def _expire(self, now: float) -> None:
        pending, outcome = self._pending, self.outcome
        while pending and now - outcome.due_s[pending[0]] > self._timeout_s:
            outcome.status[pending.popleft()] = TIMEOUT
        for client in list(self._busy):
            if client.request >= 0 and now - outcome.due_s[client.request] > self._timeout_s:
                outcome.status[client.request] = TIMEOUT
                client.request = -1
                self._busy.discard(client)
                if client.transport is not None:
                    client.transport.abort()  # a timed-out connection is given up, as clients do


def request_bytes(url: str, path: str, key: str) -> bytes:
    """One GET of ``path`` with the tenant's key, as the generator sends it."""
    host = urlsplit(url).hostname or "127.0.0.1"
    return f"GET {path} HTTP/1.1\r\nHost: {host}\r\nX-API-Key: {key}\r\n\r\n".encode()


def _generate(url: str, requests: Sequence[bytes], stages: list[Stage], connections: int, timeout_s: float,
              results: Connection) -> None:  # fmt: skip
    import uvloop

    async def run() -> Outcome:
        return await _Generator(url, requests, connections, timeout_s).run(stages)

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        outcome = runner.run(run())
    usage = resource.getrusage(resource.RUSAGE_SELF)
    outcome.generator_cpu_s = usage.ru_utime + usage.ru_stime
    results.send(outcome)


@dataclass(frozen=True)
class Started:
    """A generator process (:func:`start`), and how long it may take to send its outcome."""

    process: BaseProcess
    pipe: Connection
    seconds: float
    """Its stages, the last requests' timeout and its report (it is late past that)."""


def start(
    url: str,
    requests: Sequence[bytes],
    stages: list[Stage],
    *,
    connections: int = 2000,
    timeout_s: float = 5.0,
) -> Started:
    """Start the generator in its own process, for :func:`collect`. ``requests``: the raw requests
    to send, one drawn at random for each arrival."""
    process, pipe = forked.start(_generate, url, requests, stages, connections, timeout_s)
    return Started(process, pipe, sum(stage.seconds for stage in stages) + timeout_s + REPORT_S)


async def collect(started: Started) -> Outcome:
    """Wait (without holding the event loop) for a started generator's outcome; RuntimeError if it
    dies or is late instead (``forked.receive``)."""
    outcome: Outcome = await asyncio.to_thread(
        forked.receive, started.process, started.pipe, started.seconds, "the read generator"
    )
    return outcome


async def run(
    url: str,
    requests: Sequence[bytes],
    stages: list[Stage],
    *,
    connections: int = 2000,
    timeout_s: float = 5.0,
) -> Outcome:
    """Run ``stages`` against ``url`` from a generator process and return every request's outcome."""
    return await collect(start(url, requests, stages, connections=connections, timeout_s=timeout_s))
