"""The embedded Valkey server as ``ladder up`` runs it: private, password-protected, restartable."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from book_store.connect import redacted
from ladder_process.embedded_valkey import READY_KEY, EmbeddedValkey, free_port, store_url

PASSWORD = "s3cret-for-tests_0123456789abcdef"


def modes(directory: Path) -> dict[str, int]:
    """Every path under ``directory`` (itself included) and its permission bits."""
    return {
        str(p.relative_to(directory)): stat.S_IMODE(p.stat().st_mode)
        for p in [directory, *directory.rglob("*")]
    }


def test_a_persistent_server_is_private_and_keeps_its_data(tmp_path: Path) -> None:
    data = tmp_path / "valkey"
    data.mkdir(mode=0o755)
    (data / "old-world-readable.aof").write_text("")
    (data / "old-world-readable.aof").chmod(0o644)
    port = free_port()
    server = EmbeddedValkey(data, port=port, password=PASSWORD)
    server.start()
    try:
        assert server.display_url == f"redis://127.0.0.1:{port}/0" and PASSWORD not in server.display_url
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port).ping()
        client = redis.Redis.from_url(server.url)
        client.set("tenant", "acme")
        assert PASSWORD.encode() not in Path(f"/proc/{server.pid}/cmdline").read_bytes()  # ps shows argv
        for name, mode in modes(data).items():
            assert mode & 0o077 == 0, f"{name} is {oct(mode)}"
        assert any(name.endswith(".aof") for name in modes(data))
        client.close()
    finally:
        server.stop()

    # Restarted on the same port with the same directory: the data is back.
    again = EmbeddedValkey(data, port=port, password=PASSWORD)
    again.start()
    try:
        client = redis.Redis.from_url(again.url)
        assert client.get("tenant") == b"acme"
        client.close()
    finally:
        again.stop()


def test_a_volatile_server_keeps_nothing_on_disk(tmp_path: Path) -> None:
    server = EmbeddedValkey(tmp_path, password=PASSWORD, persistent=False)
    server.start()
    try:
        client = redis.Redis.from_url(server.url)
        client.hset("ladder:{binance.com|ETHBTC}:snap", "0", b"x" * 10_000)
        assert client.config_get("appendonly") == {"appendonly": "no"}
        client.close()
    finally:
        server.stop()
    assert sorted(modes(tmp_path)) == [".", "valkey.conf", "valkey.log"]


def test_the_foreground_server_exits_when_its_store_dies(tmp_path: Path) -> None:
    """A supervisor restarts what exits: the wrapper must not outlive the server it stands for."""
    password_file = tmp_path / "password"
    password_file.write_text(PASSWORD)
    port = free_port()
    args = [str(tmp_path / "data"), "--port", str(port), "--password-file", str(password_file)]
    wrapper = subprocess.Popen(
        [sys.executable, "-m", "ladder_process.embedded_valkey", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert wrapper.stdout is not None
        assert wrapper.stdout.readline().strip() == f"{READY_KEY}={store_url('127.0.0.1', port)}"
        pid = int(subprocess.run(["pgrep", "-P", str(wrapper.pid)], capture_output=True, text=True).stdout)
        os.kill(pid, signal.SIGKILL)
        assert wrapper.wait(10) == 1
        assert wrapper.stderr is not None and "exited on its own" in wrapper.stderr.read()
    finally:
        if wrapper.poll() is None:
            wrapper.kill()
            wrapper.wait()


def test_the_foreground_server_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    wrapper = subprocess.Popen(
        [sys.executable, "-m", "ladder_process.embedded_valkey", str(tmp_path), "--volatile"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert wrapper.stdout is not None and wrapper.stdout.readline().startswith(f"{READY_KEY}=")
    started = time.monotonic()
    wrapper.send_signal(signal.SIGTERM)
    assert wrapper.wait(10) == 0 and time.monotonic() - started < 5


def test_urls_are_redacted_for_printing() -> None:
    assert redacted(store_url("127.0.0.1", 6379, PASSWORD)) == "redis://:***@127.0.0.1:6379/0"
    assert redacted("rediss://default:tok@cache.aws:6379/0") == "rediss://default:***@cache.aws:6379/0"
    assert redacted("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
