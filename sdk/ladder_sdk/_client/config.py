"""Client settings: read once from arguments or the environment into one frozen value.

An argument wins over its environment variable, the variable over the default. Every timeout is
finite by default: a client that can hang forever is a bug waiting for a bad network day.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from .._wire.errors import ConfigurationError
from .._wire.retry import RetryPolicy

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
BASE_URL_ENV = "LADDER_BASE_URL"
API_KEY_ENV = "LADDER_API_KEY"
ADMIN_KEY_ENV = "LADDER_ADMIN_KEY"

Verify = bool | str | os.PathLike[str] | ssl.SSLContext


@dataclass(frozen=True)
class Timeout:
    """Seconds allowed for each phase of a request; `Timeout(2.0)` sets all four at once.

    `connect` also bounds the WebSocket opening handshake of `stream()`.
    """

    connect: float = 5.0
    read: float = 30.0
    write: float = 30.0
    pool: float = 10.0

    def __init__(
        self,
        default: float | None = None,
        *,
        connect: float | None = None,
        read: float | None = None,
        write: float | None = None,
        pool: float | None = None,
    ) -> None:
        for name, given in (("connect", connect), ("read", read), ("write", write), ("pool", pool)):
            value = given if given is not None else default
            if value is not None:
                if not 0 < value < float("inf"):
                    raise ConfigurationError(f"Timeout.{name} must be a positive finite number of seconds")
                object.__setattr__(self, name, float(value))


@dataclass(frozen=True)
class ClientConfig:
    """Everything a client needs, resolved; the key is kept out of repr."""

    base_url: str
    api_key: str = field(repr=False)
    timeout: Timeout
    retry: RetryPolicy
    ssl_context: ssl.SSLContext = field(repr=False)


def resolve_config(
    *,
    api_key: str | None,
    key_env: str,
    base_url: str | None,
    timeout: Timeout | float,
    max_retries: int | None,
    retry_policy: RetryPolicy | None,
    verify: Verify,
) -> ClientConfig:
    """Merge arguments, environment and defaults; raise ConfigurationError naming what is missing."""
    key = api_key if api_key is not None else os.environ.get(key_env, "")
    if not key:
        raise ConfigurationError(f"{key_env} is missing: pass the key as an argument or set {key_env}")
    policy = retry_policy or RetryPolicy()
    if max_retries is not None:
        policy = replace(policy, max_retries=max_retries)
    return ClientConfig(
        base_url=_check_base_url(base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL),
        api_key=key,
        timeout=timeout if isinstance(timeout, Timeout) else Timeout(timeout),
        retry=policy,
        ssl_context=ssl_context(verify),
    )


def ssl_context(verify: Verify) -> ssl.SSLContext:
    """True: the system trust store; a path: that CA bundle; False: no verification (tests only)."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is True:
        return ssl.create_default_context()
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    path = os.fspath(verify)
    if not os.path.isfile(path):
        raise ConfigurationError(f"verify={path!r} is not a CA bundle file")
    return ssl.create_default_context(cafile=path)


def _check_base_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"base URL must be http:// or https:// with a host, got {url!r}")
    if parts.query or parts.fragment:
        raise ConfigurationError(f"base URL must not carry a query or fragment, got {url!r}")
    return url.rstrip("/")
