from collections.abc import Iterator

import pytest

from tests.e2e.stack import Stack, start_stack


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    """One whole stack per test session (xdist worker): fake venue, control, 2 ingest nodes, read API."""
    running = start_stack()
    yield running
    running.stop()
