"""The public surface: pinned names, docstrings everywhere, twin clients, no server imports."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import ladder_sdk
from ladder_sdk import AsyncLadder, AsyncLadderAdmin, Ladder, LadderAdmin

PUBLIC = {
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
    "BookRead",
    "BookNotSyncedError",
    "BookTooOldError",
    "BookUnavailableError",
    "ClusterBook",
    "BulkResult",
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
    "Level",
    "LeftOut",
    "LimitExceededError",
    "LocalBook",
    "Market",
    "MarketResult",
    "MergedBook",
    "Node",
    "NodeAssignment",
    "PairResult",
    "NotFoundError",
    "OutOfSync",
    "PermissionDeniedError",
    "RateLimitError",
    "ReplicaState",
    "RetryPolicy",
    "Subscription",
    "Tenant",
    "Top",
    "Timeout",
    "Usage",
    "UsageLimits",
    "UsageMinute",
    "__version__",
}

SERVER_PACKAGES = {"book_store", "ingest_nodes", "control_plane", "read_functions", "fake_venue", "bench"}


def test_all_is_pinned() -> None:
    assert set(ladder_sdk.__all__) == PUBLIC
    assert len(ladder_sdk.__all__) == len(PUBLIC)
    assert ladder_sdk.__version__ == "0.1.0"


def public_members(cls: type) -> dict[str, object]:
    return {name: member for name, member in inspect.getmembers(cls) if not name.startswith("_")}


def test_every_public_name_and_method_has_a_docstring() -> None:
    for name in PUBLIC - {"__version__"}:
        value = getattr(ladder_sdk, name)
        assert inspect.getdoc(value), name
        if isinstance(value, type):
            for member_name, member in public_members(value).items():
                if callable(member) or isinstance(member, property):
                    assert inspect.getdoc(member), f"{name}.{member_name}"


def test_the_async_clients_are_twins_of_the_sync_ones() -> None:
    for sync, asynchronous in ((Ladder, AsyncLadder), (LadderAdmin, AsyncLadderAdmin)):
        sync_methods = public_members(sync)
        async_methods = public_members(asynchronous)
        assert set(sync_methods) - {"close"} == set(async_methods) - {"aclose"}
        for name, method in sync_methods.items():
            if name in ("close", "base_url"):
                continue
            twin = async_methods[name]
            assert inspect.signature(method).parameters == inspect.signature(twin).parameters, name  # type: ignore[arg-type]
            if name not in ("stream", "watch"):  # async generators, iterated with async for
                assert inspect.iscoroutinefunction(twin), name


def test_the_sdk_imports_nothing_of_the_server() -> None:
    package = Path(ladder_sdk.__file__).parent
    for source in package.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = {node.module.split(".")[0]}
            else:
                continue
            assert not roots & SERVER_PACKAGES, f"{source.name} imports {roots & SERVER_PACKAGES}"


def test_the_package_ships_its_type_marker() -> None:
    assert (Path(ladder_sdk.__file__).parent / "py.typed").is_file()
