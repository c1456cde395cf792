"""``ladder up`` itself: it prints no secret of its stores, and restarts a killed store with its data."""

from __future__ import annotations

import os
import signal
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


def test_ladder_up_hides_the_store_password_and_restarts_a_killed_store(tmp_path: Path) -> None:
    data_dir = tmp_path / "ladder"
    args = ["up", "--venue", "fake", "--ingest-nodes", "1", "--fake-symbols", "2", "--port", "0"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LADDER_")} | {
        "LADDER_ADMIN_KEY": ADMIN_KEY
    }
    up = subprocess.Popen(
        [sys.executable, "-m", "ladder_cli.main", *args, "--data-dir", str(data_dir)],
        env=env,
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
        threading.Thread(target=lambda: output.extend(up.stdout or []), daemon=True).start()
        api = next(line for line in output if "Ladder is up" in line).split()[3]
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
        up.send_signal(signal.SIGINT)
        try:
            up.wait(30)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
    password = (data_dir / STORE_PASSWORD_FILE).read_text().strip()
    assert len(password) >= 32
    assert password not in "".join(output), "ladder up printed the store password"
    assert not store_server_pids(data_dir), "Ctrl-C stops the stores too"
