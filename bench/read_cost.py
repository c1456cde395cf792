"""``ladder bench read_cost``: where a hot read's CPU goes, step by step, with the sockets taken out.

Theory of operation
-------------------
``ladder bench read`` measures whole servers under load, so its figures include the kernel, the
load generator and the scheduler. This benchmark answers the question behind them: of the CPU one
book read costs, how much is the HTTP protocol and how much is Ladder's core? Raw HTTP requests
are fed straight into a protocol object (``connection_made`` with an in-memory transport, then
``data_received``) and the answer is awaited as it is written, so every byte of parsing, the core
and response writing runs, and nothing else. The read API serves HTTP/1.1 with its own protocol
(:class:`read_functions.server.http1.Http1Connection`); aiohttp is kept as the reference, since the read
benchmark's ceiling and targets are set against it. Four layers answer the same request:

1. *aiohttp static*: aiohttp's low-level server answering a precomputed body (the ceiling);
2. *ladder static*: the same body through Ladder's protocol, from a core that answers at once
   (the protocol's own cost);
3. *ladder + book headers*: the same with the six headers a book response carries besides it;
4. *full*: the read API's server (``Http1Server.for_api``) and real core reading one hot, cached
   book at depth 100 (the change feed idle).

Ladder's servers are never started (no listener, no clock task): their coarse clock is set once,
as ``start()`` would set it. Each layer runs ``--requests`` requests per round, the layers taking
turns within a round, and each layer's best of ``--rounds`` rounds counts (process CPU time: other
work on the machine still shares its caches and cores, so figures wander by tens of percent). It
also runs under ``valgrind --tool=cachegrind`` with a small ``--requests``: the layers' figures are
then CPU time under valgrind's simulation, and ``cg_annotate`` shows which functions it went to.

``--instructions`` counts instead of timing, so it holds on a busy machine: the full layer alone
runs twice under ``valgrind --tool=callgrind``, with ``--requests`` and with three times as many,
and the difference of the two runs' instruction totals, divided by the requests between them, is
what one request costs (start-up, seeding and warm-up cancel out).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from bench import read as read_bench
from bench.harness import Bench, run
from bench.report import Report
from ladder_cli.supervisor import Child, child_env
from ladder_process.cli import HelpFormatter
from read_functions.app.dispatch import Dispatcher
from read_functions.app.messages import JSON, Request, Response
from read_functions.app.routing import Router
from read_functions.deps import Deps
from read_functions.routes import ROUTES
from read_functions.server.http1 import Core, Http1Connection, Http1Server
from read_functions.settings import load_settings

ProtocolFactory = Callable[[], asyncio.Protocol]
BOOK_HEADERS = {
    "ETag": 'W/"123456.0.100.both"',
    "Cache-Control": "no-cache",
    "RateLimit-Limit": "10000000",
    "RateLimit-Remaining": "9999999",
    "RateLimit-Reset": "1",
    "X-Request-ID": "0a1b2c3d4e5f-123",
}


class MemoryTransport:
    """Just enough of a transport for both protocols: it keeps what is written, and wakes the driver."""

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
    """One keep-alive connection into an HTTP protocol object, with no socket under it."""

    def __init__(self, protocol: asyncio.Protocol) -> None:
        self._protocol = protocol
        self._transport = MemoryTransport()
        protocol.connection_made(self._transport)  # type: ignore[arg-type]  # what the protocols use

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


def connections_to(server: Http1Server) -> ProtocolFactory:
    """Connections to ``server`` without starting it: its clock is set as ``start()`` would."""
    server.tick()
    return lambda: Http1Connection(server)


async def cpu_us_per_request(
    protocols: list[ProtocolFactory], raw: bytes, requests: int, rounds: int
) -> list[float]:
    """Each protocol's best round of process CPU per request, a request a full exchange.

    Every round takes the layers in turn, so a busy spell on the shared machine falls on all of
    them alike rather than on whichever layer it happened to meet.
    """
    connections = [Connection(protocol()) for protocol in protocols]
    for connection in connections:
        for _ in range(200):  # warm-up
            await connection.request(raw)
    best = [float("inf")] * len(connections)
    for _ in range(rounds):
        for layer, connection in enumerate(connections):
            started = time.process_time()
            for _ in range(requests):
                await connection.request(raw)
            best[layer] = min(best[layer], (time.process_time() - started) / requests * 1e6)
    for connection in connections:
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
        deps = await Deps.open(load_settings())
        try:
            raw = request_bytes(path, key)
            full = connections_to(
                Http1Server.for_api(Dispatcher(Router(ROUTES), deps), deps.settings, secure=False)
            )
            body = await _hot_body(full, raw)
            max_body = deps.settings.max_body_bytes

            async def aiohttp_static(_request: web.BaseRequest) -> web.Response:
                return web.Response(body=body, content_type=JSON)

            async def ladder_static(_request: Request) -> Response:
                return Response(200, body)

            async def ladder_headers(_request: Request) -> Response:
                return Response(200, body, headers=dict(BOOK_HEADERS))

            def ladder(core: Core) -> ProtocolFactory:
                return connections_to(Http1Server(core, max_body_bytes=max_body, secure=False))

            ceiling = web.Server(aiohttp_static, access_log=None)
            steps: list[tuple[str, ProtocolFactory]] = [
                ("aiohttp static body (the read benchmark's ceiling)", ceiling),
                ("ladder static: Ladder's protocol, a core that answers at once", ladder(ladder_static)),
                ("ladder + the six book headers", ladder(ladder_headers)),
                ("full: Ladder's protocol and core, one hot cached book", full),
            ]
            if args.full_only:
                steps = steps[-1:]
            costs = await cpu_us_per_request([p for _, p in steps], raw, args.requests, args.rounds)
        finally:
            await deps.close()
    if args.full_only:
        return
    aiohttp_static_us, ladder_static_us, full_us = costs[0], costs[1], costs[-1]
    rows = []
    for (name, _protocol), cost, previous in zip(steps, costs, [None, *costs], strict=False):
        added = "" if previous is None else cost - previous
        rows.append([name, cost, added, cost / aiohttp_static_us, cost / ladder_static_us])
    header = ["layer", "us", "us vs the row above", "x aiohttp static", "x ladder static"]
    report.table("CPU per request", header, rows)
    report.figure(
        "ladder static / aiohttp static (the protocols alone)", ladder_static_us / aiohttp_static_us, "x"
    )
    report.figure("full / aiohttp static", full_us / aiohttp_static_us, "x")
    report.figure("full / ladder static (what the core and headers add)", full_us / ladder_static_us, "x")
    report.figure(
        "aiohttp static / full (the ceiling ratio with the sockets taken out)",
        100 * aiohttp_static_us / full_us,
        "%",
        reference="ladder bench read: hot / ceiling",
    )
    report.note(
        f"Best of {args.rounds} rounds of {args.requests} requests a layer, the layers in turn each round, "
        "process CPU time, uvloop."
    )
    report.note(
        f"Body: {len(body)} bytes (depth {read_bench.DEPTH} a side), the hot book's own, in every layer. "
        "Ladder's layers drive Http1Connection directly; the full one is Http1Server.for_api, as served."
    )
    report.note("Under `valgrind --tool=cachegrind` the same layers run, at valgrind's pace.")
    print(report.write().read_text())


async def _hot_body(protocol: ProtocolFactory, raw: bytes) -> bytes:
    """The hot book's response body (the request also loads the book into the cache)."""
    connection = Connection(protocol())
    response = await connection.request(raw)
    connection.close()
    head, _, body = response.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200 "):
        raise SystemExit(f"the hot read was not answered with 200: {head.decode('latin-1')}")
    return body


def instructions_per_request(args: argparse.Namespace) -> float:
    """Instructions one full read costs: two callgrind runs of the full layer, differenced."""
    totals: list[int] = []
    for requests in (args.requests, 3 * args.requests):
        with tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch) / "callgrind.out"
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
                       "-m", "bench.read_cost", "--full-only", "--rounds", "1", "--requests", str(requests),
                       "--markets", str(args.markets)]  # fmt: skip
            subprocess.run(command, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
            totals.append(_instructions(out))
    requests_between: int = 2 * args.requests
    return (totals[1] - totals[0]) / requests_between


def _instructions(callgrind_out: Path) -> int:
    for line in callgrind_out.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"no instruction total in {callgrind_out}")


def report_instructions(args: argparse.Namespace) -> None:
    report = Report("read_cost_instructions", "Read API: instructions per hot read, full layer, callgrind")
    report.figure("instructions per request (full layer)", instructions_per_request(args), "instructions")
    report.note(
        f"valgrind --tool=callgrind, the full layer alone, {args.requests} and {3 * args.requests} requests "
        "(after 200 of warm-up), the two instruction totals differenced; PYTHONHASHSEED=0."
    )
    print(report.write().read_text())


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ladder bench read_cost", description=__doc__.split("\n")[0], formatter_class=HelpFormatter
    )
    parser.add_argument("--requests", type=int, default=5000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of every layer (the best is kept)")
    parser.add_argument("--markets", type=int, default=50, help="markets seeded (one is read)")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions per full read under callgrind"
    )
    parser.add_argument("--full-only", action="store_true", help=argparse.SUPPRESS)  # a counted child
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.instructions:
        report_instructions(arguments)
    else:
        run(main(arguments))
