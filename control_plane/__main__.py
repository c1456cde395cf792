"""``ladder control`` (``python -m control_plane``): the replica scheduler loop, and the cluster's
history for the console, until SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal

from book_store.connect import opened, store_client
from book_store.unplaced import UnplacedBooks
from control_plane.errors import ConfigurationError
from control_plane.history import HistorySampler
from control_plane.scheduling.replica_status import BookStoreReplicaStatus
from control_plane.scheduling.runtime import run_control
from control_plane.scheduling.telemetry import ControlTelemetry
from control_plane.settings import ControlSettings
from ladder_process.cli import HelpFormatter
from ladder_process.health import ReadinessSlot
from ladder_process.metrics_server import serve_metrics
from ladder_process.redaction import install_log_redaction, secrets_of
from ladder_process.telemetry.setup import Telemetry


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="ladder control", description=__doc__, formatter_class=HelpFormatter
    )
    parser.add_argument("--log-level", default="INFO", help="logging level: DEBUG, INFO, WARNING, ERROR")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s control %(levelname)s %(name)s: %(message)s"
    )
    settings = ControlSettings()
    install_log_redaction(*secrets_of(settings))
    if not settings.redis_url:
        raise SystemExit(str(ConfigurationError("LADDER_REDIS_URL is missing (replica status lives there)")))
    asyncio.run(_serve(settings, settings.redis_url))


async def _serve(settings: ControlSettings, redis_url: str) -> None:
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    client = await opened(store_client(redis_url, settings.redis_password, cluster=settings.redis_cluster))
    status = BookStoreReplicaStatus(client, max_silence_ms=settings.replica_silence_ms)
    metrics = Telemetry.from_env("ladder-control")
    ready = ReadinessSlot()
    try:
        async with serve_metrics(metrics.render_prometheus, ready):
            rounds = ControlTelemetry(metrics)
            history = asyncio.get_running_loop().create_task(
                HistorySampler(client, interval_s=settings.history_interval_s).run(), name="history"
            )
            try:
                await run_control(
                    settings, status, unplaced=UnplacedBooks(client), telemetry=rounds, ready=ready
                )
            finally:
                history.cancel()
    except asyncio.CancelledError:
        logging.getLogger(__name__).info("stopped")
    finally:
        await client.aclose()
        metrics.shutdown()


if __name__ == "__main__":
    main()
