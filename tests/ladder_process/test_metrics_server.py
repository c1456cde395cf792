"""The small server of ingest nodes and the control plane: ``/livez`` and ``/readyz`` beside
``/metrics``, answered from a thread of their own while the process's event loop is blocked."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx

from ladder_process.health import Check, ReadinessSlot
from ladder_process.metrics_server import ROUTES, MetricsSettings, serve_metrics


def probe(url: str) -> tuple[int, dict[str, Any]]:
    """GET ``url`` from the calling thread: (status, JSON body)."""
    response = httpx.get(url, timeout=5)
    return response.status_code, response.json()


class Switch:
    """A component whose one condition the test turns on and off."""

    def __init__(self) -> None:
        self.ok = False

    def readiness(self) -> list[Check]:
        return [Check("switch", self.ok, "on" if self.ok else "off")]


async def test_readyz_is_503_until_the_component_exists_and_says_it_is_ready() -> None:
    slot = ReadinessSlot()
    async with serve_metrics(lambda: b"ladder_up 1\n", slot, MetricsSettings(metrics_port=0)) as url:
        assert url is not None
        base = url.removesuffix("/metrics")
        status, body = await asyncio.to_thread(probe, f"{base}/readyz")
        assert (status, body["status"]) == (503, "not_ready")
        assert body["checks"] == {"started": {"ok": False, "detail": "the process is starting"}}
        switch = Switch()
        slot.fill(switch)
        status, body = await asyncio.to_thread(probe, f"{base}/readyz")
        assert (status, body["checks"]["switch"]) == (503, {"ok": False, "detail": "off"})
        switch.ok = True
        status, body = await asyncio.to_thread(probe, f"{base}/readyz")
        assert (status, body) == (
            200,
            {"status": "ready", "checks": {"switch": {"ok": True, "detail": "on"}}},
        )
        status, body = await asyncio.to_thread(probe, f"{base}/livez")
        assert (status, body["status"]) == (200, "ok")
        async with httpx.AsyncClient() as http:
            served = {path: (await http.get(base + path)).status_code for path in ROUTES}
            assert (await http.get(f"{base}/healthz")).status_code == 404
        assert served == {"/metrics": 200, "/livez": 200, "/readyz": 200}


async def test_livez_and_readyz_fail_while_the_event_loop_is_blocked_longer_than_the_bound() -> None:
    switch = Switch()
    switch.ok = True
    settings = MetricsSettings(metrics_port=0, max_loop_block_s=0.3)
    async with serve_metrics(lambda: b"", switch, settings) as url:
        assert url is not None
        base = url.removesuffix("/metrics")
        seen: dict[str, tuple[int, dict[str, Any]]] = {}

        def probe_while_blocked() -> None:
            time.sleep(0.8)
            seen["livez"] = probe(f"{base}/livez")
            seen["readyz"] = probe(f"{base}/readyz")

        prober = threading.Thread(target=probe_while_blocked)
        prober.start()
        time.sleep(1.5)  # noqa: ASYNC251 - the process's event loop (this test's) is blocked for 1.5 s
        await asyncio.to_thread(prober.join)

        status, body = seen["livez"]
        assert (status, body["status"], body["max_block_s"]) == (503, "blocked", 0.3)
        assert body["blocked_s"] > 0.3
        status, body = seen["readyz"]
        assert (status, body["checks"]["event_loop"]["ok"]) == (503, False)
        await asyncio.sleep(0.2)  # the loop turns again: the watch stamps it
        assert (await asyncio.to_thread(probe, f"{base}/livez"))[0] == 200
        assert (await asyncio.to_thread(probe, f"{base}/readyz"))[0] == 200


async def test_a_loop_blocked_for_less_than_the_bound_stays_live() -> None:
    switch = Switch()
    settings = MetricsSettings(metrics_port=0, max_loop_block_s=2.0)
    async with serve_metrics(lambda: b"", switch, settings) as url:
        assert url is not None
        seen: list[int] = []
        livez = url.removesuffix("/metrics") + "/livez"

        def probe_while_blocked() -> None:
            time.sleep(0.3)
            seen.append(probe(livez)[0])

        prober = threading.Thread(target=probe_while_blocked)
        prober.start()
        time.sleep(0.8)  # noqa: ASYNC251 - blocked for less than the bound
        await asyncio.to_thread(prober.join)
        assert seen == [200]
