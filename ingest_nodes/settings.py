"""Configuration of an ingest node (``ladder ingest``), read once from ``LADDER_*`` variables."""

from __future__ import annotations

import os
import secrets
import socket
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from control_plane.scheduling.venue_credentials import credential_pool
from ingest_nodes.core.stall_watch import StallPolicy
from ingest_nodes.venues.credentials import Credential


def _default_node_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"


class IngestSettings(BaseSettings):
    """One frozen settings object per ingest process."""

    model_config = SettingsConfigDict(env_prefix="LADDER_", frozen=True, extra="ignore", strict=False)

    redis_url: str = Field(description="The book store (Valkey/Redis); required for this process.")
    redis_password: SecretStr | None = Field(default=None, description="AUTH token, when not in the URL.")
    redis_cluster: bool | None = Field(
        default=None,
        description="Whether the book store is a Valkey/Redis Cluster (unset: ask the node of the URL).",
    )
    control_redis_url: str | None = Field(
        default=None, description="The control store (assignments), when it is not the book store."
    )
    node_id: str = Field(default_factory=_default_node_id)
    capacity: int = Field(default=5000, ge=1, description="Most book replicas this node keeps.")
    exchanges: str = Field(
        default="binance.com,binance.com-futures",
        description="Comma-separated exchange ids this node serves.",
    )

    binance_spot_rest_url: str = "https://api.binance.com"
    binance_spot_ws_url: str = "wss://stream.binance.com:9443"
    binance_futures_rest_url: str = "https://fapi.binance.com"
    binance_futures_ws_url: str = "wss://fstream.binance.com/public"
    binance_spot_testnet_rest_url: str = "https://testnet.binance.vision"
    binance_spot_testnet_ws_url: str = "wss://stream.testnet.binance.vision"
    binance_futures_testnet_rest_url: str = "https://demo-fapi.binance.com"
    binance_futures_testnet_ws_url: str = "wss://fstream.binancefuture.com"
    binance_us_rest_url: str = "https://api.binance.us"
    binance_us_ws_url: str = "wss://stream.binance.us:9443"
    alpaca_stream_url: str = Field(
        default="wss://stream.data.alpaca.markets",
        description="Alpaca's market-data stream base (sandbox: wss://stream.data.sandbox.alpaca.markets).",
    )
    alpaca_location: Literal["us", "us-1", "eu-1"] = Field(
        default="us", description="The crypto feed: us (Alpaca), us-1 (Kraken US), eu-1 (Kraken EU)."
    )
    alpaca_trading_url: str = Field(
        default="https://api.alpaca.markets",
        description="Alpaca's trading API, for the asset list (paper: https://paper-api.alpaca.markets).",
    )
    kraken_rest_url: str = Field(
        default="https://api.kraken.com", description="Kraken's REST API (the pair list)."
    )
    kraken_ws_url: str = Field(
        default="wss://ws.kraken.com", description="Kraken's public WebSocket base; the v2 API is at /v2."
    )
    coinbase_rest_url: str = Field(
        default="https://api.coinbase.com",
        description="Coinbase Advanced Trade's REST API (the product list).",
    )
    coinbase_ws_url: str = Field(
        default="wss://advanced-trade-ws.coinbase.com",
        description="Coinbase Advanced Trade's public market-data WebSocket (no key, no JWT).",
    )
    alpaca_key_id: SecretStr | None = Field(default=None, description="One Alpaca API key id ...")
    alpaca_secret_key: SecretStr | None = Field(default=None, description="... and its secret.")
    alpaca_credentials: SecretStr | None = Field(
        default=None,
        description="A pool of Alpaca keys, 'KEY_ID:SECRET,KEY_ID:SECRET' (in AWS from Secrets Manager).",
    )

    okx_rest_url: str = "https://www.okx.com"
    okx_ws_url: str = Field(
        default="wss://ws.okx.com:8443", description="OKX's WebSocket base; /ws/v5/public is added."
    )
    bybit_rest_url: str = Field(default="https://api.bybit.com", description="Bybit spot's REST base.")
    bybit_linear_rest_url: str = Field(
        default="https://api.bybit.com", description="Bybit linear's REST base (the venue: the same host)."
    )
    bybit_spot_ws_url: str = "wss://stream.bybit.com/v5/public/spot"
    bybit_linear_ws_url: str = "wss://stream.bybit.com/v5/public/linear"

    head_levels: int = Field(
        default=100, ge=1, le=5000, description="Levels a side published on every update (the head)."
    )
    deep_levels_per_s: int = Field(
        default=2000,
        ge=100,
        description="A book deeper than the head rewrites its deep snapshot at this rate.",
    )
    publish_interval_ms: int = Field(default=0, ge=0, description="0 publishes every applied update.")
    keepalive_ms: int = Field(
        default=1000, ge=50, description="The node's heartbeat vouches for its quiet books this often."
    )
    quiet_keepalive_ms: int = Field(
        default=30_000,
        ge=50,
        description="Republish a quiet synced book this often (the node's heartbeat vouches in between).",
    )
    resyncing_keepalive_ms: int = Field(
        default=4000, ge=50, description="Republish a book that is not synced this often."
    )
    stale_after_ms: int = Field(
        default=60_000,
        ge=100,
        description="Suspect silence whose stall check failed (venue unreachable) this long -> stale.",
    )
    lag_stale_ms: int = Field(
        default=5000,
        ge=100,
        description="A synced book whose events reach the node this much later than its best is published "
        "stale until they come within half of it (ingest_nodes/core/lag.py).",
    )
    shed_lag_ms: int = Field(
        default=1000,
        ge=50,
        description="While the node's books run this much later than its best, it publishes each book at "
        "most every shed_publish_ms and defers refreshes and audits.",
    )
    shed_publish_ms: int = Field(default=250, ge=0, description="A book's publish interval while shedding.")
    streams_per_connection: int = Field(default=200, ge=1, le=1024)
    connection_max_age_s: float = Field(
        default=85_800, gt=0, description="Hand a connection's books to a successor at this age (venue: 24h)."
    )
    rollover_jitter: float = Field(
        default=0.02, ge=0, le=0.5, description="Hand over up to this share of the age earlier, at random."
    )
    handover_timeout_s: float = Field(
        default=30.0, gt=0, description="Books not spliced onto the successor by then resync."
    )
    snapshot_concurrency: int = Field(
        default=32, ge=1, le=256, description="Snapshot requests in flight per exchange."
    )
    max_buffer: int = Field(
        default=10_000, ge=1, description="Events buffered per book while its snapshot is on its way."
    )
    resnapshot_interval_s: float = Field(
        default=3600.0,
        ge=0,
        description="Audit each synced book against a fresh snapshot this often (0: never).",
    )
    checkpoint_every: int = Field(
        default=64, ge=0, description="Checkpoint about one update id in this many (0: no replica checks)."
    )
    checkpoint_levels: int = Field(default=20, ge=1, le=1000, description="Levels a side in a checkpoint.")
    replica_check_interval_s: float = Field(default=5.0, gt=0)
    stream_snapshot_wait_ms: int = Field(
        default=10_000,
        ge=100,
        description="A book of a venue that sends snapshots on the stream (Alpaca, Kraken, Coinbase) "
        "still without one this long after it began waiting is subscribed again.",
    )
    resync_on_mismatch: bool = Field(
        default=True, description="A replica outside the majority at a mismatch resyncs."
    )
    stats_interval_s: float = Field(default=2.0, gt=0, description="Counters are written to the store.")
    catalog_refresh_s: float = Field(default=300.0, gt=0)
    weight_budget_share: float = Field(
        default=0.8, gt=0, le=1, description="Part of the venue's weight to use."
    )
    background_weight_share: float = Field(
        default=0.5, gt=0, le=1, description="Part of that budget refreshes and audits may use."
    )
    stall_check_share: float = Field(
        default=0.1, gt=0, le=1, description="Part of that budget stall checks may use (see stall_checks)."
    )
    stall_factor: int = Field(
        default=3, ge=1, description="Silence this many times a book's rhythm is suspect."
    )
    stall_floor_ms: int = Field(default=1000, ge=10, description="Never suspect before this much silence.")
    stall_unknown_ms: int = Field(
        default=10_000, ge=10, description="Suspect silence of a book with no gap yet."
    )
    stall_ceiling_ms: int = Field(
        default=1_800_000,
        ge=10,
        description="Always suspect after this much silence, however quiet the book.",
    )
    stall_grace_ms: int = Field(
        default=300, ge=0, description="A venue id ahead of ours has this long to arrive."
    )
    egress_id: str = Field(default="default", description="Nodes with one egress IP share one budget.")
    heartbeat_ms: int = Field(default=500, ge=50)
    node_timeout_ms: int = Field(
        default=3000,
        ge=100,
        description=(
            "The control plane's node timeout (the same variable): a node that could not heartbeat "
            "for half of it stops publishing until it has re-read its assignments."
        ),
    )
    drain_timeout_s: float = Field(default=30.0, ge=0)

    @property
    def alpaca_keys(self) -> list[Credential]:
        """Every configured Alpaca key (see ``control_plane.scheduling.venue_credentials``)."""
        pool = credential_pool(self.alpaca_key_id, self.alpaca_secret_key, self.alpaca_credentials)
        return [Credential(key_id, secret) for key_id, secret in pool]

    @property
    def stall_policy(self) -> StallPolicy:
        return StallPolicy(
            factor=self.stall_factor,
            floor_ms=self.stall_floor_ms,
            unknown_ms=self.stall_unknown_ms,
            ceiling_ms=self.stall_ceiling_ms,
            grace_ms=self.stall_grace_ms,
        )

    @property
    def exchange_ids(self) -> list[str]:
        return [e.strip() for e in self.exchanges.split(",") if e.strip()]
