"""Python client for the Ladder order-book API.

    from ladder_sdk import Ladder

    with Ladder() as ladder:                      # LADDER_API_KEY, LADDER_BASE_URL
        ladder.subscribe("binance.com", "ETHBTC")
        book = ladder.book("binance.com", "ETHBTC", depth=10)
        print(book.best_bid, book.best_ask, book.spread)
        merged = ladder.consolidated("BTC-USDT", ["binance.com", "okx", "bybit"], depth=50)
        print(merged.cost_to_fill("buy", "3").average_price)

`AsyncLadder` is the same API for asyncio; `LadderAdmin` / `AsyncLadderAdmin` are the operator's.
Every error is a `LadderError`; the tree is drawn in `ladder_sdk._wire.errors`.
"""

from ._client.async_client import AsyncLadder, AsyncLadderAdmin
from ._client.config import Timeout
from ._client.local_book import LocalBook
from ._client.sync_client import Ladder, LadderAdmin
from ._version import VERSION as __version__
from ._wire.book import (
    Book,
    BookRead,
    ConsolidatedBook,
    ConsolidatedLevel,
    ConsolidatedTop,
    LeftOut,
    Level,
    MergedBook,
    Top,
)
from ._wire.errors import (
    APIConnectionError,
    APIResponseError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    BookNotSyncedError,
    BookTooOldError,
    BookUnavailableError,
    ConfigurationError,
    ConflictError,
    InternalServerError,
    LadderError,
    LimitExceededError,
    NotFoundError,
    OutOfSync,
    PermissionDeniedError,
    RateLimitError,
)
from ._wire.fill import Fill, FillLevel
from ._wire.models import (
    Account,
    ApiKey,
    AuditEntry,
    BulkResult,
    ClusterBook,
    CreatedKey,
    EgressBudget,
    Market,
    MarketResult,
    Node,
    NodeAssignment,
    PairResult,
    ReplicaState,
    Subscription,
    Tenant,
    Usage,
    UsageLimits,
    UsageMinute,
)
from ._wire.retry import RetryPolicy

__all__ = [
    "APIConnectionError",
    "APIResponseError",
    "APIStatusError",
    "APITimeoutError",
    "Account",
    "ApiKey",
    "AsyncLadder",
    "AsyncLadderAdmin",
    "AuditEntry",
    "AuthenticationError",
    "BadRequestError",
    "Book",
    "BookNotSyncedError",
    "BookRead",
    "BookTooOldError",
    "BookUnavailableError",
    "BulkResult",
    "ClusterBook",
    "ConfigurationError",
    "ConflictError",
    "ConsolidatedBook",
    "ConsolidatedLevel",
    "ConsolidatedTop",
    "CreatedKey",
    "EgressBudget",
    "Fill",
    "FillLevel",
    "InternalServerError",
    "Ladder",
    "LadderAdmin",
    "LadderError",
    "LeftOut",
    "Level",
    "LimitExceededError",
    "LocalBook",
    "Market",
    "MarketResult",
    "MergedBook",
    "Node",
    "NodeAssignment",
    "NotFoundError",
    "OutOfSync",
    "PairResult",
    "PermissionDeniedError",
    "RateLimitError",
    "ReplicaState",
    "RetryPolicy",
    "Subscription",
    "Tenant",
    "Timeout",
    "Top",
    "Usage",
    "UsageLimits",
    "UsageMinute",
    "__version__",
]
