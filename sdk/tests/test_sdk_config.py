"""Settings from arguments or the environment; timeouts; trace context; no key in any repr."""

from __future__ import annotations

from typing import Any

import pytest
from ladder_sdk import AsyncLadder, ConfigurationError, Ladder, LadderAdmin, Timeout
from opentelemetry.sdk.trace import TracerProvider


def test_key_and_base_url_come_from_the_environment(server: Any, api_key: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("LADDER_API_KEY", api_key)
    monkeypatch.setenv("LADDER_BASE_URL", server.url + "/")
    server.script("GET", "/v1/exchanges", (200, {"exchanges": ["binance.com"]}))
    with Ladder() as ladder:
        assert ladder.base_url == server.url
        assert ladder.exchanges() == ["binance.com"]
    assert server.seen[0].headers["Authorization"] == f"Bearer {api_key}"


def test_arguments_win_over_the_environment(monkeypatch: Any) -> None:
    monkeypatch.setenv("LADDER_API_KEY", "from-env")
    monkeypatch.setenv("LADDER_BASE_URL", "http://env.invalid:1")
    with Ladder("from-arg", base_url="https://api.example.test/prefix") as ladder:
        assert ladder.base_url == "https://api.example.test/prefix"


def test_the_base_url_defaults_to_the_local_demo(monkeypatch: Any) -> None:
    monkeypatch.delenv("LADDER_BASE_URL", raising=False)
    with Ladder("k") as ladder:
        assert ladder.base_url == "http://127.0.0.1:8080"


@pytest.mark.parametrize(
    ("kind", "variable"), [(Ladder, "LADDER_API_KEY"), (LadderAdmin, "LADDER_ADMIN_KEY")]
)
def test_a_missing_key_names_its_variable(kind: type[Ladder], variable: str, monkeypatch: Any) -> None:
    monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ConfigurationError, match=variable):
        kind()


def test_the_admin_client_reads_the_admin_key(monkeypatch: Any) -> None:
    monkeypatch.delenv("LADDER_API_KEY", raising=False)
    monkeypatch.setenv("LADDER_ADMIN_KEY", "operator")
    with LadderAdmin() as admin:
        assert admin._config.api_key == "operator"


@pytest.mark.parametrize("url", ["ftp://host", "127.0.0.1:8080", "http://", "http://host/?q=1"])
def test_a_bad_base_url_is_refused(url: str) -> None:
    with pytest.raises(ConfigurationError, match="base URL"):
        Ladder("k", base_url=url)


def test_a_missing_ca_bundle_is_refused(tmp_path: Any) -> None:
    with pytest.raises(ConfigurationError, match="CA bundle"):
        Ladder("k", verify=str(tmp_path / "absent.pem"))


def test_timeouts_are_finite_and_set_per_phase() -> None:
    assert Timeout() == Timeout(connect=5.0, read=30.0, write=30.0, pool=10.0)
    assert Timeout(2) == Timeout(connect=2, read=2, write=2, pool=2)
    assert Timeout(2, read=9) == Timeout(connect=2, read=9, write=2, pool=2)
    assert Timeout(read=9).connect == 5.0
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ConfigurationError):
            Timeout(bad)


async def test_clients_never_show_their_key(api_key: str, monkeypatch: Any) -> None:
    monkeypatch.delenv("LADDER_BASE_URL", raising=False)
    async with AsyncLadder(api_key) as asynchronous:
        with Ladder(api_key) as ladder, LadderAdmin(api_key) as admin:
            for client in (ladder, admin, asynchronous):
                assert api_key not in repr(client) and api_key not in str(client)
                assert api_key not in repr(client._config)
                assert repr(client).endswith("(base_url='http://127.0.0.1:8080')")


async def test_requests_carry_the_callers_trace_context(server: Any, api_key: str) -> None:
    server.script("GET", "/v1/usage", (200, {"tenant_id": "t", "requests_total": 0, "minutes": []}))
    server.script("GET", "/v1/usage", (200, {"tenant_id": "t", "requests_total": 0, "minutes": []}))
    tracer = TracerProvider().get_tracer("sdk-test")
    async with AsyncLadder(api_key, base_url=server.url) as ladder:
        with tracer.start_as_current_span("caller") as span:
            await ladder.usage()
        await ladder.usage()
    traced, untraced = server.requests_to("/v1/usage")
    trace_id = format(span.get_span_context().trace_id, "032x")
    assert traced.headers["traceparent"].split("-")[1] == trace_id
    assert "traceparent" not in untraced.headers
