"""Every command ``ladder`` runs by handing over to a module: one registry, which the help lists and
the README's command table is checked against (tests/ladder_cli/test_commands.py).

Components and packagers are listed here. Benchmarks register themselves: every module of the
``bench`` package whose docstring opens with ``ladder bench NAME``: is one, and the rest of that
line is its summary, so a new benchmark is listed (and must be in the README) the day it exists.
Finding them reads the bench files' docstrings, never imports them.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Command:
    """``ladder [group] NAME ARGS`` runs ``python -m MODULE ARGS``."""

    name: str
    module: str
    summary: str


COMPONENTS = {
    c.name: c
    for c in (
        Command("ingest", "ingest_nodes", "one ingest node: venue connections, sync machines, publisher"),
        Command("read", "read_functions", "the HTTP API, on its own HTTP/1.1 server (workers, TLS, UBDCC)"),
        Command("control", "control_plane", "the control plane: the replica scheduler"),
        Command("fake-venue", "fake_venue", "the offline venue: Binance spot and USD-M, Alpaca crypto"),
    )
}
PACKAGERS = {
    c.name: c
    for c in (Command("lambda", "ladder_cli.lambda_package", "the read-function zip for AWS Lambda"),)
}

_BENCH_DOC = re.compile(r"^``ladder bench (\w+)``: (.+)$", re.S)


@cache
def benches() -> dict[str, Command]:
    """Every benchmark of the ``bench`` package, by name (none when it is not installed)."""
    spec = importlib.util.find_spec("bench")
    if spec is None or not spec.submodule_search_locations:
        return {}
    found = {}
    for path in sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.py")):
        opening = (ast.get_docstring(ast.parse(path.read_text(), str(path))) or "").split("\n\n", 1)[0]
        if matched := _BENCH_DOC.match(opening):
            name = matched[1]
            found[name] = Command(name, f"bench.{path.stem}", " ".join(matched[2].split()).rstrip("."))
    return found


def groups() -> dict[str, dict[str, Command]]:
    """``ladder bench NAME`` and ``ladder package NAME``: each group's commands."""
    return {"bench": benches(), "package": PACKAGERS}
