"""A recorded venue: diff frames and snapshots taken from the fake venue once, served again at full speed.

The fake venue makes each update as it goes (a few thousand per second on a shared core), which is
less than an ingest node can apply, so a capacity benchmark cannot drive a node with it directly.
:func:`record` subscribes to the fake venue's diff streams, takes a REST snapshot of every book,
then has the venue burst ``frames`` updates per book and keeps every frame as the venue wrote it.
:class:`ReplayVenue` speaks the same Binance spot protocol to an ingest node (exchangeInfo, depth
snapshots, ``SUBSCRIBE`` on ``/ws`` or the combined ``/stream``) and sends the recorded frames
when the benchmark says so: first one frame per book (``prime``: each book syncs on it), then all
the rest, books interleaved, as fast as the socket takes them (``blast``).

A real venue's diff stream sends one frame per book per 100 ms carrying every change of that window
(tens of levels for a busy market), where the fake venue writes a frame per update (a few levels).
:func:`conflate` merges consecutive frames of a book the way the venue's 100 ms window does: the
first ``U``, the last ``u`` and ``E``, each level at its last quantity. A recording can be kept in
a file (:meth:`Recording.save`, :meth:`Recording.load`), so that runs compared with each other
(before and after a change, or under valgrind) replay the very same frames.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

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

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        body = {
            "exchange_info": self.exchange_info.decode(),
            "snapshots": self.snapshots,
            "frames": self.frames,
        }
        path.write_bytes(orjson.dumps(body))

    @classmethod
    def load(cls, path: Path) -> Recording:
        body = orjson.loads(path.read_bytes())
        return cls(body["exchange_info"].encode(), body["snapshots"], body["frames"])


def conflate(recording: Recording, window: int) -> Recording:
    """The recording with every ``window`` consecutive frames of a book merged into one, as a venue's
    100 ms diff stream merges every change of its window (the first frame, which continues the
    snapshot, stays alone: a book syncs on it)."""
    if window <= 1:
        return recording
    frames: dict[str, list[str]] = {}
    for symbol, recorded in recording.frames.items():
        merged = recorded[:1]
        for start in range(1, len(recorded), window):
            merged.append(_merge([orjson.loads(f) for f in recorded[start : start + window]]))
        frames[symbol] = merged
    return Recording(recording.exchange_info, recording.snapshots, frames)


def _merge(events: list[dict[str, Any]]) -> str:
    """One depth event carrying every change of ``events`` (consecutive, of one book)."""
    bids: dict[str, str] = {}
    asks: dict[str, str] = {}
    for event in events:
        bids.update((price, qty) for price, qty in event["b"])
        asks.update((price, qty) for price, qty in event["a"])
    last = events[-1]
    merged = {"e": "depthUpdate", "E": last["E"], "s": last["s"], "U": events[0]["U"], "u": last["u"],
              "b": [list(b) for b in bids.items()], "a": [list(a) for a in asks.items()]}  # fmt: skip
    return orjson.dumps(merged).decode()


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
        # 50 books of 5000 levels cost 12 500 weight, 500 of 1000 levels 25 000: more than a minute's 6000
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
class _Socket:
    """One node connection: its WebSocket, its transport, the books it subscribed."""

    ws: web.WebSocketResponse
    combined: bool
    transport: asyncio.WriteTransport
    subscribed: set[str] = field(default_factory=set)
    rounds: list[bytes] = field(default_factory=list)
    """The lined-up frames, one round per frame of each book (books interleaved), encoded."""


@dataclass
class ReplayVenue:
    """Serves a :class:`Recording` to one ingest node, over as many connections as it opens."""

    recording: Recording
    url: str = ""
    _sockets: list[_Socket] = field(default_factory=list)
    _lined_up: int = 0
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
        for socket in self._sockets:
            await socket.ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def reset(self) -> None:
        """Forget the subscriptions of a node that went away."""
        for socket in self._sockets:
            socket.subscribed.clear()

    @property
    def subscribed(self) -> int:
        return sum(len(socket.subscribed) for socket in self._sockets)

    async def wait_subscribed(self, count: int, timeout_s: float = 60.0) -> None:
        async with asyncio.timeout(timeout_s):
            while self.subscribed < count:
                self._changed.clear()
                await self._changed.wait()

    async def prime(self) -> int:
        """Send each subscribed book its first frame and line the rest up; returns how many were sent."""
        primed = 0
        self._lined_up = 0
        for socket in self._sockets:
            queues = [
                [self._framed(s, f, socket.combined) for f in self.recording.frames[s]]
                for s in sorted(socket.subscribed)
            ]
            for queue in queues:
                await socket.ws.send_str(queue[0])
            primed += len(queues)
            socket.rounds = [
                b"".join(_text_frame(q[i].encode()) for q in queues if i < len(q))
                for i in range(1, max(map(len, queues), default=0))
            ]
            self._lined_up += sum(len(q) - 1 for q in queues)
        return primed

    async def blast(self, rounds_per_s: float | None = None) -> int:
        """Every frame :meth:`prime` lined up, books interleaved: all at once, as fast as TCP
        drains, or a round (one frame of each book) every ``1 / rounds_per_s`` seconds, as a venue
        sends a busy book's frame every 100 ms.

        The frames are encoded beforehand and handed to each connection's transport as they are,
        so the sender costs next to nothing while the node works.
        """
        loop = asyncio.get_running_loop()
        if rounds_per_s is None:
            for socket in self._sockets:
                socket.transport.write(b"".join(socket.rounds))
        else:
            started = loop.time()
            for i in range(max((len(socket.rounds) for socket in self._sockets), default=0)):
                await asyncio.sleep(max(0.0, started + i / rounds_per_s - loop.time()))
                for socket in self._sockets:
                    if i < len(socket.rounds):
                        socket.transport.write(socket.rounds[i])
        while any(socket.transport.get_write_buffer_size() for socket in self._sockets):  # noqa: ASYNC110
            await asyncio.sleep(0.01)  # a bare transport has no drain()
        return self._lined_up

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
        socket = _Socket(ws, request.path == "/stream", cast(asyncio.WriteTransport, request.transport))
        self._sockets.append(socket)
        with contextlib.suppress(asyncio.CancelledError):
            async for message in ws:
                command = orjson.loads(message.data)
                names = {p.split("@", 1)[0].upper() for p in command.get("params", [])}
                if command.get("method") == "SUBSCRIBE":
                    socket.subscribed |= names
                elif command.get("method") == "UNSUBSCRIBE":
                    socket.subscribed -= names
                await ws.send_str(orjson.dumps({"result": None, "id": command.get("id")}).decode())
                self._changed.set()
        self._sockets.remove(socket)
        self._changed.set()
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
