"""A key in every place a client can put one, and not one of them in any log line or error.

A read server of its own logs at DEBUG while a client sends a tenant's real key (and the
operator's, and a made-up key-shaped one) in headers, the query, the path, JSON bodies, the
request id, WebSocket subprotocols and frames, and the compat routes; then every line it printed
is searched, and every answer. A key is never written, whole or without its prefix.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import aiohttp
import pytest
import requests

from tests.read_functions.helpers import ADMIN_KEY, ETH, PEPPER, ServerProcess
from tests.read_functions.hostile.conftest import HOSTILE_DB, _publish, _seed
from tests.read_functions.hostile.raw_ws import (
    BINARY,
    CLOSE,
    STREAM,
    TEXT,
    client_frame,
    read_close,
    read_frame,
    upgrade,
)
from tests.read_functions.wire import connect, read_reply
from tests.stores import TestStore

FAKE = "ldr_" + "Zz9" * 12 + "abc"  # key-shaped, and no key at all


@pytest.fixture(scope="module")
def logged(test_store: TestStore) -> Iterator[tuple[ServerProcess, str]]:
    """A read server logging at DEBUG over the hostile suite's store, and a tenant key of it."""
    url = test_store.database(HOSTILE_DB)
    asyncio.run(_seed(url))
    env = {"LADDER_REDIS_URL": url, "LADDER_ADMIN_KEY": ADMIN_KEY, "LADDER_PEPPER": PEPPER,
           "LADDER_HUGE_PAGES": "false", "LADDER_MAX_SILENCE_MS": "3600000"}  # fmt: skip
    server = ServerProcess(["--log-level", "DEBUG", "--compat-port", "0"], env)
    try:
        admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
        tenant = requests.post(
            f"{server.url}/v1/admin/tenants",
            headers=admin,
            json={"name": "logged", "rate_limit_rps": 100_000, "burst": 100_000},
            timeout=10,
        ).json()
        created = requests.post(
            f"{server.url}/v1/admin/tenants/{tenant['id']}/keys", headers=admin, timeout=10
        )
        key = str(created.json()["key"])
        body = {"exchange": ETH.exchange, "market": ETH.market}
        requests.post(f"{server.url}/v1/subscriptions", headers={"X-API-Key": key}, json=body, timeout=10)
        asyncio.run(_publish(url))
        yield server, key
    finally:
        server.stop()


async def test_no_key_reaches_a_log_or_an_answer(logged: tuple[ServerProcess, str]) -> None:
    server, key = logged
    secrets = [key, FAKE, ADMIN_KEY]
    answers: list[str] = []
    async with aiohttp.ClientSession() as http:

        async def ask(method: str, path: str, **kwargs: object) -> None:
            base = server.urls["LADDER_COMPAT_URL"] if path.startswith("/get_") else server.url
            async with http.request(method, base + path, **kwargs) as r:  # type: ignore[arg-type]
                answers.append(f"{r.status} {dict(r.headers)} {await r.text()}")

        for secret in secrets:
            for headers in (
                {"Authorization": f"Bearer {secret}"}, {"X-API-Key": secret}, {"X-API-Key": secret + "x"},
                {"X-API-Key": key, "X-Request-ID": secret}, {"X-API-Key": key, "User-Agent": secret},
                {"X-API-Key": key, "Cookie": f"k={secret}", "Referer": f"http://x/?api_key={secret}"},
                {"X-API-Key": key, "X-Anything": secret},
            ):  # fmt: skip
                await ask("GET", "/v1/books/binance.com/ETHBTC", headers=headers)
            mine = {"X-API-Key": key}
            await ask("GET", f"/v1/books/binance.com/ETHBTC?api_key={secret}")
            await ask("GET", f"/v1/books/binance.com/{secret}", headers=mine)
            await ask("GET", f"/v1/books/{secret}/ETHBTC", headers=mine)
            await ask("GET", f"/v1/books?exchange=binance.com&markets=ETHBTC,{secret}", headers=mine)
            await ask("GET", f"/v1/stream?exchange=binance.com&market={secret}", headers=mine)
            await ask("DELETE", f"/v1/keys/{secret}", headers=mine)
            await ask("DELETE", f"/v1/subscriptions/binance.com/{secret}", headers=mine)
            await ask(
                "POST", "/v1/subscriptions", headers=mine, json={"exchange": "binance.com", "market": secret}
            )
            await ask(
                "POST", "/v1/subscriptions", headers=mine, json={"exchange": secret, "market": "ETHBTC"}
            )
            await ask("POST", "/v1/subscriptions", headers=mine, json={secret: 1})
            await ask("POST", "/v1/subscriptions", headers=mine, data=f'{{"market": "{secret}"')
            await ask(
                "GET", f"/v1/admin/audit?before={secret}&scope={secret}", headers={"X-API-Key": ADMIN_KEY}
            )
            await ask("GET", f"/get_asks?exchange=binance.com&market={secret}")
            await ask("GET", f"/get_asks?exchange={secret}&market=ETHBTC&api_key={secret}")
            await _websocket(server.url, key, secret, answers)
    await asyncio.sleep(1.5)  # whatever the worker logs about these in the background
    server.stop()
    lines = server.output
    assert any(" read DEBUG " in line for line in lines), "the server logged at DEBUG"
    for secret in secrets:
        body = secret.removeprefix("ldr_")
        assert not [line for line in lines if body in line], f"{secret[:8]}... in the log"
        assert not [answer for answer in answers if body in answer], f"{secret[:8]}... in an answer"


async def _websocket(url: str, key: str, secret: str, answers: list[str]) -> None:
    """The secret as a subprotocol (without ladder.v1, and beside it), in frames, as a close reason."""
    for protocols in (f"ladder.key.{secret}", f"ladder.v1, ladder.key.{secret}", f"{secret}"):
        async with connect(url) as (reader, writer):
            writer.write(upgrade("", f"Sec-WebSocket-Protocol: {protocols}"))
            reply = await read_reply(reader)
            answers.append(f"{reply.status} {reply.headers} {reply.body!r}")
    for frames in (
        client_frame(TEXT, secret.encode()),
        client_frame(BINARY, secret.encode()),
        client_frame(TEXT, secret.encode(), mask=False),
        client_frame(CLOSE, b"\x0f\xa0" + secret.encode()),
    ):
        async with connect(url) as (reader, writer):
            writer.write(upgrade(key, path=f"{STREAM}&depth=5"))
            reply = await read_reply(reader)
            assert reply.status == 101
            answers.append(str(await read_frame(reader)))
            writer.write(frames)
            if frames[0] & 0x0F == CLOSE or not frames[1] & 0x80:
                answers.append(str(await read_close(reader)))
