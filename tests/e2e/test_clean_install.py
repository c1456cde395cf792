"""What the container image installs, started for real: Ladder's wheel in a clean environment.

The fixture builds Ladder's wheel once and installs it the way the Dockerfile does (the runtime lock,
binary wheels only and hashes checked, then the wheel without dependencies, into a virtual
environment that has no pip and no view of this repository). Then
``ladder up --venue fake`` from that environment, with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at
a loopback receiver (the issue's "fresh install, then make demo"), must bring every component to a
healthy state: the read API answers, a subscribed book is served synced (so control placed it and
an ingest node keeps it), and each of ingest, control and read exports spans.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.telemetry.otlp_receiver import OtlpReceiver, Received, ReceivedSpan, otlp_receiver

pytestmark = [
    pytest.mark.slow,
    pytest.mark.single_store("the installed ladder up starts its own two single-node stores"),
]

REPO = Path(__file__).resolve().parents[2]
ADMIN_KEY = "ldr_admin_clean_install_0123456789abcdef"
UP = re.compile(r"Ladder is up: (http://\S+)")


@pytest.fixture(scope="session")
def clean_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment holding only Ladder's wheel and the runtime lock (built once)."""
    base = tmp_path_factory.mktemp("clean-install")
    wheels, venv = base / "wheels", base / "venv"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(wheels), str(REPO)],
        check=True,
        timeout=300,
    )
    (wheel,) = wheels.glob("ladder-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    into_venv = [*pip, "--python", str(venv / "bin" / "python"), "install", "--only-binary=:all:"]
    lock = REPO / "requirements" / "runtime.txt"
    subprocess.run([*into_venv, "--require-hashes", "-r", str(lock)], check=True, timeout=600)
    subprocess.run([*into_venv, "--no-deps", str(wheel)], check=True, timeout=120)
    return venv


def clean_environ(**extra: str) -> dict[str, str]:
    """This process's environment without anything that would reach back into the repository."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "OTEL_", "LADDER_"))
    }
    return {**env, **extra}


def test_the_installed_modules_come_from_the_environment_alone(clean_env: Path, tmp_path: Path) -> None:
    probe = (
        "import book_store, control_plane, ingest_nodes, read_functions, fake_venue, "
        "opentelemetry.exporter.otlp.proto.http.trace_exporter as otlp, ingest_nodes.core._levels as levels; "
        "modules = (book_store, control_plane, ingest_nodes, read_functions, fake_venue, otlp, levels); "
        "print('\\n'.join(m.__file__ for m in modules))"
    )
    done = subprocess.run([str(clean_env / "bin" / "python"), "-c", probe], cwd=tmp_path, env=clean_environ(),
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert all(Path(line).is_relative_to(clean_env) for line in done.stdout.split()), done.stdout
    assert not (clean_env / "bin" / "pip").exists(), "the image's environment has no pip"


@pytest.fixture
def clean_stack(clean_env: Path, tmp_path: Path) -> Iterator[tuple[str, OtlpReceiver]]:
    with otlp_receiver() as receiver:
        env = clean_environ(
            LADDER_ADMIN_KEY=ADMIN_KEY,
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
            OTEL_BSP_SCHEDULE_DELAY="200",
            OTEL_TRACES_SAMPLER="parentbased_always_on",  # every component's spans, to see them all
            LADDER_ENVIRONMENT="clean-install",
        )
        data = str(tmp_path / "data")
        command = [str(clean_env / "bin" / "ladder"), "up", "--venue", "fake", "--port", "0",
                   "--ingest-nodes", "1", "--fake-symbols", "5", "--data-dir", data]  # fmt: skip
        up = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        )  # fmt: skip
        try:
            assert up.stdout is not None
            output: list[str] = []
            deadline = time.monotonic() + 60
            url = None
            while url is None:
                assert time.monotonic() < deadline, "ladder up did not come up:\n" + "".join(output)
                line = up.stdout.readline()
                assert line or up.poll() is None, "ladder up exited:\n" + "".join(output)
                output.append(line)
                if found := UP.search(line):
                    url = found[1]
            yield url, receiver
        finally:
            os.killpg(up.pid, signal.SIGINT)
            try:
                up.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)
                up.wait(10)


def test_a_clean_install_runs_every_component_and_exports_their_spans(
    clean_stack: tuple[str, OtlpReceiver],
) -> None:
    url, receiver = clean_stack
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    with httpx.Client(base_url=url, timeout=10) as http:
        assert http.get("/healthz").status_code == 200
        tenant = http.post("/v1/admin/tenants", headers=admin, json={"name": "clean", "max_markets": 2})
        assert tenant.status_code == 201, tenant.text
        key = http.post(f"/v1/admin/tenants/{tenant.json()['id']}/keys", headers=admin).json()["key"]
        tenant_auth = {"Authorization": f"Bearer {key}"}
        made = http.post(
            "/v1/subscriptions", headers=tenant_auth, json={"exchange": "binance.com", "market": "ETHBTC"}
        )
        assert made.status_code == 201, made.text
        deadline = time.monotonic() + 30
        while True:
            book = http.get("/v1/books/binance.com/ETHBTC", headers=tenant_auth, params={"depth": 5})
            if book.status_code == 200 and book.json()["status"] == "synced":
                break
            assert time.monotonic() < deadline, f"the book was never served synced: {book.text}"
            time.sleep(0.2)
    received = receiver.received

    def by_service(r: Received) -> list[ReceivedSpan]:
        with r.lock:
            spans = list(r.spans)
        services = {s.resource.get("service.name") for s in spans}
        return spans if {"ladder-read", "ladder-ingest", "ladder-control"} <= services else []

    received.wait_for("spans from every component", by_service, timeout_s=30)
    environments = {s.resource.get("deployment.environment") for s in received.spans}
    assert environments == {"clean-install"}
