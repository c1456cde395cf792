"""Scripted sequences for the sync machines: feed inputs one by one and assert the exact actions.

drive(SpotSyncMachine(),
      (upd(157, 160), [FetchSnapshot()]),
      (snap(158), [LoadSnapshot(snap(158)), ApplyUpdate(upd(157, 160))]))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ingest_nodes.core.events import DepthSnapshot, DepthUpdate, Level
from ingest_nodes.core.sync import Action, SyncMachine


@dataclass(frozen=True)
class Disconnect:
    """Input: the stream connection was lost."""


@dataclass(frozen=True)
class Invalidate:
    """Input: the caller invalidates the book."""

    reason: str


Input = DepthUpdate | DepthSnapshot | Disconnect | Invalidate


def upd(
    first: int,
    final: int,
    *,
    pu: int | None = None,
    bids: Sequence[Level] = (),
    asks: Sequence[Level] = (),
    symbol: str = "BTCUSDT",
    event_time: int = 0,
    ingest_time: int = 0,
) -> DepthUpdate:
    """A Binance diff event covering ids ``[first, final]``."""
    return DepthUpdate(
        symbol=symbol,
        first_update_id=first,
        final_update_id=final,
        prev_final_update_id=pu,
        event_time=event_time,
        ingest_time=ingest_time,
        bids=tuple(bids),
        asks=tuple(asks),
    )


def snap(
    last_update_id: int,
    *,
    bids: Sequence[Level] = (),
    asks: Sequence[Level] = (),
    limit: int = 1000,
    symbol: str = "BTCUSDT",
    event_time: int | None = None,
    ingest_time: int = 0,
) -> DepthSnapshot:
    """A Binance REST snapshot at ``last_update_id``."""
    return DepthSnapshot(
        symbol=symbol,
        last_update_id=last_update_id,
        bids=tuple(bids),
        asks=tuple(asks),
        limit=limit,
        event_time=event_time,
        ingest_time=ingest_time,
    )


def unnumbered(
    symbol: str,
    *,
    bids: Sequence[Level],
    asks: Sequence[Level],
    reset: bool,
    event_time: int,
    limit: int = 0,
    checksum: int | None = None,
) -> DepthUpdate:
    """A message of a venue that numbers no book's messages (Alpaca, Kraken, Coinbase)."""
    return DepthUpdate(
        symbol=symbol,
        first_update_id=0,
        final_update_id=0,
        prev_final_update_id=None,
        event_time=event_time,
        ingest_time=event_time,
        bids=tuple(bids),
        asks=tuple(asks),
        reset=reset,
        limit=limit,
        checksum=checksum,
    )


def alpaca(
    *, bids: Sequence[Level] = (), asks: Sequence[Level] = (), reset: bool = False, event_time: int = 0
) -> DepthUpdate:
    """An Alpaca ``"o"`` message (no ids)."""
    return unnumbered("BTC/USD", bids=bids, asks=asks, reset=reset, event_time=event_time)


def okx(
    prev: int,
    seq: int,
    *,
    bids: Sequence[Level] = (),
    asks: Sequence[Level] = (),
    limit: int = 400,
    symbol: str = "BTC-USDT",
    event_time: int = 0,
) -> DepthUpdate:
    """An OKX ``books`` message: ``prevSeqId`` -1 makes it a snapshot, anything else an update."""
    return DepthUpdate(
        symbol=symbol,
        first_update_id=seq,
        final_update_id=seq,
        prev_final_update_id=prev,
        event_time=event_time,
        ingest_time=event_time,
        bids=tuple(bids),
        asks=tuple(asks),
        reset=prev == -1,
        limit=limit if prev == -1 else 0,
    )


def bybit(
    u: int,
    *,
    snapshot: bool = False,
    bids: Sequence[Level] = (),
    asks: Sequence[Level] = (),
    limit: int = 1000,
    symbol: str = "BTCUSDT",
    event_time: int = 0,
) -> DepthUpdate:
    """A Bybit ``orderbook`` message with update id ``u``, a ``snapshot`` or a ``delta``."""
    return DepthUpdate(
        symbol=symbol,
        first_update_id=u,
        final_update_id=u,
        prev_final_update_id=None,
        event_time=event_time,
        ingest_time=event_time,
        bids=tuple(bids),
        asks=tuple(asks),
        reset=snapshot,
        limit=limit if snapshot else 0,
    )


def kraken(
    *,
    bids: Sequence[Level] = (),
    asks: Sequence[Level] = (),
    snapshot: bool = False,
    checksum: int | None = None,
    limit: int = 0,
    event_time: int = 0,
) -> DepthUpdate:
    """A Kraken ``book`` message (no ids; a snapshot says the depth it was subscribed at)."""
    return unnumbered("BTC/USD", bids=bids, asks=asks, reset=snapshot, event_time=event_time,
                      limit=limit, checksum=checksum)  # fmt: skip


def coinbase(
    *, bids: Sequence[Level] = (), asks: Sequence[Level] = (), snapshot: bool = False, event_time: int = 0
) -> DepthUpdate:
    """One product's event of a Coinbase ``l2_data`` message (no ids of its own)."""
    return unnumbered("BTC-USD", bids=bids, asks=asks, reset=snapshot, event_time=event_time)


def feed(machine: SyncMachine, item: Input) -> list[Action]:
    """Hand one input to the machine through the matching entry point."""
    if isinstance(item, DepthUpdate):
        return machine.receive_update(item)
    if isinstance(item, DepthSnapshot):
        return machine.receive_snapshot(item)
    if isinstance(item, Disconnect):
        return machine.receive_disconnect()
    return machine.invalidate(item.reason)


def drive(machine: SyncMachine, *steps: tuple[Input, Sequence[Action]]) -> None:
    """Feed each step's input and assert that the machine answers exactly its actions."""
    for index, (item, expected) in enumerate(steps):
        state = machine.state
        actual = feed(machine, item)
        assert actual == list(expected), (
            f"step {index}: {item!r} in state {state.name}\n"
            f"  expected {list(expected)!r}\n  got      {actual!r}"
        )
