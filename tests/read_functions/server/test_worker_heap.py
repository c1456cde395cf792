"""A read worker keeps its heap frozen (``ladder_process.heap``): what it retires must not need the collector.

A frozen object that later becomes part of an unreachable cycle is only reclaimed by a thawing
round, minutes later. A worker freezes what is alive at each round, so every connection and
stream that lived through a round must be freed by reference counting alone once it closes. The
test runs the read API over a real Valkey, opens keep-alive connections and WebSocket streams
(compressed and not), freezes the heap, closes them and asks the collector what of the frozen heap
it would have had to reclaim.
"""

from __future__ import annotations

import asyncio
import gc
from collections import Counter

import aiohttp

from tests.heap import cyclic_garbage_of
from tests.read_functions.helpers import ETH, Stack, snapshot

OURS = ("read_functions.", "book_store.", "httptools")
BOOK = "/v1/books/binance.com/ETHBTC"
STREAM = "/v1/stream?exchange=binance.com&market=ETHBTC"


async def test_closed_connections_and_streams_leave_no_cyclic_garbage(stack: Stack) -> None:
    headers = await stack.subscriber(ETH)
    await stack.publish(ETH, 0, snapshot(3))
    sessions = [aiohttp.ClientSession() for _ in range(6)]
    try:
        for session in sessions:
            async with session.get(stack.url + BOOK, headers=headers) as r:
                assert r.status == 200  # each session keeps its connection open
        sockets = [
            await session.ws_connect(stack.url + STREAM, headers=headers, compress=15 if i % 2 else 0)
            for i, session in enumerate(sessions[:4])
        ]
        for socket in sockets:
            assert (await asyncio.wait_for(socket.receive_json(), 5))["update_id"] == 3
        gc.collect()
        frozen = {id(o) for o in gc.get_objects()}
        await stack.publish(ETH, 0, snapshot(4))
        for socket in sockets:
            assert (await asyncio.wait_for(socket.receive_json(), 5))["update_id"] == 4
            await socket.close()
    finally:
        for session in sessions:
            await session.close()
    await asyncio.sleep(0.5)  # the server sees every close
    assert cyclic_garbage_of(frozen, OURS) == Counter()
