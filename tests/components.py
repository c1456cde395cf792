"""A Ladder component as its own process in a test (``python -m <package>``), stopped by SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ladder_cli.supervisor import child_env
from ladder_process.embedded_valkey import die_with_parent


@asynccontextmanager
async def component(
    package: str, *args: str, env: dict[str, str]
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``python -m <package> <args>`` with ``env`` beside ours, its output discarded (its log goes
    to our stderr); killed on the way out if it still runs."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", package, *args,
        env=child_env(**env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, preexec_fn=die_with_parent,
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def terminated(process: asyncio.subprocess.Process, within_s: float) -> int:
    """Send SIGTERM; the exit status (AssertionError if the process still runs ``within_s`` later)."""
    process.send_signal(signal.SIGTERM)
    try:
        return await asyncio.wait_for(process.wait(), within_s)
    except TimeoutError:
        raise AssertionError(f"still running {within_s:g} s after SIGTERM") from None
