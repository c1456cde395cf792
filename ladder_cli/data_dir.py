"""The data directory of ``ladder up``: where it is, what it holds, who uses it, how to empty it.

``ladder up`` keeps the control store's append-only file (tenants, API key hashes,
subscriptions) and the stores' generated password in one directory, so an operator's tenants and
keys survive a restart. Live and demo runs keep theirs apart by default (``.ladder/live``,
``.ladder/demo``): a tenant made against the real venue never turns up in the demo. ``ladder up``
says at start which directory it uses and what it found there, and holds an exclusive lock on it
while it runs, so that a second ``ladder up`` or a ``ladder reset`` cannot pull it from under it.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
from pathlib import Path
from typing import IO

ROOT = Path(".ladder")
DEFAULT_DIRS = {"binance": ROOT / "live", "fake": ROOT / "demo"}
"""Each venue's default data directory, relative to where ``ladder up`` runs."""
LOCK_FILE = "ladder-up.lock"
_OLD_LAYOUT = ROOT / "valkey"
"""Where versions before live and demo were kept apart kept the control store."""


class DataDirInUseError(RuntimeError):
    """Another process (a running ``ladder up``) holds the data directory."""


def default_data_dir(venue: str) -> Path:
    return DEFAULT_DIRS[venue]


def hold(data_dir: Path) -> IO[str]:
    """Lock ``data_dir`` for this process's lifetime (the lock goes with the returned file, or the
    process); DataDirInUseError when another ``ladder up`` holds it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    lock = (data_dir / LOCK_FILE).open("a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise DataDirInUseError(
            f"{data_dir} is in use by another `ladder up`: stop it first, or give --data-dir"
        ) from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return lock


def old_layout_notice(data_dir: Path) -> str | None:
    """A line about control data an earlier version left in ``.ladder/`` itself, when ``data_dir`` is
    a default directory that is still empty (that data mixes live and demo tenants)."""
    if data_dir not in DEFAULT_DIRS.values() or (data_dir / "valkey").exists() or not _OLD_LAYOUT.exists():
        return None
    return (
        f"Note: {_OLD_LAYOUT} holds the tenants of an earlier version, which kept live and demo runs "
        f"together; {data_dir} starts empty. To keep them here: stop, then "
        f"`mv {_OLD_LAYOUT} {ROOT / 'store-password'} {data_dir}/`."
    )


def describe(data_dir: Path, tenants: list[str], reset_command: str) -> str:
    """The line ``ladder up`` prints about its data directory once the control store answers."""
    if tenants:
        shown = ", ".join(tenants[:5]) + (f" and {len(tenants) - 5} more" if len(tenants) > 5 else "")
        held = f"{len(tenants)} tenant{'s' if len(tenants) != 1 else ''} from earlier runs ({shown})"
    else:
        held = "no tenants yet"
    return (
        f"Data directory {data_dir}: the control store (tenants, API key hashes, subscriptions, kept "
        f"across runs; {held}) and the stores' password. `{reset_command}` starts afresh."
    )


def tenant_names(store_env: dict[str, str]) -> list[str]:
    """The names of the tenants in the control store ``store_env`` leads to, oldest first."""
    from control_plane.bootstrap import open_control_store
    from control_plane.settings import ControlSettings

    settings = ControlSettings(
        redis_url=store_env["LADDER_REDIS_URL"], control_redis_url=store_env["LADDER_CONTROL_REDIS_URL"]
    )

    async def names() -> list[str]:
        async with open_control_store(settings) as store:
            return [t.name for t in await store.list_tenants()]

    return asyncio.run(names())


def reset(data_dir: Path) -> bool:
    """Delete ``data_dir`` (False when there was nothing to delete); DataDirInUseError while a
    ``ladder up`` holds it."""
    if not data_dir.exists():
        return False
    lock = hold(data_dir)
    try:
        shutil.rmtree(data_dir)
    finally:
        lock.close()
    return True
