"""``ladder ingest`` (``python -m ingest_nodes``): run one ingest node.

SIGTERM (what ECS and Kubernetes send) drains: the node's replicas move to other nodes before it
leaves. SIGINT (Ctrl-C, or ``ladder up`` stopping the whole stack) leaves at once.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal

import aiohttp

from book_store.connect import opened, store_client
from ingest_nodes.core import native
from ingest_nodes.ops.telemetry import IngestTelemetry
from ingest_nodes.runtime.node import IngestNode
from ingest_nodes.settings import IngestSettings
from ladder_process.cli import HelpFormatter
from ladder_process.health import ReadinessSlot
from ladder_process.heap import freeze_survivors
from ladder_process.metrics_server import serve_metrics
from ladder_process.redaction import install_log_redaction, secrets_of
from ladder_process.telemetry.setup import Telemetry

HEAP_ROUND_S = 10.0
"""A node's heap rounds (:func:`~ladder_process.heap.freeze_survivors`): what lives long here is
the latest venue event a shadow book holds for its refresh, replaced at each event, so a round walks
about as much every 10 s as every second, ten times less often."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="ladder ingest", description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument(
        "--node-id", help="this node's id (overrides LADDER_NODE_ID; default: a new one per process)"
    )
    parser.add_argument("--log-level", default="INFO", help="logging level: DEBUG, INFO, WARNING, ERROR")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s ingest %(levelname)s %(name)s: %(message)s")
    overrides = {"node_id": args.node_id} if args.node_id else {}
    settings = IngestSettings(**overrides)  # the rest comes from LADDER_*
    install_log_redaction(*secrets_of(settings))
    logging.getLogger("ingest_nodes").info("book store: %s", native.describe())
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - uvloop is a dependency where it builds
        pass
    asyncio.run(_serve(settings))


async def _serve(settings: IngestSettings) -> None:
    stop = asyncio.Event()
    drain = True
    loop = asyncio.get_running_loop()

    def stop_now() -> None:
        nonlocal drain
        drain = False
        stop.set()

    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop_now)
    node_ids = {"service.instance.id": settings.node_id, "ladder.node_id": settings.node_id}
    pipeline = Telemetry.from_env("ladder-ingest", resource_attributes=node_ids)
    ready = ReadinessSlot()
    # The probes answer from the start: a node waiting for its store is alive, and not ready.
    async with serve_metrics(pipeline.render_prometheus, ready):
        client = await opened(
            store_client(settings.redis_url, settings.redis_password, cluster=settings.redis_cluster)
        )
        control = client
        if settings.control_redis_url:
            control = await opened(
                store_client(settings.control_redis_url, settings.redis_password, cluster=None)
            )
        async with aiohttp.ClientSession() as session:
            ingest_telemetry = IngestTelemetry(pipeline)
            node = IngestNode(settings, client, session, control_client=control, telemetry=ingest_telemetry)
            ready.fill(node)
            print(f"LADDER_INGEST_NODE={settings.node_id}", flush=True)
            gc.freeze()  # what exists now lives as long as the node: keep it out of every collection
            heap = loop.create_task(freeze_survivors(HEAP_ROUND_S))
            try:
                await node.run(stop, drain=lambda: drain)
            finally:
                heap.cancel()
        await client.aclose()
        if control is not client:
            await control.aclose()
    pipeline.shutdown()


if __name__ == "__main__":
    main()
