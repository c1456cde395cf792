"""Types of the compiled level loops (ingest_nodes/core/_levels.c)."""

from ingest_nodes.core.events import Level

SCALE: int

def apply_plain(
    levels: tuple[Level, ...] | list[Level],
    start: int,
    book: dict[int, bytes],
    keys: list[int],
    negate: bool,
    journal: list[tuple[int, int, bytes]] | None,
    cap: int,
    /,
) -> int: ...
def levels(rows: object, /) -> tuple[Level, ...] | None: ...
