"""Pure order-book sync state machines, one per venue protocol (no I/O, no clock).

Each machine takes events (``receive_update``, ``receive_snapshot``, ``receive_disconnect``,
``invalidate``) and answers with a list of actions for its caller to execute in order.
"""

from __future__ import annotations

from ingest_nodes.core.sync._stream_chain import StreamChainMachine
from ingest_nodes.core.sync.actions import (
    Action,
    ApplyUpdate,
    FetchSnapshot,
    LoadSnapshot,
    ResyncRequired,
    Truncate,
    VerifyChecksum,
)
from ingest_nodes.core.sync.alpaca import AlpacaSyncMachine
from ingest_nodes.core.sync.binance.futures import FuturesSyncMachine
from ingest_nodes.core.sync.binance.spot import SpotSyncMachine
from ingest_nodes.core.sync.bybit import BybitSyncMachine
from ingest_nodes.core.sync.coinbase import CoinbaseSyncMachine
from ingest_nodes.core.sync.kraken import KrakenSyncMachine
from ingest_nodes.core.sync.okx import OkxSyncMachine
from ingest_nodes.core.sync.state import SyncState

SyncMachine = SpotSyncMachine | FuturesSyncMachine | AlpacaSyncMachine | StreamChainMachine

__all__ = [
    "Action",
    "AlpacaSyncMachine",
    "ApplyUpdate",
    "BybitSyncMachine",
    "CoinbaseSyncMachine",
    "FetchSnapshot",
    "FuturesSyncMachine",
    "KrakenSyncMachine",
    "LoadSnapshot",
    "OkxSyncMachine",
    "ResyncRequired",
    "SpotSyncMachine",
    "StreamChainMachine",
    "SyncMachine",
    "SyncState",
    "Truncate",
    "VerifyChecksum",
]
