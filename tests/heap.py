"""What of a frozen heap only the collector could free: the check behind the heap tests of the
ingest node and the read worker (see ``ladder_process/heap.py``)."""

from __future__ import annotations

import gc
from collections import Counter


def cyclic_garbage_of(frozen: set[int], modules: tuple[str, ...]) -> Counter[str]:
    """Types (from ``modules``) of what, among the objects whose ids are ``frozen``, only the
    collector can free. Unfreezes the heap."""
    gc.unfreeze()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        return Counter(
            f"{type(o).__module__}.{type(o).__qualname__}"
            for o in gc.garbage
            if id(o) in frozen and type(o).__module__.startswith(modules)
        )
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
