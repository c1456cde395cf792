"""``ladder ingest`` and ``ladder control`` answer ``/livez`` and ``/readyz`` as a Kubernetes probe
sees them: real processes, started as production starts them, their store reached through a proxy
the test partitions (the store down), from before they could register until they are ready again.
A blocked event loop is shown against the same server in tests/ladder_process/test_metrics_server.py
(no process can be made to block its loop from outside)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from ladder_cli.supervisor import Child, child_env
from tests.e2e.tcp_proxy import CuttableProxy

pytestmark = [
    pytest.mark.slow,
    pytest.mark.single_store(
        "partitions the store through a proxy in front of one node (a cluster client connects to "
        "every primary past it)"
    ),
]

TIMEOUT_S = 20.0


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Process:
    """One component process with its probe server on a free port."""

    def __init__(self, name: str, module: str, env: dict[str, str], log_dir: Path) -> None:
        settings = {"LADDER_METRICS_PORT": "0", "LADDER_REDIS_CLUSTER": "false", **env}
        self.child = Child(
            name, [module], child_env(**settings), "LADDER_METRICS_URL", log_dir / f"{name}.log"
        )
        self.child.start()
        self.base = self.child.wait_ready(TIMEOUT_S).removesuffix("/metrics")

    def probe(self, path: str) -> tuple[int, dict[str, Any]]:
        response = httpx.get(self.base + path, timeout=5)
        return response.status_code, response.json()

    def wait_for(
        self, path: str, status: int, what: str, holds: Callable[[dict[str, Any]], bool] = lambda _: True
    ) -> dict[str, Any]:
        """The body of ``path`` once it answers ``status`` with a body that ``holds``."""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            answer, body = self.probe(path)
            if answer == status and holds(body):
                return body
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.child.name}: {path} never {status} ({what}); last {answer} {body}"
                )
            time.sleep(0.1)

    def stop(self) -> None:
        self.child.terminate()
        self.child.wait(15)


@pytest.fixture
def store(clean_redis_url: str) -> Iterator[tuple[CuttableProxy, str]]:
    """A proxy in front of an empty database, and the URL that leads through it."""
    proxy = CuttableProxy("127.0.0.1", urlsplit(clean_redis_url).port or 0)
    yield proxy, proxy.url(clean_redis_url)
    proxy.close()


def test_an_ingest_node_is_live_at_once_and_ready_only_while_registered(
    store: tuple[CuttableProxy, str], tmp_path: Path
) -> None:
    proxy, url = store
    nowhere = f"127.0.0.1:{unused_port()}"  # the node has no books; its catalog refresh goes nowhere
    env = {
        "LADDER_REDIS_URL": url,
        "LADDER_NODE_ID": "probed-node",
        "LADDER_NODE_TIMEOUT_MS": "2000",
        "LADDER_HEARTBEAT_MS": "200",
        "LADDER_EXCHANGES": "binance.com",
        "LADDER_BINANCE_SPOT_REST_URL": f"http://{nowhere}",
        "LADDER_BINANCE_SPOT_WS_URL": f"ws://{nowhere}",
    }
    proxy.partition()  # the store does not answer when the node starts
    node = Process("ingest", "ingest_nodes", env, tmp_path)
    try:
        assert node.probe("/livez")[0] == 200
        body = node.wait_for(
            "/readyz",
            503,
            "not registered",
            lambda b: "does not answer" in b["checks"]["registered"]["detail"],
        )
        assert body["status"] == "not_ready" and body["checks"]["registered"]["ok"] is False

        proxy.heal()
        body = node.wait_for("/readyz", 200, "registered")
        assert body["checks"] == {
            "registered": body["checks"]["registered"],
            "assignments": {"ok": True, "detail": "0 replicas assigned"},
            "venue:binance.com": {"ok": True, "detail": "no books, no connections"},
        }
        assert body["checks"]["registered"]["ok"]

        proxy.partition()  # the store goes away under a registered node
        body = node.wait_for("/readyz", 503, "cut off from the control store")
        assert "not reached for" in body["checks"]["registered"]["detail"]
        assert node.probe("/livez")[0] == 200
        proxy.heal()
        node.wait_for("/readyz", 200, "back")
    finally:
        node.stop()


def test_the_control_plane_is_ready_as_leader_or_standby_while_it_reaches_the_store(
    store: tuple[CuttableProxy, str], clean_redis_url: str, tmp_path: Path
) -> None:
    proxy, url = store
    env = {"LADDER_NODE_TIMEOUT_MS": "1000", "LADDER_SCHEDULER_INTERVAL_MS": "200"}
    proxy.partition()
    first = Process("control-1", "control_plane", {**env, "LADDER_REDIS_URL": url}, tmp_path)
    second: Process | None = None
    try:
        assert first.probe("/livez")[0] == 200
        body = first.wait_for("/readyz", 503, "no round yet")
        assert body["checks"]["store"] == {"ok": False, "detail": "no scheduling round yet"}

        proxy.heal()
        body = first.wait_for("/readyz", 200, "leader")
        assert body["checks"]["role"]["detail"].startswith("leader")

        second = Process("control-2", "control_plane", {**env, "LADDER_REDIS_URL": clean_redis_url}, tmp_path)
        body = second.wait_for("/readyz", 200, "standby")
        assert body["checks"]["role"]["detail"].startswith("standby")

        proxy.partition()  # the leader's store goes away: it is not ready, the standby takes over
        body = first.wait_for("/readyz", 503, "store unreachable")
        assert not body["checks"]["store"]["ok"] and not body["checks"]["role"]["ok"]
        second.wait_for(
            "/readyz", 200, "took over", lambda b: b["checks"]["role"]["detail"].startswith("leader")
        )
        assert first.probe("/livez")[0] == 200

        proxy.heal()
        body = first.wait_for("/readyz", 200, "back, as standby")
        assert body["checks"]["role"]["detail"].startswith("standby")
    finally:
        first.stop()
        if second is not None:
            second.stop()
