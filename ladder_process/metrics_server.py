"""``GET /metrics`` for the processes that serve no HTTP of their own (ingest nodes, control plane).

Off unless ``LADDER_METRICS_PORT`` is set (0 picks a free port). It listens on
``LADDER_METRICS_HOST`` (default loopback: metrics name markets and nodes, so exposing them is a
deliberate choice) and prints ``LADDER_METRICS_URL=...`` once it is listening. Several processes
on one machine need one port each (or 0); a port already taken is logged, and the process runs on
without the endpoint.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from aiohttp import web
from pydantic_settings import BaseSettings, SettingsConfigDict

from ladder_process.prometheus import CONTENT_TYPE

log = logging.getLogger(__name__)


class MetricsSettings(BaseSettings):
    """Where the metrics endpoint listens; ``metrics_port=None`` means no endpoint."""

    model_config = SettingsConfigDict(env_prefix="LADDER_", frozen=True, extra="ignore")

    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"


@asynccontextmanager
async def serve_metrics(
    render: Callable[[], bytes], settings: MetricsSettings | None = None
) -> AsyncIterator[str | None]:
    """Serve ``render()`` at ``/metrics`` while the block runs; yields its URL (None when off)."""
    settings = settings or MetricsSettings()
    if settings.metrics_port is None:
        yield None
        return

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(body=render(), headers={"Content-Type": CONTENT_TYPE})

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, settings.metrics_host, settings.metrics_port)
        try:
            await site.start()
        except OSError as exc:  # a taken port must not take the process down with it
            log.error("metrics endpoint not started on port %s: %s", settings.metrics_port, exc)
            yield None
            return
        host, port = runner.addresses[0][:2]
        url = f"http://{host}:{port}/metrics"
        print(f"LADDER_METRICS_URL={url}", flush=True)
        yield url
    finally:
        await runner.cleanup()
