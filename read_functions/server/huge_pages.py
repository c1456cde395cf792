"""Huge pages for the read server's heap: fewer TLB misses when reads spread over many books.

Why: a read of a book that no recent read touched reaches a dozen objects and a few kilobytes of
levels spread over a heap of tens of megabytes. With 4 KiB pages most of those reaches also miss
the TLB, and inside a virtual machine a TLB miss is a two-level page walk. glibc can ask the kernel
for transparent huge pages (2 MiB) for the memory it allocates (``glibc.malloc.hugetlb=1``, glibc
2.35+), which holds the snapshots as they arrived, the hash tables of the per-book dicts and sets,
and every other object over 512 bytes. It makes random-market reads cheaper and leaves hot-market
reads as they are (the measurements are in bench/README.md; ``LADDER_HUGE_PAGES=false ladder bench
read`` measures without it).

glibc reads its tunables only when a process starts, so the server, started as a program,
re-executes itself once with the tunable added to ``GLIBC_TUNABLES`` (same process id, same
arguments), before it binds a socket or starts a worker. Nothing happens where it cannot help:
off Linux, when the kernel's transparent huge pages are ``never``, when the tunable is already
set, or when ``LADDER_HUGE_PAGES=false``. Older glibc versions ignore an unknown tunable.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

TUNABLE = "glibc.malloc.hugetlb=1"
THP_MODE = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def environment_with_huge_pages(env: Mapping[str, str], thp_mode: str | None) -> dict[str, str] | None:
    """``env`` with the tunable added, or None when a restart would change nothing.

    ``thp_mode`` is the content of :data:`THP_MODE` (``always [madvise] never``), None if absent.
    """
    if thp_mode is None or "[never]" in thp_mode:
        return None
    tunables = env.get("GLIBC_TUNABLES", "")
    if "glibc.malloc.hugetlb=" in tunables:
        return None  # already asked for, or deliberately set to another value
    return {**env, "GLIBC_TUNABLES": f"{tunables}:{TUNABLE}" if tunables else TUNABLE}


def thp_mode() -> str | None:
    """This kernel's transparent huge pages mode (the content of :data:`THP_MODE`), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return THP_MODE.read_text()
    except OSError:
        return None


def restart_with_huge_pages() -> None:
    """Re-execute this program with huge pages for its heap, if that would change anything."""
    env = environment_with_huge_pages(os.environ, thp_mode())
    if env is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, sys.orig_argv, env)  # noqa: S606 - this very program, re-run
