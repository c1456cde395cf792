"""The compiled hot path, where it was built: ``SortedLevels`` and ``read_levels``, or None.

``ingest_nodes/core/_levels.c`` is built when Ladder is installed with a C compiler at hand (an
optional extension: without one, installing still succeeds). Where it is missing, or where
``LADDER_PURE_PYTHON=1`` asks for it, the pure-Python twins run instead (``levels.PyLevels``,
``venues/wire.levels``): they are the reference the compiled code is tested against, and they
decide the same things, only slower. ``describe`` names which runs, for the node's start-up log.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from ingest_nodes.core._levels import SortedLevels as SortedLevelsType
    from ingest_nodes.core.events import Level

ReadLevels: TypeAlias = Callable[[object], "tuple[Level, ...] | None"]
"""``_levels.levels``: see its docstring."""


def _load() -> tuple[type[SortedLevelsType] | None, ReadLevels | None]:
    if os.environ.get("LADDER_PURE_PYTHON", "") not in ("", "0"):
        return None, None
    try:
        from ingest_nodes.core._levels import SortedLevels, levels
    except ImportError:  # installed where no C compiler was at hand
        return None, None
    return SortedLevels, levels


SortedLevels, read_levels = _load()


def describe() -> str:
    """``"compiled"`` or ``"pure Python"``: which hot path this process runs."""
    return "compiled" if SortedLevels is not None else "pure Python"
