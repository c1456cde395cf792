"""Lambda resolves LADDER_*_SECRET_ARN from Secrets Manager (moto in server mode, real HTTP)."""

from collections.abc import Iterator

import boto3
import pytest
from moto.server import ThreadedMotoServer

from ladder_process.embedded_valkey import free_port
from read_functions.server.aws_secrets import resolve_secret_arns


@pytest.fixture
def secrets_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port())
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def test_secret_arns_become_settings_without_overwriting(secrets_url: str) -> None:
    client = boto3.client("secretsmanager", endpoint_url=secrets_url)
    pepper = client.create_secret(Name="ladder/pepper", SecretString="p" * 32)["ARN"]
    admin = client.create_secret(Name="ladder/admin", SecretString="a" * 32)["ARN"]
    environ = {
        "LADDER_PEPPER_SECRET_ARN": pepper,
        "LADDER_ADMIN_KEY_SECRET_ARN": admin,
        "LADDER_ADMIN_KEY": "already-set-by-the-operator",
        "OTHER_SECRET_ARN": "not ours",
    }
    resolved = resolve_secret_arns(environ, lambda: client)
    assert resolved == ["LADDER_PEPPER"]
    assert environ["LADDER_PEPPER"] == "p" * 32
    assert environ["LADDER_ADMIN_KEY"] == "already-set-by-the-operator"


def test_nothing_to_resolve_makes_no_client() -> None:
    def no_client() -> object:
        raise AssertionError("no secret ARN, so Secrets Manager must not be called")

    assert resolve_secret_arns({"LADDER_REDIS_URL": "redis://x"}, no_client) == []
