"""``ladder bench read_cost``: where a hot read's CPU goes, step by step, with the sockets taken out.

Theory of operation
-------------------
``ladder bench read`` measures whole servers under load, so its figures include the kernel, the
load generator and the scheduler. This benchmark answers the question behind them: of the CPU one
book read costs, how much is aiohttp itself and how much is Ladder? Raw HTTP requests are fed
straight into aiohttp's own protocol handler (``web.Server``), whose responses go to an in-memory
transport, so every byte of aiohttp's parsing and response writing runs, and nothing else. Four
handlers answer the same request, each adding one layer:

1. *static*: a ``web.Response`` of a precomputed body (what the read benchmark's ceiling serves);
2. *static + headers*: the same with the six headers a book response carries besides it;
3. *adapter*: Ladder's aiohttp adapter around a core that returns that response at once;
4. *full*: the real core reading one hot, cached book at depth 100 (the change feed idle).

Each runs ``--requests`` requests per round, the best of ``--rounds`` rounds counts (process CPU
time, so other work on the machine matters little). Run it under ``valgrind --tool=cachegrind``
with a smaller ``--requests`` for instruction counts that do not depend on the machine at all.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bench import read as read_bench
from bench.harness import Bench, run
from bench.report import Report
from control_plane.supervisor import Child, child_env
from read_functions.aiohttp_app import AiohttpAdapter
from read_functions.deps import Deps
from read_functions.dispatch import Dispatcher
from read_functions.messages import Request, Response
from read_functions.routes import ROUTES
from read_functions.routing import Router
from read_functions.settings import ReadSettings

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
JSON = "application/json"
BOOK_HEADERS = {
    "ETag": 'W/"123456.0.100.both"',
    "Cache-Control": "no-cache",
    "RateLimit-Limit": "10000000",
    "RateLimit-Remaining": "9999999",
    "RateLimit-Reset": "1",
    "X-Request-ID": "0a1b2c3d4e5f-123",
}


class MemoryTransport:
    """Just enough of a transport for aiohttp: it keeps what is written, and wakes the driver."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.answered: asyncio.Future[None] | None = None

    def write(self, data: bytes) -> None:
        self.chunks.append(data)
        self._answer()

    def writelines(self, chunks: list[bytes]) -> None:
        self.chunks.extend(chunks)
        self._answer()

    def _answer(self) -> None:
        if self.answered is not None and not self.answered.done():
            self.answered.set_result(None)

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 40000), "sockname": ("127.0.0.1", 8080)}.get(name, default)

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None: ...
    def resume_reading(self) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...
    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None: ...


class Connection:
    """One keep-alive connection into aiohttp's protocol handler, with no socket under it."""

    def __init__(self, handler: Handler) -> None:
        self._protocol = web.Server(handler, access_log=None)()
        self._transport = MemoryTransport()
        self._protocol.connection_made(self._transport)  # type: ignore[arg-type]  # what aiohttp uses

    async def request(self, raw: bytes) -> bytes:
        """Send one request; the bytes written for it (its response)."""
        transport = self._transport
        transport.chunks.clear()
        transport.answered = asyncio.get_running_loop().create_future()
        self._protocol.data_received(raw)
        await transport.answered
        return b"".join(transport.chunks)

    def close(self) -> None:
        self._protocol.connection_lost(None)


async def cpu_us_per_request(handler: Handler, raw: bytes, requests: int, rounds: int) -> float:
    """The best round's process CPU per request, each request a full aiohttp request/response."""
    connection = Connection(handler)
    for _ in range(200):  # warm-up
        await connection.request(raw)
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(requests):
            await connection.request(raw)
        best = min(best, (time.process_time() - started) / requests * 1e6)
    connection.close()
    return best


def request_bytes(path: str, key: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: bench\r\nX-API-Key: {key}\r\n\r\n".encode()


async def main(args: argparse.Namespace) -> None:
    report = Report("read_cost", "Read API: where one hot read's CPU goes, without sockets")
    markets = read_bench.market_names(args.markets)
    path = f"/v1/books/{read_bench.EXCHANGE}/{read_bench.HOT}?depth={read_bench.DEPTH}"
    with Bench() as bench:
        await read_bench.seed_catalog(bench.redis_url, markets)
        env = child_env(**bench.env, LADDER_ADMIN_KEY=read_bench.ADMIN_KEY, LADDER_PEPPER=read_bench.PEPPER)
        server = ["read_functions", "--host", "127.0.0.1", "--port", "0", "--workers", "1"]
        url = bench.supervisor.start(Child("read", server, env, "LADDER_READ_URL"))
        key = await read_bench.tenant_key(url, markets)
        # Quiet background: no replica goes silent and no cache reloads mid-measurement.
        os.environ.update(env, LADDER_MAX_SILENCE_MS="3600000", LADDER_AUTH_MAX_AGE_MS="60000")
        deps = await Deps.open(ReadSettings())
        try:
            full = AiohttpAdapter(Dispatcher(Router(ROUTES), deps), deps)
            raw = request_bytes(path, key)
            body = await _hot_body(full.handle, raw)

            async def static(_request: web.BaseRequest) -> web.Response:
                return web.Response(body=body, content_type=JSON)

            async def static_headers(_request: web.BaseRequest) -> web.Response:
                return web.Response(body=body, headers={**BOOK_HEADERS, "Content-Type": JSON})

            async def core_stub(_request: Request) -> Response:
                return Response(200, body, JSON, dict(BOOK_HEADERS))

            adapter = AiohttpAdapter(core_stub, deps)  # type: ignore[arg-type]  # a core in one line
            steps = [
                ("static body (the read benchmark's ceiling)", static),
                ("static body + the six book headers", static_headers),
                ("Ladder's adapter around a core that answers at once", adapter.handle),
                ("Ladder's full core, one hot cached book", full.handle),
            ]
            costs = [await cpu_us_per_request(h, raw, args.requests, args.rounds) for _, h in steps]
        finally:
            await deps.close()
    rows = []
    for (name, _handler), cost, previous in zip(steps, costs, [None, *costs], strict=False):
        rows.append([name, cost, "" if previous is None else cost - previous, cost / costs[0]])
    report.table("CPU per request", ["handler", "us", "us added by this layer", "x static"], rows)
    report.figure("full core / static", costs[-1] / costs[0], "x")
    report.figure("static / full core (the ceiling ratio with the sockets taken out)",
                  100 * costs[0] / costs[-1], "%")  # fmt: skip
    report.note(f"Best of {args.rounds} rounds of {args.requests} requests, process CPU time, uvloop.")
    report.note("Under `valgrind --tool=cachegrind` the same layers give user-space instructions.")
    print(report.write().read_text())


async def _hot_body(handler: Handler, raw: bytes) -> bytes:
    """The hot book's response body (the request also loads the book into the cache)."""
    connection = Connection(handler)
    response = await connection.request(raw)
    connection.close()
    return response.partition(b"\r\n\r\n")[2]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ladder bench read_cost", description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=5000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--markets", type=int, default=50, help="markets seeded (one is read)")
    return parser.parse_args()


if __name__ == "__main__":
    run(main(parse_args()))
