"""Configuration of a read process, read once at start-up from ``LADDER_*`` variables."""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from control_plane.errors import ConfigurationError
from control_plane.settings import ControlSettings, admin_key_length, pepper_length


class ReadSettings(BaseSettings):
    """One frozen settings object per read process (server worker or Lambda sandbox)."""

    model_config = SettingsConfigDict(env_prefix="LADDER_", frozen=True, extra="ignore")

    redis_url: str = Field(
        description="The book store (Valkey/Redis) URL; books, usage and limits live there."
    )
    redis_password: SecretStr | None = Field(default=None, description="AUTH token, when not in the URL.")
    redis_cluster: bool | None = Field(
        default=None,
        description="Whether the book store is a Valkey/Redis Cluster (unset: ask the node of the URL).",
    )
    control_redis_url: str | None = Field(
        default=None, description="The redis control store, when it is not the book store."
    )
    control_store: Literal["redis", "dynamodb"] = "redis"
    control_prefix: str = "ladder:"
    dynamodb_table: str = "ladder-control"
    dynamodb_endpoint_url: str | None = None
    dynamodb_region: str = "us-east-1"
    admin_key: SecretStr | None = None
    pepper: SecretStr | None = None

    max_silence_ms: int = Field(default=5000, ge=100, description="A replica silent this long is not served.")
    default_depth: int = Field(default=100, ge=1, le=5000)
    max_depth: int = Field(default=5000, ge=1, description="The largest depth a caller may ask for.")
    auth_max_age_ms: int = Field(
        default=1000, ge=1, le=60_000, description="Keys and tenants: staleness bound."
    )
    # Every subscription change made through the API is announced to every worker at once; this
    # only bounds a change made behind the API's back. Reloading a tenant's thousands of
    # subscriptions stalls a worker for milliseconds, so it is not done more often than needed.
    entitlements_max_age_ms: int = Field(
        default=60_000,
        ge=1,
        le=600_000,
        description="Subscriptions changed behind the API's back: staleness bound.",
    )
    max_stream_books: int = Field(
        default=1000, ge=1, le=100_000, description="Books one multiplexed stream (ladder.v2) may follow."
    )
    book_idle_s: float = Field(default=60.0, gt=0, description="Unsubscribe books not read for this long.")
    rate_lease_ms: int = Field(default=50, ge=1, description="A rate-limit lease is this much of the rate.")
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    # Connection timeouts; unset, the protocol's own defaults (read_functions/server/http1.py) hold.
    keepalive_timeout_s: float | None = Field(default=None, gt=0, description="Close an idle connection.")
    request_timeout_s: float | None = Field(default=None, gt=0, description="408 a slower request.")
    write_timeout_s: float | None = Field(
        default=None, gt=0, description="Abort a connection whose client reads nothing this long."
    )
    max_in_flight: int = Field(
        default=256, ge=1, description="Requests a worker holds at most; past it, 503 overloaded."
    )
    max_queue_ms: int = Field(
        default=250, ge=1, description="Held requests waiting longer than this: new ones get 503 overloaded."
    )
    store_connections: int = Field(
        default=100, ge=2, description="Store connections per worker (books, keys, limits, usage)."
    )
    store_wait_ms: int = Field(
        default=500, ge=1, description="A store call waits this long for a free connection, then 503."
    )
    catalog_refresh_s: float = Field(default=60.0, gt=0, description="Reload the market catalog this often.")
    huge_pages: bool = Field(
        default=True, description="Server: huge pages for the heap (read_functions/server/huge_pages.py)."
    )
    compat_tenant: str = Field(default="compat", min_length=1, max_length=100)
    compat_max_markets: int = Field(default=5000, ge=1)
    compat_max_replicas: int = Field(default=2, ge=1)
    compat_rate_limit_rps: float = Field(default=100_000.0, gt=0)
    compat_keyless_changes: bool = Field(
        default=False,
        description="Let keyless compat requests create and stop books (a loopback listener only).",
    )
    compat_hosts: list[str] = Field(
        default_factory=list,
        description="Host names (besides localhost and IP addresses) the compat listener answers to.",
    )

    # The same checks as the control plane's, so that a bad secret is refused at start-up.
    _usable_admin_key = field_validator("admin_key")(admin_key_length)
    _usable_pepper = field_validator("pepper")(pepper_length)

    def control_settings(self) -> ControlSettings:
        """The control plane's settings for the same store selection and secrets."""
        return ControlSettings(
            redis_url=self.redis_url,
            redis_password=self.redis_password,
            redis_cluster=self.redis_cluster,
            control_redis_url=self.control_redis_url,
            control_store=self.control_store,
            control_prefix=self.control_prefix,
            dynamodb_table=self.dynamodb_table,
            dynamodb_endpoint_url=self.dynamodb_endpoint_url,
            dynamodb_region=self.dynamodb_region,
            admin_key=self.admin_key,
            pepper=self.pepper,
        )


def load_settings(**overrides: object) -> ReadSettings:
    """Read the environment (``overrides`` win); a missing or bad variable is named clearly."""
    try:
        return ReadSettings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(
            f"LADDER_{'_'.join(str(p) for p in err['loc']).upper()}: "
            + ("is missing" if err["type"] == "missing" else err["msg"])
            for err in exc.errors()
        )
        raise ConfigurationError(problems) from None


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (where keyless changes may be allowed)."""
    if host.casefold() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
