"""HTTPS and WSS against a real server whose certificate comes from a throwaway CA."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import trustme
from ladder_sdk import APIConnectionError, AsyncLadder, Ladder, RetryPolicy


@pytest.fixture
def ca_path(ca: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


def test_https_works_with_the_ca_bundle_given_by_path(tls_server: Any, api_key: str, ca_path: str) -> None:
    tls_server.script("GET", "/v1/books/binance.com/ETHBTC", (200, tls_server.book(11)))
    with Ladder(api_key, base_url=tls_server.url, verify=ca_path) as ladder:
        assert ladder.book("binance.com", "ETHBTC").update_id == 11


def test_the_default_trust_store_refuses_the_unknown_ca_at_once(tls_server: Any, api_key: str) -> None:
    slow_retries = RetryPolicy(max_retries=3, initial_delay=2.0, max_delay=2.0)
    started = time.monotonic()
    with (
        Ladder(api_key, base_url=tls_server.url, retry_policy=slow_retries) as ladder,
        pytest.raises(APIConnectionError, match="CERTIFICATE_VERIFY_FAILED"),
    ):
        ladder.book("binance.com", "ETHBTC")
    assert time.monotonic() - started < 1.5  # a refused certificate is not retried
    assert tls_server.seen == []


async def test_wss_stream_uses_the_same_ca_bundle(tls_server: Any, api_key: str, ca_path: str) -> None:
    tls_server.script_stream([("send", 21), ("hold",)])
    async with AsyncLadder(api_key, base_url=tls_server.url, verify=ca_path) as ladder:
        books = ladder.stream("binance.com", "ETHBTC")
        assert (await anext(books)).update_id == 21
        await books.aclose()


def test_wss_stream_refuses_the_unknown_ca_without_reconnecting(tls_server: Any, api_key: str) -> None:
    with Ladder(api_key, base_url=tls_server.url) as ladder, pytest.raises(APIConnectionError):
        next(iter(ladder.stream("binance.com", "ETHBTC")))
    assert tls_server.stream_seen == []
