"""``ladder up`` itself: it prints no secret of its stores, restarts a killed store with its data, and
says in one line when the venue is out of reach."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from ladder_cli.main import STORE_PASSWORD_FILE

pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("ladder-up"),
    pytest.mark.single_store("ladder up starts and supervises its own two single-node stores"),
]

ADMIN_KEY = "ldr_admin_up_test_" + "y" * 20


def store_server_pids(data_dir: Path) -> dict[str, int]:
    """``{"valkey": pid, "books": pid}``: the Valkey servers whose data lives under ``data_dir``
    (found through the ``ladder_process.embedded_valkey`` processes that run them: Valkey retitles itself)."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0")]
            if "ladder_process.embedded_valkey" not in argv:
                continue
            children = (proc / "task" / proc.name / "children").read_text().split()
        except OSError:
            continue
        for name in ("valkey", "books"):
            if str(data_dir / name) in argv and children:
                found[name] = int(children[0])
    return found


def ladder_up(args: list[str], data_dir: Path, **env: str) -> tuple[subprocess.Popen[str], list[str], str]:
    """``ladder up ARGS`` with its own data directory, once it says it is up: the process, the lines
    it printed so far (a thread keeps appending), and the API's URL."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_")}
    up = subprocess.Popen(
        [sys.executable, "-m", "ladder_cli.main", "up", *args, "--data-dir", str(data_dir)],
        env=environ | {"LADDER_ADMIN_KEY": ADMIN_KEY, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    try:
        assert up.stdout is not None
        deadline = time.monotonic() + 90
        while not any("Ladder is up" in line for line in output):
            assert time.monotonic() < deadline and up.poll() is None, "".join(output)
            output.append(up.stdout.readline())
    except BaseException:
        stop(up)
        raise
    threading.Thread(target=lambda: output.extend(up.stdout or []), daemon=True).start()
    return up, output, next(line for line in output if "Ladder is up" in line).split()[3]


def stop(up: subprocess.Popen[str]) -> None:
    up.send_signal(signal.SIGINT)
    try:
        up.wait(30)
    except subprocess.TimeoutExpired:
        up.kill()
        up.wait()


def test_ladder_up_hides_the_store_password_and_restarts_a_killed_store(tmp_path: Path) -> None:
    data_dir = tmp_path / "ladder"
    args = ["--venue", "fake", "--ingest-nodes", "1", "--fake-symbols", "2", "--port", "0"]
    up, output, api = ladder_up(args, data_dir)
    try:
        said = [line for line in output if line.startswith("Data directory")]
        assert said == [
            f"Data directory {data_dir}: the control store (tenants, API key hashes, subscriptions, kept "
            "across runs; no tenants yet) and the stores' password. "
            f"`ladder reset --data-dir {data_dir}` starts afresh.\n"
        ], output
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        created = httpx.post(f"{api}/v1/admin/tenants", json={"name": "survivor"}, headers=admin, timeout=10)
        assert created.status_code == 201, created.text

        servers = store_server_pids(data_dir)
        assert servers.keys() == {"valkey", "books"}, servers
        os.kill(servers["valkey"], signal.SIGKILL)
        killed_at = time.monotonic()
        deadline = killed_at + 20
        while True:
            try:
                listed = httpx.get(f"{api}/v1/admin/tenants", headers=admin, timeout=5)
                if listed.status_code == 200 and store_server_pids(data_dir).get("valkey") not in (
                    None,
                    servers["valkey"],
                ):
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the control store did not come back"
            time.sleep(0.2)
        assert [t["name"] for t in listed.json()["tenants"]] == ["survivor"]
        back_s = time.monotonic() - killed_at
        print(f"ladder up: control store killed and back, with its data, in {back_s:.1f} s")
    finally:
        stop(up)
    password = (data_dir / STORE_PASSWORD_FILE).read_text().strip()
    assert len(password) >= 32
    assert password not in "".join(output), "ladder up printed the store password"
    assert not store_server_pids(data_dir), "Ctrl-C stops the stores too"


def test_ladder_up_without_the_venue_says_so_in_one_line_and_answers_503(tmp_path: Path) -> None:
    """The issue's offline `make up`: nothing answers at the venue's address (a closed port here, so
    the test means the same with or without internet)."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        venue = f"http://127.0.0.1:{closed.getsockname()[1]}"
    env = {"LADDER_BINANCE_SPOT_REST_URL": venue, "LADDER_BINANCE_FUTURES_REST_URL": venue}
    up, output, api = ladder_up(["--ingest-nodes", "2", "--port", "0"], tmp_path / "ladder", **env)
    try:
        up_at = time.monotonic()
        while not any("Ladder is NOT ready" in line for line in output):
            assert time.monotonic() - up_at < 10, "".join(output)
            time.sleep(0.1)
        (line,) = [line for line in output if "Ladder is NOT ready" in line]
        assert "binance.com: market list not loaded" in line and "binance.com-futures" in line, line
        assert "cannot connect to 127.0.0.1" in line and "`make demo`" in line, line

        ready = httpx.get(f"{api}/readyz", timeout=5)
        assert ready.status_code == 503 and ready.json()["error"]["code"] == "catalog_unavailable"
        assert ready.json()["exchanges"]["binance.com"]["phase"] == "unavailable"

        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        tenant = httpx.post(f"{api}/v1/admin/tenants", json={"name": "offline"}, headers=admin, timeout=10)
        key = httpx.post(f"{api}/v1/admin/tenants/{tenant.json()['id']}/keys", headers=admin, timeout=10)
        subscribed = httpx.post(
            f"{api}/v1/subscriptions",
            json={"exchange": "binance.com", "market": "ETHBTC"},
            headers={"Authorization": f"Bearer {key.json()['key']}"},
            timeout=10,
        )
        assert subscribed.status_code == 503, subscribed.text
        assert subscribed.json()["error"]["code"] == "catalog_unavailable"
        assert int(subscribed.headers["Retry-After"]) >= 1

        time.sleep(max(0.0, up_at + 25 - time.monotonic()))
        warnings = [line for line in output if " WARNING " in line]
        # Once per exchange and state change, not every 5 s per node and exchange (that was 20 here).
        assert len(warnings) <= 4, "".join(warnings)
    finally:
        stop(up)
