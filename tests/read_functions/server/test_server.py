"""``python -m read_functions``: several workers, HTTPS with a private CA, the compat listener, SIGTERM."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import orjson
import pytest
import trustme

from book_store.catalog import MarketCatalog
from book_store.connect import opened, store_client
from book_store.writer import BookWriter
from ladder_process.embedded_valkey import EmbeddedValkey
from read_functions.server.huge_pages import TUNABLE
from tests.read_functions.helpers import (
    ADMIN_KEY,
    ETH,
    MARKETS,
    PEPPER,
    ServerProcess,
    machine_has_huge_pages,
    process_tunables,
    snapshot,
)
from tests.stores import TestStore

SERVER_DB = 4


@pytest.fixture
def tls_files(tmp_path: Path) -> tuple[trustme.CA, Path, Path]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    chain, key = tmp_path / "chain.pem", tmp_path / "key.pem"
    cert.private_key_pem.write_to_path(key)
    chain.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    return ca, chain, key


@pytest.fixture
def server_env(test_store: TestStore) -> Iterator[dict[str, str]]:
    url = test_store.database(SERVER_DB)
    test_store.flush(url)
    yield {"LADDER_REDIS_URL": url, "LADDER_ADMIN_KEY": ADMIN_KEY, "LADDER_PEPPER": PEPPER}


async def publish_eth(redis_url: str) -> None:
    """ETHBTC in the catalog with one synced snapshot, as an ingest node would leave it."""
    store = await opened(store_client(redis_url, cluster=None))
    await MarketCatalog(store).replace("binance.com", [m for m in MARKETS if m.market == ETH.market])
    writer = BookWriter(store)
    writer.put(ETH, 0, snapshot(7))
    await writer.drain()
    await store.aclose()


async def test_two_workers_over_https_with_compat(
    tls_files: tuple[trustme.CA, Path, Path], server_env: dict[str, str]
) -> None:
    ca, chain, key = tls_files
    server = await asyncio.to_thread(
        ServerProcess,
        [
            "--workers",
            "2",
            "--tls-cert",
            str(chain),
            "--tls-key",
            str(key),
            "--compat-port",
            "0",
            "--compat-tenant",
            "ubdcc-users",
        ],
        server_env,
    )
    try:
        if machine_has_huge_pages():  # the server re-executed itself with huge pages for its heap
            assert process_tunables(server.proc.pid) == [f"GLIBC_TUNABLES={TUNABLE}".encode()]
        assert server.url.startswith("https://127.0.0.1:")
        assert server.urls["LADDER_COMPAT_URL"].startswith("https://127.0.0.1:")
        client_tls = ssl.create_default_context()
        ca.configure_trust(client_tls)
        workers = set()
        for _ in range(24):  # a new connection each time: SO_REUSEPORT spreads them over the workers
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"{server.url}/healthz", ssl=client_tls) as r,
            ):
                assert r.status == 200
                workers.add(r.headers["X-Request-ID"].split("-")[0][8:])  # the worker's pid, in hex
        assert len(workers) == 2
        async with aiohttp.ClientSession() as http:
            async with http.get(
                f"{server.urls['LADDER_COMPAT_URL']}/get_depthcache_list", ssl=client_tls
            ) as r:
                assert (await r.json())["result"] == "OK"
            admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
            async with http.get(f"{server.url}/v1/admin/tenants", ssl=client_tls, headers=admin) as r:
                assert [t["name"] for t in (await r.json())["tenants"]] == ["ubdcc-users"]
            # a WebSocket upgrade is handed from Ladder's protocol to aiohttp's on the TLS transport
            await publish_eth(server_env["LADDER_REDIS_URL"])
            stream = f"{server.url}/v1/stream?exchange=binance.com&market=ETHBTC&depth=1"
            async with http.ws_connect(stream, ssl=client_tls, headers=admin) as socket:
                message = await asyncio.wait_for(socket.receive(), 5)
                assert message.type is aiohttp.WSMsgType.TEXT, message
                assert orjson.loads(message.data)["update_id"] == 7
            with pytest.raises(aiohttp.ClientError):
                await http.get(server.url.replace("https", "http") + "/healthz")
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await http.get(f"{server.url}/healthz")  # the private CA is not trusted by default
    finally:
        assert await asyncio.to_thread(server.stop) == 0


def test_a_missing_setting_is_named(server_env: dict[str, str]) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_")}
    done = subprocess.run(
        [sys.executable, "-m", "read_functions", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "LADDER_REDIS_URL: is missing" in done.stderr


def test_keyless_compat_changes_are_refused_off_loopback(server_env: dict[str, str]) -> None:
    import os
    import subprocess
    import sys

    args = ["--port", "0", "--compat-port", "0", "--compat-host", "0.0.0.0", "--compat-keyless-changes"]
    done = subprocess.run(
        [sys.executable, "-m", "read_functions", *args],
        env={**os.environ, **server_env, "LADDER_HUGE_PAGES": "false"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "only on a loopback listener" in done.stderr


@pytest.mark.skipif(not machine_has_huge_pages(), reason="this kernel offers no transparent huge pages")
def test_huge_pages_can_be_turned_off(server_env: dict[str, str]) -> None:
    server = ServerProcess([], {**server_env, "LADDER_HUGE_PAGES": "false"})
    try:
        assert process_tunables(server.proc.pid) == []
    finally:
        assert server.stop() == 0


def test_workers_whose_store_is_gone_leave_at_once() -> None:
    """SIGTERM with the store stopped: what the workers would flush on the way out cannot be, and
    the server still exits within seconds, with its normal status."""
    store = EmbeddedValkey()
    store.start()
    server = ServerProcess(
        ["--workers", "2"],
        {"LADDER_REDIS_URL": store.url, "LADDER_ADMIN_KEY": ADMIN_KEY, "LADDER_PEPPER": PEPPER},
    )
    try:
        store.stop()
        assert server.stop(timeout_s=3.0) == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
        store.stop()
