"""The ECS container health check, taken from a plan of the services module and run for real.

The module's own `terraform test` checks the command's text; this runs the planned command (with
this interpreter in place of the image's) against a real ops server, so a probe that names a wrong
path or port, or one that passes on a 503, fails here.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from ladder_process.health import ReadinessSlot
from ladder_process.metrics_server import MetricsSettings, serve_metrics
from tests.iac.emulator import REGION
from tests.iac.workspace import Workspace, WorkspaceFactory

ARN = "arn:aws:iam::123456789012:role/ladder"
SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:ladder/x"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def planned_checks(
    make_workspace: WorkspaceFactory, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, dict[str, list[str]]]]:
    """(ops port, each container's healthCheck command) from a plan of modules/services."""
    port = _free_port()
    workspace: Workspace = make_workspace(tmp_path_factory.mktemp("services"), "modules/services")
    # No AWS call is planned for new resources; the endpoint only has to be well formed.
    workspace.point_at_emulator("http://127.0.0.1:9", REGION)
    variables = {
        "name": "ladder",
        "image": "registry.example/ladder:1.0.0",
        "subnet_ids": ["subnet-a"],
        "ingest_security_group_id": "sg-ingest",
        "control_security_group_id": "sg-control",
        "execution_role_arn": ARN,
        "ingest_task_role_arn": ARN,
        "control_task_role_arn": ARN,
        "ingest_log_group_name": "/ecs/ladder/ingest",
        "control_log_group_name": "/ecs/ladder/control",
        "redis_url": "rediss://store.example:6379",
        "table_name": "ladder-control",
        "api_key_pepper_secret_arn": SECRET,
        "admin_key_secret_arn": SECRET,
        "store_auth_token_secret_arn": SECRET,
        "ops_port": port,
    }
    (workspace.directory / "test.auto.tfvars.json").write_text(json.dumps(variables))
    plan = workspace.planned()
    checks = {}
    for change in plan["resource_changes"]:
        if change["type"] == "aws_ecs_task_definition":
            (container,) = json.loads(change["change"]["after"]["container_definitions"])
            env = {e["name"]: e["value"] for e in container["environment"]}
            assert env["LADDER_METRICS_PORT"] == str(port)
            checks[container["name"]] = container["healthCheck"]["command"]
    yield port, checks


def _run(command: list[str]) -> int:
    kind, python, *args = command
    assert (kind, python) == ("CMD", "/opt/ladder/bin/python")  # the image's environment (Dockerfile)
    return subprocess.run([sys.executable, *args], capture_output=True, timeout=30).returncode


@pytest.mark.parametrize("process", ["ingest", "control"])
async def test_the_health_check_passes_while_the_loop_turns_and_fails_when_it_is_stuck_or_gone(
    planned_checks: tuple[int, dict[str, list[str]]], process: str
) -> None:
    port, checks = planned_checks
    command = checks[process]
    # /metrics answers from the server's thread even while the loop is stuck: only /livez will do.
    assert f"http://127.0.0.1:{port}/livez'" in command[-1]
    assert await asyncio.to_thread(_run, command) != 0, "nothing listens on the ops port yet"
    settings = MetricsSettings(metrics_port=port, max_loop_block_s=0.3)
    async with serve_metrics(lambda: b"", ReadinessSlot(), settings) as url:
        assert url is not None
        assert await asyncio.to_thread(_run, command) == 0, "a turning loop is live"
        time.sleep(0.6)  # noqa: ASYNC251 - this process's loop is blocked past the bound
        assert _run(command) != 0, "a loop blocked past the bound is not live"
