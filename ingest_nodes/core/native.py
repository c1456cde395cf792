"""The compiled level loops, where they were built: ``apply_plain`` and ``read_levels``, or None.

``ingest_nodes/core/_levels.c`` is built when Ladder is installed with a C compiler at hand (an
optional extension: without one, installing still succeeds). Where it is missing, or where
``LADDER_PURE_PYTHON=1`` asks for it, the pure-Python loops in ``book.py`` and ``venues/wire.py``
run instead: they are the reference the compiled ones are tested against, and they decide the same
things, only slower. ``describe`` names which runs, for the node's start-up log.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from ingest_nodes.core.events import Level

ApplyPlain: TypeAlias = Callable[
    [
        "tuple[Level, ...] | list[Level]",
        int,
        "dict[int, bytes]",
        "list[int]",
        bool,
        "list[tuple[int, int, bytes]] | None",
        int,
    ],
    int,
]
"""``_levels.apply_plain``: see its docstring."""
ReadLevels: TypeAlias = Callable[[object], "tuple[Level, ...] | None"]
"""``_levels.levels``: see its docstring."""


def _load() -> tuple[ApplyPlain | None, ReadLevels | None]:
    if os.environ.get("LADDER_PURE_PYTHON", "") not in ("", "0"):
        return None, None
    try:
        from ingest_nodes.core._levels import apply_plain, levels
    except ImportError:  # installed where no C compiler was at hand
        return None, None
    return apply_plain, levels


apply_plain, read_levels = _load()


def describe() -> str:
    """``"compiled"`` or ``"pure Python"``: which level loops this process runs."""
    return "compiled" if apply_plain is not None else "pure Python"
