"""Shared test servers: one real Valkey per test session (per xdist worker), never a fake; and one
real 6-node Valkey Cluster per session for the tests that ask for it.

With ``LADDER_TEST_STORE=cluster`` (tests/stores.py) ``valkey_url``, ``clean_redis_url``,
``redis_client`` and ``test_store`` lead to the cluster instead, tests marked ``single_store`` are
skipped with their reason, and tests that use no store of theirs at all (or only the cluster fixtures,
which ``make test`` already runs) are deselected: that mode exists to run the store tests again.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import faulthandler
import os
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from book_store.connect import StoreClient
from ladder_process.embedded_valkey import EmbeddedValkey
from tests.stores import MODE, ON_CLUSTER, TestStore
from tests.valkey_cluster import ValkeyCluster

# Database 0 belongs to session-wide stacks; each test that wants a clean slate gets database 1,
# flushed before it runs (tests within one xdist worker run one after another). On a cluster (database
# 0 only) the whole cluster is flushed instead; tests sharing it meanwhile use key prefixes of their own.
CLEAN_DB = 1

STORE_FIXTURES = {"valkey_url", "clean_redis_url", "redis_client", "test_store"}
"""The fixtures that ``LADDER_TEST_STORE`` switches: a test using one of them runs in either mode."""
CLUSTER_FIXTURES = {"valkey_cluster", "clean_cluster_url"}


def listed_for_compiling(root: Path) -> set[str]:
    """The sources ``setup.py`` compiles (its ``COMPILED``), read without running it."""
    for node in ast.parse((root / "setup.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "COMPILED" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def stale_compiled_modules(root: Path) -> list[str]:
    """The modules under ``root`` whose compiled form is older than their source, or that
    ``setup.py`` no longer compiles: an editable install builds them in place, where they shadow the
    ``.py``, so tests would run the code as it was (and a leftover from another build can clash
    with the current one's types)."""
    stale = []
    listed = listed_for_compiling(root)
    packages = [path for path in root.iterdir() if (path / "__init__.py").exists()]
    for compiled in (so for package in packages for so in package.glob("**/*.cpython-*.so")):
        source = compiled.with_name(compiled.name.partition(".")[0] + ".py")
        name = source.relative_to(root).as_posix()
        if source.exists() and (source.stat().st_mtime > compiled.stat().st_mtime or name not in listed):
            stale.append(name)
    return sorted(stale)


def pytest_configure(config: pytest.Config) -> None:
    stale = stale_compiled_modules(Path(__file__).resolve().parent.parent)
    if stale:
        raise pytest.UsageError(
            f"compiled before their source last changed, or no longer listed in setup.py: {stale} "
            "(delete the stale .so, then run `make install`)"
        )
    config.addinivalue_line(
        "markers", "single_store(reason): cannot apply to a cluster; skipped with LADDER_TEST_STORE=cluster"
    )
    global _STDERR
    _STDERR = _real_stderr(config)
    # A worker that is sent SIGTERM prints every thread's stack before it dies, where xdist would
    # only say "node down" (a segfault prints its own, a hang is pytest_timeout_set_timer's below).
    faulthandler.register(signal.SIGTERM, file=_STDERR, all_threads=True, chain=True)


_STDERR = 2
"""The process's own stderr (set at configure time): pytest's capture has moved fd 2 by then, and
what a dying worker writes there is lost with the capture's file."""
_HANG_REPORT_AHEAD_S = 1.0


def _real_stderr(config: pytest.Config) -> int:
    """A duplicate of the stderr the process was started with, from under pytest's capture."""
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is None:
        return os.dup(2)
    capture.suspend_global_capture(in_=True)
    try:
        return os.dup(2)
    finally:
        capture.resume_global_capture()


def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> None:
    """Report a hang before pytest-timeout ends it. Its thread method writes the stacks to pytest's
    terminal and exits the process: in an xdist worker that terminal is /dev/null (execnet keeps the
    real stdout for its own messages), so the worker just died with no trace. So every thread's
    stack and every pending asyncio task's go to the real stderr a second before."""
    timeout = float(settings.timeout or 0)
    if timeout > 2 * _HANG_REPORT_AHEAD_S:
        timer = threading.Timer(timeout - _HANG_REPORT_AHEAD_S, _report_hang, args=(item.nodeid, timeout))
        timer.daemon = True
        timer.start()
        item.stash[_HANG_TIMER] = timer


def pytest_timeout_cancel_timer(item: pytest.Item) -> None:
    timer = item.stash.get(_HANG_TIMER, None)
    if timer is not None:
        timer.cancel()


_HANG_TIMER = pytest.StashKey[threading.Timer]()


def _report_hang(nodeid: str, timeout: float) -> None:
    with open(_STDERR, "w", closefd=False) as out:
        out.write(
            f"\n+++ {nodeid} has run for {timeout - _HANG_REPORT_AHEAD_S:g} s (timeout {timeout:g} s) +++\n"
        )
        out.flush()
        faulthandler.dump_traceback(out, all_threads=True)
        for task in list(asyncio.tasks._all_tasks):  # type: ignore[attr-defined]  # diagnostics: a loop that hangs is not asked
            if not task.done():
                with contextlib.suppress(Exception):
                    task.print_stack(file=out)
        out.write("+++ end of the hang's stacks +++\n")


def pytest_testnodedown(node: Any, error: object | None) -> None:
    """In the controller, when an xdist worker died: say how (its exit status, or the signal that
    killed it), where xdist only says it crashed. A segfault prints its own stack and SIGTERM the
    stacks above, so a worker that dies without a trace was killed outright (SIGKILL) or exited."""
    if error is None:
        return
    popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    if not isinstance(popen, subprocess.Popen):
        return
    try:
        status = popen.wait(5)
    except subprocess.TimeoutExpired:
        status = None
    how = (
        "still running" if status is None
        else f"killed by {signal.Signals(-status).name}" if status < 0
        else f"exited with status {status}"
    )  # fmt: skip
    line = f"xdist worker {node.gateway.id} (pid {popen.pid}) died: {how} ({error})"
    reporter = node.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line, red=True)
    else:
        sys.stderr.write(line + "\n")


def pytest_report_header() -> str:
    return f"store: {MODE} (LADDER_TEST_STORE)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the cluster: skip ``single_store`` tests, deselect those that have no store to switch."""
    if not ON_CLUSTER:
        return
    kept: list[pytest.Item] = []
    deselected: list[pytest.Item] = []
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        switched = (bool(names & STORE_FIXTURES) or item.path.parent.name == "e2e") and not (
            names & CLUSTER_FIXTURES
        )
        (kept if switched else deselected).append(item)
        marker = item.get_closest_marker("single_store")
        if switched and marker is not None:
            reason = marker.args[0] if marker.args else "single node only"
            item.add_marker(pytest.mark.skip(reason=f"single store: {reason}"))
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.fixture(scope="session")
def valkey_server() -> Iterator[EmbeddedValkey]:
    with EmbeddedValkey() as server:
        yield server


@pytest.fixture(scope="session")
def test_store(request: pytest.FixtureRequest) -> TestStore:
    """The store of this session's mode: the single Valkey server, or the session's cluster."""
    if ON_CLUSTER:
        cluster: ValkeyCluster = request.getfixturevalue("valkey_cluster")
        return TestStore(cluster.url, cluster)
    server: EmbeddedValkey = request.getfixturevalue("valkey_server")
    return TestStore(server.url)


@pytest.fixture(scope="session")
def valkey_url(test_store: TestStore) -> str:
    """URL of the session's Valkey server, database 0 (or of the cluster)."""
    return test_store.url


@pytest.fixture
def clean_redis_url(test_store: TestStore) -> str:
    """URL of a database (or the cluster) that is empty when the test starts."""
    url = test_store.database(CLEAN_DB)
    test_store.flush(url)
    return url


@pytest.fixture
async def redis_client(test_store: TestStore, clean_redis_url: str) -> AsyncIterator[StoreClient]:
    """An async client on an empty database (or cluster), closed after the test."""
    client = await test_store.client(clean_redis_url)
    yield client
    await client.aclose()


@pytest.fixture(scope="session")
def valkey_cluster() -> Iterator[ValkeyCluster]:
    """3 primaries with a replica each, started the first time a test of the session asks.

    Tests must leave it whole: one that kills nodes starts a cluster of its own.
    """
    with ValkeyCluster() as cluster:
        yield cluster


@pytest.fixture
def clean_cluster_url(valkey_cluster: ValkeyCluster) -> str:
    """URL of one node of the session's cluster, every shard emptied before the test."""
    valkey_cluster.flush()
    return valkey_cluster.url
