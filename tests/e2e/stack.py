"""A whole Ladder stack in subprocesses, started the way `ladder up --venue fake` starts it: the
two embedded stores (control data with an AOF, books volatile) are supervised children too.

With ``LADDER_TEST_STORE=cluster`` (tests/stores.py) every stack gets a 3-primary Valkey Cluster of
its own for both stores instead, as a deployment on ElastiCache in cluster mode would have (the
embedded stores still start, unused, so the stack is otherwise the same), unless the test names
the stores itself in ``extra_env``."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import redis
import redis.cluster

from ladder_cli.main import FAKE_ALPACA_ARGS, STORE_PASSWORD_FILE, embedded_stores, fake_venue_env
from ladder_cli.supervisor import Child, Supervisor, child_env
from tests.e2e.tcp_proxy import CuttableProxy
from tests.stores import ON_CLUSTER, SyncClient
from tests.valkey_cluster import ValkeyCluster

ADMIN_KEY = "ldr_admin_e2e_" + "x" * 20
STORE_URLS = ("LADDER_REDIS_URL", "LADDER_CONTROL_REDIS_URL")


@dataclass
class StoreLinks:
    """One component's own connections to the two stores, through proxies a test can slow or cut."""

    books: CuttableProxy
    control: CuttableProxy

    @classmethod
    def open(cls, env: dict[str, str]) -> StoreLinks:
        books, control = (CuttableProxy("127.0.0.1", urlsplit(env[name]).port or 0) for name in STORE_URLS)
        return cls(books, control)

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """The store URLs of ``env``, leading through these proxies."""
        return {
            "LADDER_REDIS_URL": self.books.url(env["LADDER_REDIS_URL"]),
            "LADDER_CONTROL_REDIS_URL": self.control.url(env["LADDER_CONTROL_REDIS_URL"]),
        }

    @property
    def both(self) -> tuple[CuttableProxy, CuttableProxy]:
        return self.books, self.control


@dataclass
class Stack:
    """Handles to a running stack and the calls tests make against it."""

    api: str
    venue: str
    redis_url: str
    """The book store (its URL carries the password)."""
    control_url: str
    """The control store."""
    supervisor: Supervisor
    data_dir: Path
    log_dir: Path
    env: dict[str, str]
    links: dict[str, StoreLinks] = field(default_factory=dict)
    """Per component (child name), its proxied store connections, when the stack was started so."""
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=10))
    cluster: ValkeyCluster | None = None
    """The cluster both stores are on, with ``LADDER_TEST_STORE=cluster``; stopped with the stack."""

    def admin(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.request(
            method, self.api + path, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, **kwargs
        )

    def tenant_key(self, name: str, **limits: Any) -> str:
        """Create a tenant and one key for it; returns the key."""
        tenant = self.admin("POST", "/v1/admin/tenants", json={"name": name, **limits})
        assert tenant.status_code == 201, tenant.text
        key = self.admin("POST", f"/v1/admin/tenants/{tenant.json()['id']}/keys")
        assert key.status_code == 201, key.text
        return str(key.json()["key"])

    def call(self, key: str | None, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return self.http.request(method, self.api + path, headers=headers, **kwargs)

    def wait_synced(self, key: str, exchange: str, market: str, timeout_s: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            last = self.call(key, "GET", f"/v1/books/{exchange}/{market}", params={"depth": 100})
            if last.status_code == 200 and last.json()["status"] == "synced":
                return dict(last.json())
            time.sleep(0.1)
        raise AssertionError(f"{exchange} {market} not synced in {timeout_s} s: {last and last.text}")

    def truth(self, venue: str, symbol: str, update_id: int) -> httpx.Response:
        return self.http.get(
            f"{self.venue}/_fake/book", params={"venue": venue, "symbol": symbol, "update_id": update_id}
        )

    def fault(self, **action: Any) -> None:
        response = self.http.post(f"{self.venue}/_fake/control", json=action)
        assert response.status_code == 200, response.text

    def child(self, name: str) -> Child:
        return next(c for c in self.supervisor.children if c.name == name)

    def logs(self) -> str:
        """Everything every child wrote to stderr so far."""
        return "".join(p.read_text(errors="replace") for p in sorted(self.log_dir.glob("*.log")))

    def add_child(
        self, name: str, args: list[str], ready_key: str | None = None, *, proxied: bool = False
    ) -> str:
        """Start one more component against this stack's store and venue; returns its ready value.

        ``proxied``: through its own store proxies (in :attr:`links`), so a test can partition it.
        """
        env = dict(self.env)
        if proxied:
            self.links[name] = StoreLinks.open(self.env)
            env |= self.links[name].env(self.env)
        child = Child(
            name, args, child_env(**env), ready_key=ready_key, log_path=self.log_dir / f"{name}.log"
        )
        return self.supervisor.start(child)

    def store(self, url: str) -> SyncClient:
        """A blocking client of one of the stack's stores (``redis_url`` or ``control_url``)."""
        if self.cluster is not None:
            return redis.cluster.RedisCluster.from_url(url)
        return redis.Redis.from_url(url)

    @property
    def store_password(self) -> str:
        return (self.data_dir / STORE_PASSWORD_FILE).read_text().strip()

    def store_pid(self, name: str) -> int:
        """The pid of the Valkey server behind the ``store-control`` or ``store-books`` child."""
        wrapper = self.child(name).proc
        assert wrapper is not None
        children = Path(f"/proc/{wrapper.pid}/task/{wrapper.pid}/children").read_text().split()
        assert len(children) == 1, children
        return int(children[0])

    def stop(self) -> None:
        self.http.close()
        self.supervisor.stop()
        for links in self.links.values():
            for proxy in links.both:
                proxy.close()
        if self.cluster is not None:
            self.cluster.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)
        if not os.environ.get("LADDER_KEEP_TEST_LOGS"):  # set it to keep them for a post-mortem
            shutil.rmtree(self.log_dir, ignore_errors=True)


def stored_bytes(value: object) -> bytes:
    """A value read from the store: bytes, as a client without ``decode_responses`` returns them."""
    assert isinstance(value, bytes), f"not bytes: {value!r}"
    return value


def start_stack(
    *,
    ingest_nodes: int = 2,
    extra_env: dict[str, str] | None = None,
    extra_venue_args: list[str] | None = None,
    proxied: bool = False,
    supervised: bool = False,
) -> Stack:
    """Start the stores, the fake venue, the control process, ``ingest_nodes`` nodes and the read API.

    ``proxied``: every component reaches the stores through its own proxies (``Stack.links``).
    ``supervised``: children that die are restarted, as ``ladder up`` restarts them.
    """
    supervisor = Supervisor()
    log_dir = Path(tempfile.mkdtemp(prefix="ladder-e2e-logs-"))
    data_dir = Path(tempfile.mkdtemp(prefix="ladder-e2e-data-"))

    env: dict[str, str] = {}
    links: dict[str, StoreLinks] = {}
    cluster = ValkeyCluster() if ON_CLUSTER and "LADDER_REDIS_URL" not in (extra_env or {}) else None

    def child(name: str, args: list[str], ready_key: str | None = None) -> Child:
        own = dict(env)
        if proxied and name != "fake-venue":
            links[name] = StoreLinks.open(env)
            own |= links[name].env(env)
        return Child(name, args, child_env(**own), ready_key=ready_key, log_path=log_dir / f"{name}.log")

    try:
        stores, store_env = embedded_stores(data_dir, log_dir)
        for store in stores:
            supervisor.start(store)
        if cluster is not None:
            url = cluster.start()
            store_env = {"LADDER_REDIS_URL": url, "LADDER_CONTROL_REDIS_URL": url}
        env |= {
            **store_env,
            "LADDER_ADMIN_KEY": ADMIN_KEY,
            "LADDER_CATALOG_REFRESH_S": "5",
            "LADDER_HEARTBEAT_MS": "200",
            "LADDER_STALE_AFTER_MS": "3000",
            **(extra_env or {}),
        }
        venue_args = [
            "--port",
            "0",
            "--spot-symbols",
            "30",
            "--futures-symbols",
            "30",
            "--alpaca-symbols",
            "5",
            *FAKE_ALPACA_ARGS,
        ]
        venue = supervisor.start(
            child(
                "fake-venue",
                ["fake_venue", *venue_args, "--rate", "20", *(extra_venue_args or [])],
                "FAKE_VENUE_URL",
            )
        )
        env.update(fake_venue_env(venue))
        supervisor.start(child("control", ["control_plane"]))
        for i in range(ingest_nodes):
            node_args = ["ingest_nodes", "--node-id", f"node-{i + 1}"]
            supervisor.start(child(f"ingest-{i + 1}", node_args, "LADDER_INGEST_NODE"))
        read_args = ["read_functions", "--host", "127.0.0.1", "--port", "0"]
        api = supervisor.start(child("read", read_args, "LADDER_READ_URL"))
    except BaseException:
        supervisor.stop()
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
        raise
    if supervised:
        threading.Thread(target=supervisor.watch, daemon=True, name="supervisor").start()
    return Stack(
        api=api,
        venue=venue,
        redis_url=env["LADDER_REDIS_URL"],
        control_url=env["LADDER_CONTROL_REDIS_URL"],
        supervisor=supervisor,
        data_dir=data_dir,
        log_dir=log_dir,
        env=env,
        links=links,
        cluster=cluster,
    )
