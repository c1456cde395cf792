"""Small client-side helpers the fake venue's tests share: reading frames, control calls, Decimal books."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import aiohttp

from fake_venue import FakeVenue


async def control(http: aiohttp.ClientSession, fake: FakeVenue, /, **params: Any) -> dict[str, Any]:
    """POST one control action; ``params`` is the JSON body (``action``, ``venue``, ...)."""
    async with http.post(fake.url + "/_fake/control", json=params) as response:
        body: dict[str, Any] = await response.json()
        assert response.status == 200, body
        return body


async def get_json(http: aiohttp.ClientSession, url: str) -> tuple[int, Any, Any]:
    async with http.get(url) as response:
        return response.status, response.headers, await response.json(content_type=None)


async def next_json(ws: aiohttp.ClientWebSocketResponse, seconds: float = 3.0) -> Any:
    """The next text frame, decoded with exact decimals; fails on anything else."""
    message = await ws.receive(timeout=seconds)
    assert message.type == aiohttp.WSMsgType.TEXT, message
    return json.loads(message.data, parse_float=Decimal)


async def next_event(ws: aiohttp.ClientWebSocketResponse, seconds: float = 3.0) -> dict[str, Any]:
    """The next depth event's payload (unwrapping the combined form), skipping acks."""
    while True:
        message = await next_json(ws, seconds)
        if "data" in message:
            message = message["data"]
        if message.get("e") == "depthUpdate":
            return message  # type: ignore[no-any-return]


class DecimalBook:
    """A client's book kept the naive way: Decimal price -> Decimal quantity per side."""

    def __init__(self, bids: list[list[Any]], asks: list[list[Any]]) -> None:
        self.bids = {Decimal(p): Decimal(q) for p, q in bids}
        self.asks = {Decimal(p): Decimal(q) for p, q in asks}

    def apply(self, bids: list[list[Any]], asks: list[list[Any]]) -> None:
        for side, levels in ((self.bids, bids), (self.asks, asks)):
            for price, qty in levels:
                if Decimal(qty) == 0:
                    side.pop(Decimal(price), None)
                else:
                    side[Decimal(price)] = Decimal(qty)

    def copy(self) -> DecimalBook:
        other = DecimalBook([], [])
        other.bids, other.asks = dict(self.bids), dict(self.asks)
        return other

    def same_as(self, other: DecimalBook) -> bool:
        return self.bids == other.bids and self.asks == other.asks

    @property
    def crossed(self) -> bool:
        return bool(self.bids and self.asks) and max(self.bids) >= min(self.asks)
