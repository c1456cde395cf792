"""Apply iac/aws/tests/moto (control table, secrets, IAM, logs, alarms) to moto, inspect it, destroy it.

One test drives the whole life of the stack, each inspection a subtest, because the apply is the
expensive part: as separate tests, pytest-xdist would spread them over workers and each worker
would apply its own copy. The stack is destroyed at the end and must leave nothing behind.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.iac.emulator import FAKE_CREDENTIALS, REGION, Emulator
from tests.iac.workspace import Workspace, WorkspaceFactory

TEST_ROOT = "tests/moto"
NAME = "ladder-moto"
ACCOUNT = "123456789012"  # moto's account
DYNAMODB_STORE_MODULE = "control_plane.stores.dynamodb"


@dataclass
class AppliedStack:
    """The applied test root: the emulator it lives in and what terraform reported."""

    aws: Emulator
    workspace: Workspace
    outputs: dict[str, Any]
    destroyed: bool = False

    def destroy(self) -> None:
        if not self.destroyed:
            self.workspace.run("destroy", "-auto-approve", "-input=false", "-refresh=false")
            self.destroyed = True


@pytest.fixture
def applied_stack(make_workspace: WorkspaceFactory, tmp_path: Path) -> Iterator[AppliedStack]:
    with Emulator() as aws:
        workspace = make_workspace(tmp_path, TEST_ROOT)
        workspace.point_at_emulator(aws.endpoint_url, REGION)
        workspace.run("apply", "-auto-approve", "-input=false")
        stack = AppliedStack(aws, workspace, workspace.outputs())
        try:
            yield stack
        finally:
            stack.destroy()


# ------------------------------------------------------------------------------------------------
# PLUG-IN POINT for the control plane's DynamoDB store: while this fixture is up, the control
# table exists in moto exactly as terraform created it. Code that should run against the deployed
# schema talks to `endpoint_url` / `table_name` in `region` with fake credentials (see
# `check_control_store_smoke` below for the one that runs today).
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ControlTable:
    endpoint_url: str
    region: str
    table_name: str


@pytest.fixture
def control_table(applied_stack: AppliedStack) -> ControlTable:
    return ControlTable(applied_stack.aws.endpoint_url, REGION, applied_stack.outputs["table_name"])


@pytest.fixture
def fake_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials for code that builds its own boto3 clients (the control-plane store)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_CREDENTIALS["aws_access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_CREDENTIALS["aws_secret_access_key"])
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    # boto3's default session caches the credentials it found first; start from a fresh one.
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)


@pytest.mark.usefixtures("fake_aws_env")
def test_apply_inspect_destroy(
    applied_stack: AppliedStack, control_table: ControlTable, subtests: pytest.Subtests
) -> None:
    with subtests.test("control table schema"):
        check_table_schema(applied_stack, control_table)
    with subtests.test("secrets"):
        check_secrets(applied_stack)
    with subtests.test("IAM least privilege"):
        check_roles(applied_stack)
    with subtests.test("log groups and alarms"):
        check_logs_and_alarms(applied_stack)
    with subtests.test("a second plan changes nothing"):
        check_no_drift(applied_stack)
    with subtests.test("control-plane DynamoDB store on the deployed table"):
        check_control_store_smoke(control_table)
    with subtests.test("the store's create_table builds terraform's schema"):
        check_store_schema_twin(applied_stack, control_table)

    applied_stack.destroy()
    check_nothing_left(applied_stack)


# -- checks ----------------------------------------------------------------------------------------


def check_table_schema(stack: AppliedStack, control_table: ControlTable) -> None:
    dynamodb = stack.aws.client("dynamodb")
    table = dynamodb.describe_table(TableName=control_table.table_name)["Table"]

    assert control_table.table_name == f"{NAME}-control"
    assert table["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert {(a["AttributeName"], a["AttributeType"]) for a in table["AttributeDefinitions"]} == {
        ("pk", "S"),
        ("sk", "S"),
        ("gsi1pk", "S"),
        ("gsi1sk", "S"),
    }
    assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    (index,) = table["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "gsi1"
    assert index["KeySchema"] == [
        {"AttributeName": "gsi1pk", "KeyType": "HASH"},
        {"AttributeName": "gsi1sk", "KeyType": "RANGE"},
    ]
    assert index["Projection"]["ProjectionType"] == "ALL"
    assert table["SSEDescription"]["Status"] == "ENABLED"

    ttl = dynamodb.describe_time_to_live(TableName=control_table.table_name)["TimeToLiveDescription"]
    assert (ttl["TimeToLiveStatus"], ttl["AttributeName"]) == ("ENABLED", "expires_at")
    backups = dynamodb.describe_continuous_backups(TableName=control_table.table_name)
    pitr = backups["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
    assert pitr["PointInTimeRecoveryStatus"] == "ENABLED"


def check_secrets(stack: AppliedStack) -> None:
    secrets = stack.aws.client("secretsmanager")
    arns = stack.outputs["secret_arns"]
    assert set(arns) == {"api_key_pepper", "admin_key", "store_auth_token"}
    token = secrets.get_secret_value(SecretId=arns["store_auth_token"])["SecretString"]
    assert token == "test-token-0123456789abcdef"
    names = {secrets.describe_secret(SecretId=arn)["Name"] for arn in arns.values()}
    assert names == {f"{NAME}/api-key-pepper", f"{NAME}/admin-key", f"{NAME}/store-auth-token"}


def _policy(stack: AppliedStack, role: str) -> dict[str, dict[str, Any]]:
    """The inline policy of one role by statement id, each statement's Resource a sorted list."""
    iam = stack.aws.client("iam")
    role_name = stack.outputs["role_names"][role]
    (policy_name,) = iam.list_role_policies(RoleName=role_name)["PolicyNames"]
    document = iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)["PolicyDocument"]
    if isinstance(document, str):
        document = json.loads(document)
    for statement in document["Statement"]:
        resources = statement["Resource"]
        statement["Resource"] = sorted([resources] if isinstance(resources, str) else resources)
    return {s["Sid"]: s for s in document["Statement"]}


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)


def check_roles(stack: AppliedStack) -> None:
    table_arn = stack.outputs["table_arn"]
    table_resources = sorted([table_arn, f"{table_arn}/index/*"])
    secret_arns = sorted(stack.outputs["secret_arns"].values())
    log_group_arn = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group"

    read = _policy(stack, "read")
    assert set(read) == {"ControlTable", "Secrets", "OwnLogGroup", "VpcNetworkInterfaces"}
    assert read["ControlTable"]["Resource"] == table_resources
    assert read["Secrets"]["Resource"] == secret_arns
    assert read["OwnLogGroup"]["Resource"] == [f"{log_group_arn}:/aws/lambda/{NAME}-read:*"]

    ingest = _policy(stack, "ingest")
    assert set(ingest) == {"ControlTable", "BookMetrics"}, "ingest tasks read no secret themselves"
    assert ingest["ControlTable"]["Resource"] == table_resources
    assert ingest["BookMetrics"]["Condition"] == {"StringEquals": {"cloudwatch:namespace": "Ladder"}}

    control = _policy(stack, "control")
    assert set(control) == {"ControlTable"}
    assert control["ControlTable"]["Resource"] == table_resources

    execution = _policy(stack, "execution")
    assert set(execution) == {"InjectedSecrets", "ServiceLogGroups"}, "no ECR repository given: no ECR grant"
    assert execution["InjectedSecrets"]["Resource"] == secret_arns
    assert execution["ServiceLogGroups"]["Resource"] == sorted(
        f"{log_group_arn}:/ecs/{NAME}/{kind}:*" for kind in ("ingest", "control")
    )

    for role in ("read", "ingest", "control", "execution"):
        actions = [action for statement in _policy(stack, role).values() for action in _actions(statement)]
        assert not [a for a in actions if "*" in a], f"{role} has wildcard actions"


def check_logs_and_alarms(stack: AppliedStack) -> None:
    logs = stack.aws.client("logs")
    groups = {g["logGroupName"]: g for g in logs.describe_log_groups(logGroupNamePrefix="/")["logGroups"]}
    for name in stack.outputs["log_group_names"].values():
        assert groups[name]["retentionInDays"] == 7

    cloudwatch = stack.aws.client("cloudwatch")
    described = cloudwatch.describe_alarms(AlarmNamePrefix=f"{NAME}-")["MetricAlarms"]
    alarms = {a["AlarmName"]: a for a in described}
    assert set(alarms) == set(stack.outputs["alarm_names"])
    book_age = alarms[f"{NAME}-book-age"]
    assert (book_age["Namespace"], book_age["MetricName"]) == ("Ladder", "BookAgeMs")
    assert book_age["TreatMissingData"] == "breaching"
    assert book_age["AlarmActions"] == [stack.outputs["alarm_topic_arn"]]


def check_no_drift(stack: AppliedStack) -> None:
    result = stack.workspace.try_run("plan", "-input=false", "-detailed-exitcode")
    assert result.returncode == 0, (
        f"the applied stack drifts from its configuration:\n{result.stdout}{result.stderr}"
    )


def _require_dynamodb_store() -> None:
    if importlib.util.find_spec(DYNAMODB_STORE_MODULE) is None:
        pytest.skip(f"{DYNAMODB_STORE_MODULE} does not exist yet; this step needs it")


def check_control_store_smoke(control_table: ControlTable) -> None:
    """Create and read back a tenant through the control plane's own DynamoDB store."""
    _require_dynamodb_store()
    from control_plane.models import Tenant
    from control_plane.stores.dynamodb import DynamoControlStore

    tenant = Tenant(
        id="tnt_iacsmoke",
        name="iac smoke",
        max_markets=3,
        max_replicas=2,
        rate_limit_rps=5.0,
        burst=10,
        disabled=False,
        created_at=1_700_000_000_000,
    )

    async def round_trip() -> None:
        store = DynamoControlStore(
            control_table.table_name, endpoint_url=control_table.endpoint_url, region=control_table.region
        )
        try:
            await store.create_tenant(tenant)
            assert await store.get_tenant(tenant.id) == tenant
            assert tenant in await store.list_tenants()  # served by gsi1
        finally:
            await store.close()

    asyncio.run(round_trip())


def check_store_schema_twin(stack: AppliedStack, control_table: ControlTable) -> None:
    """The store's create_table (used by its own tests) must build the keys, index and TTL terraform does."""
    _require_dynamodb_store()
    from control_plane.stores.dynamodb import create_table

    dynamodb = stack.aws.client("dynamodb")

    def shape(name: str) -> tuple[Any, ...]:
        table = dynamodb.describe_table(TableName=name)["Table"]
        indexes = sorted(
            (i["IndexName"], json.dumps(i["KeySchema"]), i["Projection"]["ProjectionType"])
            for i in table.get("GlobalSecondaryIndexes", [])
        )
        attributes = sorted((a["AttributeName"], a["AttributeType"]) for a in table["AttributeDefinitions"])
        ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"].get("AttributeName")
        return (json.dumps(table["KeySchema"]), attributes, indexes, ttl)

    twin = f"{NAME}-schema-twin"
    asyncio.run(create_table(twin, endpoint_url=control_table.endpoint_url, region=control_table.region))
    try:
        assert shape(twin) == shape(control_table.table_name)
    finally:
        dynamodb.delete_table(TableName=twin)


def check_nothing_left(stack: AppliedStack) -> None:
    with pytest.raises(ClientError) as missing:
        stack.aws.client("dynamodb").describe_table(TableName=stack.outputs["table_name"])
    assert missing.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert stack.aws.client("secretsmanager").list_secrets()["SecretList"] == []
    roles = [r["RoleName"] for r in stack.aws.client("iam").list_roles()["Roles"]]
    assert [r for r in roles if r.startswith(f"{NAME}-")] == []
    groups = [g["logGroupName"] for g in stack.aws.client("logs").describe_log_groups()["logGroups"]]
    assert set(groups).isdisjoint(stack.outputs["log_group_names"].values())
    assert stack.aws.client("cloudwatch").describe_alarms(AlarmNamePrefix=f"{NAME}-")["MetricAlarms"] == []
    assert stack.aws.client("sns").list_topics()["Topics"] == []
    assert stack.workspace.outputs() == {}
