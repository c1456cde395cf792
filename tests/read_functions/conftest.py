"""Read-API fixtures: an in-process server on a real port over the session's real Valkey."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as redis

from tests.read_functions.helpers import Stack, open_stack


@pytest.fixture
async def stack(clean_redis_url: str, redis_client: redis.Redis) -> AsyncIterator[Stack]:
    stack = await open_stack(clean_redis_url, redis_client)
    yield stack
    await stack.close()
