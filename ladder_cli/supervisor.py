"""``ladder up``: start every component as its own process, watch them, stop them all together.

Each child runs the exact command a production deployment runs (``ladder control``, ``ladder
ingest``, ``ladder read``, ``ladder fake-venue``), so ``ladder up`` adds nothing but supervision:
children announce readiness with one ``NAME=value`` line on stdout, a child that dies is restarted
with backoff, and every child is started with a parent-death signal, so even a SIGKILL of the
supervisor leaves nothing running.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ladder_process.embedded_valkey import die_with_parent
from ladder_process.redaction import redact

log = logging.getLogger("ladder.up")
STABLE_AFTER_S = 60.0
"""A child that ran this long before it died is restarted after the shortest delay again."""


@dataclass
class Child:
    """One supervised component process."""

    name: str
    args: list[str]
    env: Mapping[str, str]
    ready_key: str | None = None
    log_path: Path | None = None
    """Where the child's stderr goes (default: ours)."""
    proc: subprocess.Popen[str] | None = None
    ready_value: str | None = None
    restarts: int = 0
    started_at: float = 0.0
    _ready: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self._ready.clear()
        self.started_at = time.monotonic()
        stderr = None if self.log_path is None else self.log_path.open("a")
        self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", *self.args],
            env=dict(self.env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            preexec_fn=die_with_parent,
        )
        if stderr is not None:
            stderr.close()  # the child holds its own descriptor
        threading.Thread(target=self._pump, args=(self.proc,), daemon=True, name=f"out-{self.name}").start()

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        """Forward the child's stdout, catching its readiness line."""
        assert proc.stdout is not None
        for line in proc.stdout:
            if self.ready_key and line.startswith(f"{self.ready_key}="):
                self.ready_value = line.strip().split("=", 1)[1]
                self._ready.set()
            else:  # each child masks keys in its own log; a line it printed otherwise is masked here
                sys.stdout.write(f"[{self.name}] {redact(line)}")
                sys.stdout.flush()

    def wait_ready(self, timeout_s: float) -> str:
        if self.ready_key is None:
            return ""
        deadline = time.monotonic() + timeout_s
        while not self._ready.wait(0.1):
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with status {self.proc.returncode} before it was ready"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} was not ready within {timeout_s:.0f} s")
        return self.ready_value or ""

    def terminate(self) -> None:
        """SIGINT: stop now. (SIGTERM would make an ingest node drain to peers that are stopping too.)"""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)

    def wait(self, timeout_s: float) -> None:
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("%s did not stop in time; killing it", self.name)
            self.proc.kill()
            self.proc.wait()


class Supervisor:
    """Starts children in order, restarts the ones that die, stops all on SIGINT/SIGTERM."""

    def __init__(self) -> None:
        self.children: list[Child] = []
        self._stopping = threading.Event()

    def start(self, child: Child, ready_timeout_s: float = 60.0) -> str:
        self.children.append(child)
        child.start()
        return child.wait_ready(ready_timeout_s)

    def run_until_signal(self) -> None:
        """Block, restarting dead children, until SIGINT or SIGTERM; then stop everything."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self._stopping.set())
        try:
            self.watch()
        finally:
            self.stop()

    def watch(self) -> None:
        """Restart children that die, with backoff, until :meth:`stop` (runs in any thread)."""
        while not self._stopping.wait(0.2):
            for child in self.children:
                if child.proc is not None and child.proc.poll() is not None:
                    # Backoff is for a child that keeps dying; one that ran a while starts afresh.
                    if time.monotonic() - child.started_at > STABLE_AFTER_S:
                        child.restarts = 0
                    child.restarts += 1
                    delay = min(30.0, 0.25 * 2 ** min(child.restarts, 7))
                    log.warning(
                        "%s exited (%s); restarting in %.1f s", child.name, child.proc.returncode, delay
                    )
                    if self._stopping.wait(delay):
                        return
                    child.start()

    def stop(self, timeout_s: float = 15.0) -> None:
        """Signal every child (readers first, venue last), then wait; stragglers get SIGKILL."""
        self._stopping.set()
        for child in reversed(self.children):
            child.terminate()
        deadline = time.monotonic() + timeout_s
        for child in reversed(self.children):
            child.wait(max(0.1, deadline - time.monotonic()))


def child_env(**overrides: str) -> dict[str, str]:
    """The supervisor's environment plus ``overrides`` (for the children)."""
    env = dict(os.environ)
    env.update(overrides)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env
