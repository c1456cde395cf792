"""Secrets Manager values into ``LADDER_*`` settings, for AWS Lambda.

ECS injects secrets into a container's environment itself; Lambda cannot, so terraform gives the
function ``LADDER_<NAME>_SECRET_ARN`` and the handler resolves each into ``LADDER_<NAME>`` once per
cold start, before the settings are read. A value already set is never overwritten.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

SUFFIX = "_SECRET_ARN"


def _secrets_client() -> Any:
    import boto3  # the Lambda runtime ships boto3; nothing else in the read path needs it

    return boto3.client("secretsmanager")


def resolve_secret_arns(
    environ: MutableMapping[str, str], client: Callable[[], Any] = _secrets_client
) -> list[str]:
    """Set ``LADDER_X`` from the secret named by ``LADDER_X_SECRET_ARN``; returns the names set."""
    wanted = {
        name.removesuffix(SUFFIX): arn
        for name, arn in environ.items()
        if name.startswith("LADDER_")
        and name.endswith(SUFFIX)
        and arn
        and name.removesuffix(SUFFIX) not in environ
    }
    if not wanted:
        return []
    secrets = client()
    for target, arn in sorted(wanted.items()):
        environ[target] = secrets.get_secret_value(SecretId=arn)["SecretString"]
    return sorted(wanted)
