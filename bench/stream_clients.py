"""The read side of ``ladder bench latency --cases "100 to clients"``: a read worker, and clients of
its multiplexed stream (``ladder.v2``) that time every book message and count its bytes.

A :class:`StreamClient` is one socket following every book in one mode, ``snapshot`` (the book up
to its depth on every publish, today's message) or ``diff`` (a snapshot, then the levels that
changed, with a checksum): for each message that carries a new update id it records *receive time
minus the message's* ``ingest_time`` (the node read the newest frame folded into it), as the store
subscriber of the other cases does; and it counts the bytes of every book message, keepalives
included, as sent (JSON) and as the server deflates each on its own when compression is agreed
(:func:`read_functions.server.websocket.handshake.deflate`, computed after the window so that it
costs the timing nothing). The client asks for no compression, so what it reads is what it counts.

:func:`stalled` opens sockets that subscribe every book in diff mode and never read: the read
worker's memory with them open, and while its books keep moving, is the bounded memory per socket
(a slow consumer holds one pending flag per book and the transport's buffer, never a backlog);
:func:`send_queues` reads what the kernel holds for them, before the server's buffers fill.
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from dataclasses import dataclass, field

import aiohttp
import orjson

from bench.harness import Bench
from bench.read import ADMIN_KEY, PEPPER
from ladder_cli.supervisor import Child, child_env
from read_functions.server.websocket.handshake import deflate

MODES = ("snapshot", "diff")


def start_reader(bench: Bench) -> tuple[str, int]:
    """One read worker (``python -m read_functions``, one process) over the bench's store: its URL
    and pid."""
    bench.env.update({"LADDER_ADMIN_KEY": ADMIN_KEY, "LADDER_PEPPER": PEPPER})
    args = ["read_functions", "--host", "127.0.0.1", "--port", "0", "--workers", "1",
            "--log-level", "WARNING"]  # fmt: skip
    child = Child("read", args, child_env(**bench.env), "LADDER_READ_URL")
    url = bench.supervisor.start(child)
    assert child.proc is not None
    return url, child.proc.pid


def subscribe_message(exchange: str, markets: list[str], mode: str, depth: int) -> bytes:
    """The op that follows every market of ``markets`` in ``mode``."""
    books = [{"exchange": exchange, "market": m, "mode": mode, "depth": depth} for m in markets]
    return orjson.dumps({"op": "subscribe", "id": mode, "books": books})


@dataclass
class StreamClient:
    """One ``ladder.v2`` socket following every book in ``mode`` (see the module's doc)."""

    mode: str
    exchange: str
    markets: list[str]
    depth: int
    samples: list[tuple[float, float]] = field(default_factory=list)
    messages: list[tuple[float, bytes]] = field(default_factory=list)
    """Every book message with its receive time (ms)."""
    refused: list[object] = field(default_factory=list)
    _last: dict[str, int] = field(default_factory=dict)
    _task: asyncio.Task[None] | None = None

    async def start(self, http: aiohttp.ClientSession, url: str, key: str) -> None:
        socket = await http.ws_connect(
            f"{url}/v1/stream",
            headers={"X-API-Key": key},
            protocols=("ladder.v2",),
            compress=0,
            max_msg_size=0,
        )
        await socket.send_str(subscribe_message(self.exchange, self.markets, self.mode, self.depth).decode())
        self._task = asyncio.create_task(self._listen(socket))

    async def _listen(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        try:
            async for message in socket:
                received = time.time() * 1000
                data = message.data.encode() if isinstance(message.data, str) else message.data
                book = orjson.loads(data)
                kind = book.get("type")
                if kind == "ack":
                    self.refused += [r for r in book["results"] if r["result"] != "subscribed"]
                    continue
                if kind not in ("book", "snapshot", "diff"):
                    continue
                self.messages.append((received, data))
                market, update_id, ingest_time = book["market"], book["update_id"], book.get("ingest_time")
                if update_id <= self._last.get(market, -1) or ingest_time is None:
                    continue  # a keepalive: the same book again
                self._last[market] = update_id
                self.samples.append((received, received - ingest_time))
        finally:
            await socket.close()

    def window(self, since_ms: float, until_ms: float) -> tuple[list[float], list[bytes]]:
        """The latency samples and the book messages received between the two times."""
        return (
            [latency for received, latency in self.samples if since_ms <= received < until_ms],
            [data for received, data in self.messages if since_ms <= received < until_ms],
        )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def sizes(messages: list[bytes]) -> tuple[int, int]:
    """Bytes of ``messages`` as JSON, and as the server deflates each on its own."""
    return sum(map(len, messages)), sum(len(deflate(m)) for m in messages)


async def stalled(url: str, key: str, subscribe: bytes) -> asyncio.StreamWriter:
    """A socket that sends ``subscribe`` (one masked text frame) and never reads again: its
    reader stops taking bytes once its small buffer is full, so the server's writes back up."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port), limit=4096)
    handshake = (
        f"GET /v1/stream HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}\r\nSec-WebSocket-Version: 13\r\n"
        f"Sec-WebSocket-Protocol: ladder.v2\r\nX-API-Key: {key}\r\n\r\n"
    )
    writer.write(handshake.encode())
    answer = await reader.readuntil(b"\r\n\r\n")
    if not answer.startswith(b"HTTP/1.1 101"):
        raise RuntimeError(f"a stalled socket was refused: {answer[:200]!r}")
    length = len(subscribe)  # a masked text frame, masked with a zero key (the payload as it is)
    header = bytes([0x81, 0xFE]) + length.to_bytes(2, "big") if length > 125 else bytes([0x81, 0x80 | length])
    writer.write(header + b"\0\0\0\0" + subscribe)
    await writer.drain()
    return writer


def send_queues(port: int) -> list[int]:
    """The kernel's send queue (bytes written, not yet taken by the peer) of every established
    IPv4 connection of the local ``port`` (Linux ``/proc/net/tcp``; none elsewhere)."""
    try:
        with open("/proc/net/tcp") as table:
            rows = [line.split() for line in table.readlines()[1:]]
    except OSError:
        return []
    return [
        int(row[4].split(":")[0], 16)
        for row in rows
        if row[3] == "01" and int(row[1].split(":")[1], 16) == port
    ]
