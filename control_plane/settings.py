"""Configuration of the control plane, read once at start-up from ``LADDER_*`` variables.

``LADDER_PEPPER`` keys the HMAC under which API keys are stored. With the Redis control store it
may be left unset: the first process generates a random pepper and keeps it in the store, and
every later process (and restart) reads that one, so existing keys stay valid. That pepper then
lives next to the hashes it protects, which is fine on one machine; a production deployment
sets ``LADDER_PEPPER`` from its secret manager (the DynamoDB store requires it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from control_plane.accounts.api_keys import MAX_PRESENTED_LENGTH
from control_plane.scheduling.venue_credentials import credential_pool

MIN_SECRET_LENGTH = 16


def _secret_length(value: SecretStr | None, longest: int | None) -> SecretStr | None:
    if value is not None:
        length = len(value.get_secret_value())
        if length < MIN_SECRET_LENGTH:
            raise ValueError(f"must be at least {MIN_SECRET_LENGTH} characters")
        if longest is not None and length > longest:
            raise ValueError(f"must be at most {longest} characters")
    return value


def admin_key_length(value: SecretStr | None) -> SecretStr | None:
    """An admin key is presented like any key, so it is no longer than the server accepts (it
    could never authenticate otherwise)."""
    return _secret_length(value, MAX_PRESENTED_LENGTH)


def pepper_length(value: SecretStr | None) -> SecretStr | None:
    return _secret_length(value, None)


class ControlSettings(BaseSettings):
    """One frozen settings object per control-plane process."""

    model_config = SettingsConfigDict(env_prefix="LADDER_", frozen=True, extra="ignore")

    redis_url: str | None = Field(default=None, description="Valkey/Redis URL (the redis control store).")
    control_redis_url: str | None = Field(
        default=None,
        description="The redis control store, when it is not the book store (`ladder up` keeps them apart).",
    )
    redis_password: SecretStr | None = Field(default=None, description="AUTH token, when not in the URL.")
    redis_cluster: bool | None = Field(
        default=None,
        description="Whether the book store is a Valkey/Redis Cluster (unset: ask the node of the URL).",
    )
    control_store: Literal["redis", "dynamodb"] = "redis"
    control_prefix: str = Field(default="ladder:", description="Key prefix of the redis control store.")
    dynamodb_table: str = "ladder-control"
    dynamodb_endpoint_url: str | None = None
    dynamodb_region: str = "us-east-1"
    admin_key: SecretStr | None = Field(default=None, description="The operator's key; unset: no operator.")
    pepper: SecretStr | None = None
    node_timeout_ms: int = Field(default=3000, ge=100, description="No heartbeat this long: node is dead.")
    scheduler_interval_ms: int = Field(default=500, ge=50, le=60_000)
    history_interval_s: float = Field(
        default=10.0, gt=0, le=600, description="Sample the cluster for the console's history this often."
    )
    scheduler_max_moves: int = Field(default=16, ge=0, description="Rebalancing moves in flight at most.")
    replica_silence_ms: int = Field(
        default=3000, ge=100, description="A replica silent this long does not count as synced."
    )
    alpaca_key_id: SecretStr | None = Field(default=None, description="Counted, never used here ...")
    alpaca_secret_key: SecretStr | None = None
    alpaca_credentials: SecretStr | None = Field(
        default=None, description="... as the pool is: one node per key may carry alpaca-crypto books."
    )

    @property
    def keyed_exchanges(self) -> dict[str, int]:
        """Exchanges whose connections each take a venue credential, and how many keys there are."""
        return {
            "alpaca-crypto": len(
                credential_pool(self.alpaca_key_id, self.alpaca_secret_key, self.alpaca_credentials)
            )
        }

    _usable_admin_key = field_validator("admin_key")(admin_key_length)
    _usable_pepper = field_validator("pepper")(pepper_length)

    @property
    def control_store_url(self) -> str | None:
        """Where the redis control store lives: its own URL, or the book store's."""
        return self.control_redis_url or self.redis_url
