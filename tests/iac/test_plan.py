"""Plans of the full root (network, store, Lambda, ECS, ...) against the emulator.

Moto cannot create everything the root deploys (its ElastiCache replication groups have no member
clusters), so the full root is planned, not applied. A plan still runs the real provider's
argument checks and evaluates every expression, count and precondition with real values; the
module tests (test_module_tests.py) cover the values a plan cannot know yet.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest

from tests.iac.emulator import REGION, Emulator
from tests.iac.workspace import Workspace, WorkspaceFactory

SECRETS = {
    "api_key_pepper": "plan-pepper-0123456789abcdef0123456789abcdef",
    "admin_key": "plan-admin-0123456789abcdef0123456789abcdef",
    "store_auth_token": "plan-token-0123456789abcdef",
}


@pytest.fixture(scope="module")
def full_root(
    make_workspace: WorkspaceFactory, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Workspace]:
    base = tmp_path_factory.mktemp("full-root")
    package = base / "ladder-lambda.zip"
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("read_functions/__init__.py", "")
    with Emulator() as aws:
        workspace = make_workspace(base, ".")
        workspace.point_at_emulator(aws.endpoint_url, REGION)
        (workspace.directory / "test.auto.tfvars.json").write_text(
            json.dumps(
                {
                    **SECRETS,
                    "region": REGION,
                    "lambda_package_path": str(package),
                    "image": "registry.example/ladder:1.0.0",
                }
            )
        )
        yield workspace


def _vars(**values: object) -> list[str]:
    args = []
    for name, value in values.items():
        rendered = str(value).lower() if isinstance(value, bool) else str(value)
        args.append(f"-var={name}={rendered}")
    return args


def _after(plan: dict[str, Any], resource_type: str) -> list[dict[str, Any]]:
    """The planned attribute values of every resource of one type."""
    return [c["change"]["after"] for c in plan["resource_changes"] if c["type"] == resource_type]


def _one(plan: dict[str, Any], resource_type: str) -> dict[str, Any]:
    found = _after(plan, resource_type)
    assert len(found) == 1, f"expected one {resource_type}, planned {len(found)}"
    return found[0]


def test_default_plan_is_a_replicated_store_behind_an_http_api(full_root: Workspace) -> None:
    plan = full_root.planned()

    store = _one(plan, "aws_elasticache_replication_group")
    assert store["engine"] == "valkey"
    assert store["cluster_mode"] == "disabled"
    assert store["num_cache_clusters"] == 2
    assert store["parameter_group_name"] == "default.valkey8"
    assert store["transit_encryption_enabled"] is True
    assert store["automatic_failover_enabled"] is True
    assert store["multi_az_enabled"] is True

    function = _one(plan, "aws_lambda_function")
    assert function["handler"] == "read_functions.server.lambda_handler.handler"
    assert function["runtime"] in {"python3.11", "python3.12"}
    assert function["reserved_concurrent_executions"] == 100
    assert len(function["vpc_config"]) == 1

    assert len(_after(plan, "aws_apigatewayv2_api")) == 1
    assert _after(plan, "aws_lambda_function_url") == []
    assert _after(plan, "aws_lambda_provisioned_concurrency_config") == []

    services = {s["name"]: s for s in _after(plan, "aws_ecs_service")}
    assert set(services) == {"ladder-ingest", "ladder-control"}
    assert services["ladder-control"]["desired_count"] == 1
    scaling = _one(plan, "aws_appautoscaling_policy")["target_tracking_scaling_policy_configuration"][0]
    assert (
        scaling["predefined_metric_specification"][0]["predefined_metric_type"]
        == "ECSServiceAverageCPUUtilization"
    )

    assert {(a["namespace"], a["metric_name"]) for a in _after(plan, "aws_cloudwatch_metric_alarm")} == {
        ("AWS/Lambda", "Errors"),
        ("AWS/Lambda", "Throttles"),
        ("AWS/ApiGateway", "5xx"),
        ("Ladder", "BookAgeMs"),
    }
    assert len(_after(plan, "aws_subnet")) == 4
    assert len(_after(plan, "aws_nat_gateway")) == 1


def test_cluster_mode_function_url_plan(full_root: Workspace) -> None:
    plan = full_root.planned(
        *_vars(
            store_cluster_mode_enabled=True,
            store_shards=3,
            store_replicas_per_shard=0,
            api_type="function_url",
            lambda_reserved_concurrency=10,
            lambda_provisioned_concurrency=2,
            single_nat_gateway=False,
        )
    )

    store = _one(plan, "aws_elasticache_replication_group")
    assert store["cluster_mode"] == "enabled"
    assert (store["num_node_groups"], store["replicas_per_node_group"]) == (3, 0)
    assert store["parameter_group_name"] == "default.valkey8.cluster.on"
    assert store["automatic_failover_enabled"] is True
    assert store["multi_az_enabled"] is False

    assert _one(plan, "aws_lambda_function_url")["authorization_type"] == "NONE"
    assert _one(plan, "aws_lambda_provisioned_concurrency_config")["provisioned_concurrent_executions"] == 2
    assert _after(plan, "aws_apigatewayv2_api") == []
    assert {a["metric_name"] for a in _after(plan, "aws_cloudwatch_metric_alarm")} >= {"Url5xxCount"}
    assert len(_after(plan, "aws_nat_gateway")) == 2
