"""A recorded venue: diff frames and snapshots taken from the fake venue once, served again at full speed.

The fake venue makes each update as it goes (a few thousand per second on a shared core), which is
less than an ingest node can apply, so a capacity benchmark cannot drive a node with it directly.
:func:`record` subscribes to the fake venue's diff streams, takes a REST snapshot of every book,
then has the venue burst ``frames`` updates per book and keeps every frame as the venue wrote it.
:class:`ReplayVenue` speaks the same Binance spot protocol to an ingest node (exchangeInfo, depth
snapshots, ``SUBSCRIBE`` on ``/ws`` or the combined ``/stream``) and sends the recorded frames
when the benchmark says so: first one frame per book (``prime``: each book syncs on it), then all
the rest, books interleaved, as fast as the socket takes them (``blast``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import aiohttp
import orjson
from aiohttp import web

_RECORD_CHUNK = 100
"""Updates per book per burst while recording (one burst blocks the venue while it is made)."""


@dataclass
class Recording:
    exchange_info: bytes
    snapshots: dict[str, dict[str, object]]
    frames: dict[str, list[str]]
    """Per symbol, every frame in the venue's order; the first continues its snapshot."""

    def last_update_id(self, symbol: str) -> int:
        return int(orjson.loads(self.frames[symbol][-1])["u"])

    def levels_per_frame(self) -> float:
        """Price levels an average frame changes (what a book update costs depends on it)."""
        frames = [orjson.loads(f) for fs in self.frames.values() for f in fs]
        return sum(len(f["b"]) + len(f["a"]) for f in frames) / max(1, len(frames))


async def record(
    http: aiohttp.ClientSession, venue_url: str, symbols: Sequence[str], frames: int, limit: int = 1000
) -> Recording:
    """Snapshots of ``symbols`` (``limit`` levels a side) and ``frames`` diff frames of each, from a
    quiet fake venue."""
    async with http.get(f"{venue_url}/api/v3/exchangeInfo") as response:
        exchange_info = await response.read()
    recorded: dict[str, list[str]] = {s: [] for s in symbols}
    streams = {f"{s.lower()}@depth@100ms": s for s in symbols}
    async with http.ws_connect(venue_url.replace("http", "ws", 1) + "/ws", max_msg_size=0) as ws:
        await ws.send_str(orjson.dumps({"method": "SUBSCRIBE", "params": list(streams), "id": 1}).decode())
        await ws.receive()  # the acknowledgement
        snapshots = {}
        if limit > 1000:  # 50 books of 5000 levels cost 12 500 weight: more than a minute's 6000
            weight = {"action": "weight_limit", "venue": "spot", "limit": 10**9}
            async with http.post(f"{venue_url}/_fake/control", json=weight) as r:
                r.raise_for_status()
        for symbol in symbols:
            async with http.get(
                f"{venue_url}/api/v3/depth", params={"symbol": symbol, "limit": str(limit)}
            ) as r:
                r.raise_for_status()
                snapshots[symbol] = orjson.loads(await r.read())
        received = 0
        for start in range(0, frames, _RECORD_CHUNK):
            body = {"action": "burst", "venue": "spot", "count": min(_RECORD_CHUNK, frames - start)}
            async with http.post(f"{venue_url}/_fake/control", json=body) as r:
                r.raise_for_status()
            while received < min(frames, start + _RECORD_CHUNK) * len(symbols):
                message = await ws.receive()
                recorded[orjson.loads(message.data)["s"]].append(message.data)
                received += 1
    return Recording(exchange_info, snapshots, recorded)


@dataclass
class ReplayVenue:
    """Serves a :class:`Recording` to ingest nodes; one node connection at a time."""

    recording: Recording
    url: str = ""
    _sockets: list[tuple[web.WebSocketResponse, bool, asyncio.WriteTransport]] = field(default_factory=list)
    _blast: tuple[int, bytes] = (0, b"")
    _subscribed: set[str] = field(default_factory=set)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    _runner: web.AppRunner | None = None

    async def start(self) -> str:
        app = web.Application()
        app.router.add_get("/api/v3/exchangeInfo", self._exchange_info)
        app.router.add_get("/api/v3/depth", self._depth)
        app.router.add_get("/ws", self._ws)
        app.router.add_get("/stream", self._ws)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self.url

    async def stop(self) -> None:
        for ws, _, _ in self._sockets:
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def reset(self) -> None:
        """Forget the subscriptions of a node that went away."""
        self._subscribed.clear()

    async def wait_subscribed(self, count: int, timeout_s: float = 60.0) -> None:
        async with asyncio.timeout(timeout_s):
            while len(self._subscribed) < count:
                self._changed.clear()
                await self._changed.wait()

    async def prime(self) -> int:
        """Send each subscribed book its first frame and line the rest up; returns how many were sent."""
        ws, combined, _ = self._sockets[-1]
        queues = [
            [self._framed(s, f, combined) for f in self.recording.frames[s]] for s in sorted(self._subscribed)
        ]
        for queue in queues:
            await ws.send_str(queue[0])
        lined_up = [q[i] for i in range(1, max(map(len, queues))) for q in queues if i < len(q)]
        self._blast = (len(lined_up), b"".join(_text_frame(frame.encode()) for frame in lined_up))
        return len(queues)

    async def blast(self) -> int:
        """Every frame :meth:`prime` lined up, books interleaved, in one write: as fast as TCP drains.

        The frames are encoded beforehand and handed to the connection's transport at once, so the
        sender costs next to nothing while the node works.
        """
        _, _, transport = self._sockets[-1]
        count, blob = self._blast
        transport.write(blob)
        while transport.get_write_buffer_size():  # noqa: ASYNC110 - a bare transport has no drain()
            await asyncio.sleep(0.01)
        return count

    @staticmethod
    def _framed(symbol: str, frame: str, combined: bool) -> str:
        return f'{{"stream":"{symbol.lower()}@depth@100ms","data":{frame}}}' if combined else frame

    async def _exchange_info(self, _request: web.Request) -> web.Response:
        return web.Response(body=self.recording.exchange_info, content_type="application/json")

    async def _depth(self, request: web.Request) -> web.Response:
        snapshot = self.recording.snapshots[request.query["symbol"]]
        limit = int(request.query.get("limit", "100"))
        trimmed = {**snapshot, "bids": snapshot["bids"][:limit], "asks": snapshot["asks"][:limit]}  # type: ignore[index]
        return web.Response(body=orjson.dumps(trimmed), content_type="application/json")

    async def _ws(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True, max_msg_size=0)
        await ws.prepare(request)
        assert request.transport is not None
        # uvloop's transports are not asyncio.Transport subclasses, but have the same methods.
        entry = (ws, request.path == "/stream", cast(asyncio.WriteTransport, request.transport))
        self._sockets.append(entry)
        with contextlib.suppress(asyncio.CancelledError):
            async for message in ws:
                command = orjson.loads(message.data)
                names = {p.split("@", 1)[0].upper() for p in command.get("params", [])}
                if command.get("method") == "SUBSCRIBE":
                    self._subscribed |= names
                elif command.get("method") == "UNSUBSCRIBE":
                    self._subscribed -= names
                await ws.send_str(orjson.dumps({"result": None, "id": command.get("id")}).decode())
                self._changed.set()
        self._sockets.remove(entry)
        return ws


def _text_frame(payload: bytes) -> bytes:
    """One unmasked, unfragmented WebSocket text frame (RFC 6455 5.2), as a server sends it."""
    size = len(payload)
    if size < 126:
        header = bytes((0x81, size))
    elif size < 1 << 16:
        header = bytes((0x81, 126)) + size.to_bytes(2, "big")
    else:
        header = bytes((0x81, 127)) + size.to_bytes(8, "big")
    return header + payload
