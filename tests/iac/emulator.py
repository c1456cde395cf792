"""An AWS emulator (moto's server) in a child process, on a free loopback port.

A child process rather than a thread: moto keeps its state in module globals, so a server in the
test process would share state with any other moto user in the same xdist worker. The child
binds port 0, prints the port it got, and exits when its stdin closes, so it cannot outlive the
test run even if the parent dies.
"""

from __future__ import annotations

import subprocess
import sys
from types import TracebackType

import boto3
from botocore.client import BaseClient

REGION = "us-east-1"
FAKE_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}

_LAUNCHER = """
import logging, sys
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.ERROR)
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(server.get_host_and_port()[1], flush=True)
sys.stdin.read()
server.stop()
"""


class Emulator:
    """``with Emulator() as aws:`` runs a moto server; ``aws.client("dynamodb")`` talks to it."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None
        self.endpoint_url = ""

    def __enter__(self) -> Emulator:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        port = self._process.stdout.readline().strip()
        if not port.isdigit():
            self._stop()
            raise RuntimeError(f"the moto server did not start (said {port!r})")
        self.endpoint_url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop()

    def _stop(self) -> None:
        if self._process is None:
            return
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None

    def client(self, service: str) -> BaseClient:
        """A boto3 client for ``service`` bound to the emulator."""
        return boto3.client(service, endpoint_url=self.endpoint_url, region_name=REGION, **FAKE_CREDENTIALS)
