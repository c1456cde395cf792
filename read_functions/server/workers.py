"""``python -m read_functions``: the read API as a multi-process server.

Theory of operation
-------------------
The parent process binds every listening socket before it starts any worker, so the port is
known (``--port 0`` picks a free one) and printed once as ``LADDER_READ_URL=...`` when every
worker is serving. On Linux each worker gets its own ``SO_REUSEPORT`` socket on the shared port
and the kernel spreads connections evenly across them; elsewhere the workers share one socket.
Workers are forked, each runs its own event loop (uvloop when available), store connection and
caches, and exits when the parent dies. The parent restarts a worker that dies and forwards
SIGTERM/SIGINT for a clean shutdown (usage counts are flushed on the way out).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import ssl
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.process import BaseProcess

from control_plane.errors import ConfigurationError
from ladder_process.cli import HelpFormatter
from ladder_process.embedded_valkey import die_with_parent
from ladder_process.heap import freeze_survivors
from ladder_process.redaction import install_log_redaction, secrets_of
from read_functions.app.dispatch import reset_request_ids
from read_functions.server.http1 import LISTEN_BACKLOG, Http1Server
from read_functions.server.huge_pages import restart_with_huge_pages
from read_functions.settings import ReadSettings, is_loopback, load_settings
from read_functions.wiring import ReadApp

log = logging.getLogger("read_functions")

_READY_TIMEOUT_S = 60.0
FREEZE_EVERY_S = 30.0
"""A worker's heap rounds (:func:`~ladder_process.heap.freeze_survivors`): every change of a book
replaces its head and rendered views, thousands a second with all of Binance followed. Frequent
rounds walk nearly each of them; a round every 30 s walks the cache that turned over once, one
longer pause that stays out of the p99 (figures: docs/scale.md)."""
THAW_EVERY_S = 600.0
"""How often a round walks the whole heap, for cycles a library may leave (ours, streams included,
are freed by reference counting)."""
_RESTART_BACKOFF_S = 1.0


@dataclass(frozen=True)
class Listener:
    """One address the server answers on, with one socket per worker (or one shared)."""

    name: str
    host: str
    port: int
    sockets: tuple[socket.socket, ...]
    tls: ssl.SSLContext | None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    def socket_for(self, worker: int) -> socket.socket:
        return self.sockets[worker % len(self.sockets)]


def bind(name: str, host: str, port: int, workers: int, tls: ssl.SSLContext | None) -> Listener:
    """Bind ``workers`` SO_REUSEPORT sockets on one port (one shared socket where unsupported)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    count = workers if hasattr(socket, "SO_REUSEPORT") else 1
    sockets: list[socket.socket] = []
    for _ in range(count):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if count > 1:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        port = sock.getsockname()[1]
        sock.listen(LISTEN_BACKLOG)
        sock.setblocking(False)
        sockets.append(sock)
    return Listener(name, host, port, tuple(sockets), tls)


def tls_context(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ConfigurationError("--tls-cert and --tls-key go together")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


async def serve_worker(
    settings: ReadSettings, main: Listener, compat: Listener | None, worker: int, ready: Callable[[], None]
) -> None:
    """Serve both listeners in this process until cancelled."""
    app = await ReadApp.open(settings, compat=compat is not None)
    servers: list[Http1Server] = []
    heap: asyncio.Task[None] | None = None
    try:
        dispatchers = [(main, app.api)]
        if compat is not None and app.compat is not None:
            dispatchers.append((compat, app.compat))
        for listener, dispatcher in dispatchers:
            server = Http1Server.for_api(dispatcher, settings, secure=listener.tls is not None)
            servers.append(server)
            await server.start(listener.socket_for(worker), listener.tls)
        gc.freeze()  # what exists now lives as long as the worker: keep it out of every collection
        heap = asyncio.get_running_loop().create_task(freeze_survivors(FREEZE_EVERY_S, THAW_EVERY_S))
        ready()
        await asyncio.Event().wait()
    finally:
        if heap is not None:
            heap.cancel()
        for server in servers:
            await server.close()
        await app.close()


def run_worker(
    settings: ReadSettings, main: Listener, compat: Listener | None, worker: int, ready: Callable[[], None]
) -> None:
    """A worker's body: its own event loop, serving until SIGTERM or SIGINT."""

    async def until_signal() -> None:
        task = asyncio.current_task()
        assert task is not None
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, task.cancel)
        with contextlib.suppress(asyncio.CancelledError):
            await serve_worker(settings, main, compat, worker, ready)

    with _runner() as runner:
        runner.run(until_signal())


def _runner() -> asyncio.Runner:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.Runner()
    return asyncio.Runner(loop_factory=uvloop.new_event_loop)


class _Stop(Exception):
    """Raised in the parent by SIGTERM/SIGINT to leave its supervision loop."""


def _stop(signum: int, frame: object) -> None:
    raise _Stop


def supervise(settings: ReadSettings, main: Listener, compat: Listener | None, workers: int) -> None:
    """Fork the workers, announce the URL once all serve, restart any that dies, stop on a signal."""
    context = multiprocessing.get_context("fork")
    ready_read, ready_write = os.pipe()

    def spawn(worker: int) -> BaseProcess:
        process = context.Process(target=_child, args=(settings, main, compat, worker, ready_write),
                                  name=f"ladder-read-{worker}", daemon=False)  # fmt: skip
        process.start()
        return process

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    processes: dict[int, BaseProcess] = {}
    try:
        for worker in range(workers):
            processes[worker] = spawn(worker)
        _await_ready(ready_read, workers)
        announce(main, compat)
        while True:
            sentinels = {p.sentinel: w for w, p in processes.items()}
            for sentinel in multiprocessing.connection.wait(list(sentinels)):
                worker = sentinels[sentinel]  # type: ignore[index]
                log.warning("worker %d exited with %s; restarting it", worker, processes[worker].exitcode)
                time.sleep(_RESTART_BACKOFF_S)
                processes[worker] = spawn(worker)
    except _Stop:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for process in processes.values():
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
        for process in processes.values():
            process.join(10)
            if process.is_alive():
                process.kill()


def _child(
    settings: ReadSettings, main: Listener, compat: Listener | None, worker: int, ready_fd: int
) -> None:
    die_with_parent()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    reset_request_ids()

    def ready() -> None:
        os.write(ready_fd, b"1")

    run_worker(settings, main, compat, worker, ready)


def _await_ready(fd: int, workers: int) -> None:
    deadline = time.monotonic() + _READY_TIMEOUT_S
    seen = 0
    while seen < workers:
        if time.monotonic() > deadline:
            raise ConfigurationError(
                f"only {seen} of {workers} workers started within {_READY_TIMEOUT_S:.0f} s"
            )
        seen += len(os.read(fd, workers - seen))


def announce(main: Listener, compat: Listener | None) -> None:
    print(f"LADDER_READ_URL={main.url}", flush=True)
    if compat is not None:
        print(f"LADDER_COMPAT_URL={compat.url}", flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="ladder read", description="Serve the Ladder read API.", formatter_class=HelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port (printed at start)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--tls-cert", help="PEM certificate chain: serve HTTPS")
    parser.add_argument("--tls-key", help="PEM private key of --tls-cert")
    parser.add_argument("--compat-port", type=int, help="also serve the UBDCC routes here, as one tenant")
    parser.add_argument("--compat-host", default="127.0.0.1", help="the compat listener's address")
    parser.add_argument(
        "--compat-tenant",
        help="the tenant the compat listener acts as (default: LADDER_COMPAT_TENANT, compat)",
    )
    parser.add_argument(
        "--compat-keyless-changes",
        action="store_true",
        help="let keyless compat requests create and stop books (loopback only; see docs/ubdcc.md)",
    )
    parser.add_argument("--log-level", default="INFO", help="logging level: DEBUG, INFO, WARNING, ERROR")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s read %(levelname)s %(name)s: %(message)s")
    try:
        overrides: dict[str, object] = {"compat_tenant": args.compat_tenant} if args.compat_tenant else {}
        if args.compat_keyless_changes:
            overrides["compat_keyless_changes"] = True
        settings = load_settings(**overrides)
        install_log_redaction(*secrets_of(settings))
        keyless = settings.compat_keyless_changes and args.compat_port is not None
        if keyless and not is_loopback(args.compat_host):
            raise ConfigurationError(
                "keyless compat changes are allowed only on a loopback listener (--compat-host 127.0.0.1)"
            )
        if settings.huge_pages and argv is None:  # started as a program: its argv can be re-run
            restart_with_huge_pages()
        tls = tls_context(args.tls_cert, args.tls_key)
        main_listener = bind("main", args.host, args.port, args.workers, tls)
        compat = None
        if args.compat_port is not None:
            compat = bind("compat", args.compat_host, args.compat_port, args.workers, tls)
    except (ConfigurationError, OSError, ssl.SSLError) as exc:
        print(f"ladder read: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if args.workers == 1:
        run_worker(settings, main_listener, compat, 0, lambda: announce(main_listener, compat))
    else:
        supervise(settings, main_listener, compat, args.workers)
