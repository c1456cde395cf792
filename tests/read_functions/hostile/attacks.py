"""What a hostile client does to the server under test: floods, stalls, and the bill for them."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tests.read_functions.wire import Reply, connect, read_reply

MIB = 1024 * 1024


@dataclass(frozen=True)
class Target:
    """The server under attack: its URLs, its worker's pid and a tenant key that reads ``BOOK``."""

    url: str
    compat_url: str
    pid: int
    key: str

    def rss_bytes(self) -> int:
        """The worker's resident set now."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def alive(self) -> bool:
        return Path(f"/proc/{self.pid}").exists()


@dataclass(frozen=True)
class Outcome:
    """The answer to an attack, how long after its first byte it came, what the worker grew by."""

    reply: Reply
    seconds: float
    rss_growth: int  # bytes
    sent: int  # bytes the attacker got into the connection before it was refused


async def flood(
    target: Target, start: bytes, pieces: Iterable[bytes], total: int, *, within_s: float = 10.0
) -> Outcome:
    """Send ``start``, then ``pieces`` (at most ``total`` bytes in all) while awaiting the answer.

    The answer is read while the flood goes on, as a server that stops reading must still answer.
    """
    before = target.rss_bytes()
    async with connect(target.url) as (reader, writer):
        began = time.monotonic()
        sent = 0

        async def pour() -> None:
            nonlocal sent
            writer.write(start)
            sent = len(start)
            with contextlib.suppress(ConnectionError):
                for piece in pieces:
                    if sent >= total:
                        break
                    writer.write(piece)
                    sent += len(piece)
                    await writer.drain()
                    await asyncio.sleep(0)  # an attacker that reads its answer as it comes

        pouring = asyncio.create_task(pour())
        try:
            reply = await read_reply(reader, within_s=within_s)
            seconds = time.monotonic() - began
        finally:
            pouring.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pouring
    return Outcome(reply, seconds, target.rss_bytes() - before, sent)
