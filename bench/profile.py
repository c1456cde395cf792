"""Sampling profiles of benchmarked processes (py-spy), summed into the stages of a book event.

``py-spy record --format raw`` writes one line per distinct stack, ``frame;frame;...;leaf count``,
each frame ``function (file:line)``. A sample is charged to the stage of the innermost frame whose
file a rule names (so orjson called from the venue parser is parsing, and redis-py called from the
writer is the store write); samples no rule names are "event loop, other". py-spy is optional: a
benchmark asked to profile without it says so and carries on.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

INGEST_STAGES: Sequence[tuple[str, str]] = (
    ("ingest_nodes/venues/", "parse"),
    ("websockets/", "receive (WebSocket)"),
    ("ingest_nodes/core/", "apply (sync machine, book)"),
    ("ingest_nodes/runtime/publisher.py", "head encode (publisher)"),
    ("book_store/codec.py", "head encode (publisher)"),
    ("book_store/writer.py", "store write (client)"),
    ("redis/", "store write (client)"),
    ("ingest_nodes/runtime/snapshots.py", "snapshot scheduler"),
    ("ingest_nodes/runtime/", "replica, lane, connection"),
    ("ingest_nodes/ops/", "stats, telemetry, checkpoints"),
    ("opentelemetry/", "stats, telemetry, checkpoints"),
)
"""Where an ingest node's time goes, by the file of the innermost frame (first rule that matches)."""

READ_STAGES: Sequence[tuple[str, str]] = (
    ("read_functions/books/resp_parser.py", "receive (RESP parse)"),
    ("read_functions/books/change_feed.py", "receive (RESP parse)"),
    ("book_store/", "decode and apply the change"),
    ("read_functions/books/cache.py", "decode and apply the change"),
    ("read_functions/books/render.py", "render the views read"),
    ("read_functions/books/entry.py", "render the views read"),
    ("bench/follower.py", "render the views read"),
)
"""Where a read worker's time goes while it follows books."""

OTHER = "event loop, other"


def executable() -> str | None:
    """py-spy beside this interpreter (``pip install py-spy`` in the venv) or on the PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def record(pid: int, seconds: float, out: Path, rate: int = 250) -> subprocess.Popen[bytes] | None:
    """Start sampling ``pid`` for ``seconds`` into ``out`` (raw collapsed stacks); None without py-spy."""
    exe = executable()
    if exe is None:
        print("py-spy is not installed (pip install py-spy): no profile", flush=True)
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [exe, "record", "--pid", str(pid), "--duration", str(max(1, round(seconds))),
               "--rate", str(rate), "--format", "raw", "--nonblocking", "--output", str(out)]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stages(path: Path, rules: Sequence[tuple[str, str]]) -> Counter[str]:
    """Samples per stage in a raw py-spy profile."""
    counts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        counts[_stage(stack.split(";"), rules)] += int(count)
    return counts


def _stage(frames: list[str], rules: Sequence[tuple[str, str]]) -> str:
    for frame in reversed(frames):
        for fragment, stage in rules:
            if fragment in frame:
                return stage
    return OTHER


def shares(counts: Counter[str]) -> list[tuple[str, float]]:
    """Each stage's share of the samples, largest first."""
    total = sum(counts.values()) or 1
    return [(stage, count / total) for stage, count in counts.most_common()]
