"""The small HTTP server of the processes that serve no HTTP of their own (ingest nodes, control plane).

Routes: ``GET /metrics`` (Prometheus text), ``GET /livez`` and ``GET /readyz`` (JSON, 200 or 503;
see :mod:`ladder_process.health`). Off unless ``LADDER_METRICS_PORT`` is set (0 picks a free port).
It listens on ``LADDER_METRICS_HOST`` (default loopback: metrics name markets and nodes, so exposing
them is a deliberate choice; a Kubernetes probe needs ``0.0.0.0``) and prints
``LADDER_METRICS_URL=...`` once it is listening. Several processes on one machine need one port each
(or 0); a port already taken is logged, and the process runs on without the endpoint.

The server runs an event loop on a thread of its own, so that it still answers while the process's
loop is blocked: ``/livez`` then says so (503) once the block outlasts ``LADDER_MAX_LOOP_BLOCK_S``.
Rendering the metrics and asking the component whether it is ready happen on the process's loop,
where the state they read lives; a loop that does not get to them in time makes them 503 too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from aiohttp import web
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ladder_process.health import Check, LoopWatch, Readiness
from ladder_process.telemetry.prometheus import CONTENT_TYPE

log = logging.getLogger(__name__)

ROUTES = ("/metrics", "/livez", "/readyz")
"""What the server answers (GET); the Helm chart's probes are checked against this."""
METRICS_TIMEOUT_S = 10.0
"""How long a scrape waits for the process's loop to render (Prometheus's default scrape timeout)."""

_T = TypeVar("_T")


class MetricsSettings(BaseSettings):
    """Where the server listens (``metrics_port=None``: no server), and when a loop counts as stuck."""

    model_config = SettingsConfigDict(env_prefix="LADDER_", frozen=True, extra="ignore")

    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    metrics_host: str = "127.0.0.1"
    max_loop_block_s: float = Field(
        default=5.0, gt=0, description="/livez fails while the event loop is blocked longer than this."
    )


@asynccontextmanager
async def serve_metrics(
    render: Callable[[], bytes], readiness: Readiness, settings: MetricsSettings | None = None
) -> AsyncIterator[str | None]:
    """Serve the routes while the block runs; yields the ``/metrics`` URL (None when off)."""
    settings = settings or MetricsSettings()
    if settings.metrics_port is None:
        yield None
        return
    watch = LoopWatch(settings.max_loop_block_s)
    ticking = asyncio.get_running_loop().create_task(watch.run(), name="loop-watch")
    server = _ServerThread(_app(render, readiness, watch, asyncio.get_running_loop()))
    try:
        try:
            host, port = await asyncio.wrap_future(server.start(settings.metrics_host, settings.metrics_port))
        except OSError as exc:  # a taken port must not take the process down with it
            log.error("metrics endpoint not started on port %s: %s", settings.metrics_port, exc)
            yield None
            return
        url = f"http://{host}:{port}/metrics"
        print(f"LADDER_METRICS_URL={url}", flush=True)
        yield url
    finally:
        ticking.cancel()
        await asyncio.to_thread(server.stop)


def _app(
    render: Callable[[], bytes], readiness: Readiness, watch: LoopWatch, loop: asyncio.AbstractEventLoop
) -> web.Application:
    """The routes, run on the server's thread; what they read of the process, read on ``loop``."""

    async def on_loop(call: Callable[[], _T], timeout_s: float) -> _T:
        async def called() -> _T:
            return call()

        future = asyncio.run_coroutine_threadsafe(called(), loop)
        return await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)

    async def metrics(_request: web.Request) -> web.Response:
        try:
            body = await on_loop(render, METRICS_TIMEOUT_S)
        except TimeoutError:
            blocked = {"status": "blocked", "blocked_s": round(watch.blocked_s(), 3)}
            return web.json_response(blocked, status=503)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def livez(_request: web.Request) -> web.Response:
        blocked_s = round(watch.blocked_s(), 3)
        if watch.blocked:
            answer = {"status": "blocked", "blocked_s": blocked_s, "max_block_s": watch.max_block_s}
            return web.json_response(answer, status=503)
        return web.json_response({"status": "ok", "blocked_s": blocked_s})

    async def readyz(_request: web.Request) -> web.Response:
        unanswered = Check("event_loop", False, f"blocked for {watch.blocked_s():.1f} s")
        checks = [unanswered]
        if not watch.blocked:
            try:
                checks = await on_loop(readiness.readiness, watch.max_block_s)
            except TimeoutError:
                checks = [unanswered]
        ready = all(check.ok for check in checks)
        answer = {
            "status": "ready" if ready else "not_ready",
            "checks": {check.name: {"ok": check.ok, "detail": check.detail} for check in checks},
        }
        return web.json_response(answer, status=200 if ready else 503)

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/livez", livez)
    app.router.add_get("/readyz", readyz)
    return app


class _ServerThread:
    """An aiohttp application served by an event loop on a thread of its own."""

    def __init__(self, app: web.Application) -> None:
        self._app = app
        self._started: concurrent.futures.Future[tuple[str, int]] = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    def start(self, host: str, port: int) -> concurrent.futures.Future[tuple[str, int]]:
        """Start listening; the future gives the bound address, or the OSError of the bind."""
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._serve(host, port),), name="metrics-server", daemon=True
        )
        self._thread.start()
        return self._started

    async def _serve(self, host: str, port: int) -> None:
        runner = web.AppRunner(self._app, access_log=None, handle_signals=False)
        await runner.setup()
        try:
            try:
                await web.TCPSite(runner, host, port).start()
            except OSError as exc:
                self._started.set_exception(exc)
                return
            self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
            bound_host, bound_port = runner.addresses[0][:2]
            self._started.set_result((bound_host, bound_port))
            await self._stopping.wait()
        finally:
            await runner.cleanup()

    def stop(self) -> None:
        """Stop listening and wait for the thread to end (blocking: call it off the process's loop)."""
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join()
