"""The project's dependency locks, ``requirements/*.txt``: what ``make lock`` pinned, read back.

Theory of operation
-------------------
``make lock`` has uv resolve ``pyproject.toml`` once for every platform and Python the project
supports (``--universal``) and write pip requirements files: each pinned distribution is one block,

    aiohttp==3.14.5 \\
        --hash=sha256:0133c3c3... \\
        --hash=sha256:038c2c7e...
        # via
        #   -c requirements/dev.txt
        #   ladder (pyproject.toml)

optionally with an environment marker after the pin (``async-timeout==5.0.1 ; python_full_version <
'3.11.3'``), so one name may be pinned twice under exclusive markers. pip installs such a file with
``--require-hashes``, so nothing but those exact files can be installed from it. The ``# via`` lines
name what requires each pin: read backwards, they are the dependency graph of the resolution, which
is how the Lambda builder takes the part of the runtime lock that the read path needs.

This module only reads; it has no opinion on markers (pip evaluates them at install time) and no
dependency beyond the standard library, so the CLI can use it on any install.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

# A pin's first line: `name==version`, an optional `; marker`, an optional line continuation.
_PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)\s*(?:;\s*(?P<marker>[^\\]+?))?\s*\\?$"
)
_HASH = re.compile(r"--hash=(?P<hash>sha256:[0-9a-f]{64})")
# A requirer in a `# via` line: a distribution, `name (pyproject.toml)`, or `-r/-c file` (an input file).
_REQUIRER = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\s+\(.*\))?$")


class LockError(Exception):
    """A lock file is missing or not in the shape ``make lock`` writes; the message says which."""


@dataclass(frozen=True, slots=True)
class Pin:
    """One pinned distribution of a lock, as written (``text`` is its block, hashes and all)."""

    name: str
    version: str
    marker: str | None
    hashes: tuple[str, ...]
    required_by: frozenset[str]
    text: str


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them (``Pydantic_Settings`` -> ``pydantic-settings``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: Path) -> list[Pin]:
    """Every pin of the lock at ``path``, in file order."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise LockError(f"cannot read the lock {path}: {exc.strerror} (run `make lock`)") from exc
    blocks: list[list[str]] = []
    for line in lines:
        if _PIN.match(line):
            blocks.append([line])
        elif blocks and line.startswith((" ", "\t")):
            blocks[-1].append(line)
    if not blocks:
        raise LockError(f"{path} pins nothing: is it a lock written by `make lock`?")
    return [_pin(block, path) for block in blocks]


def _pin(block: list[str], path: Path) -> Pin:
    head = _PIN.match(block[0])
    assert head is not None  # read_lock starts blocks only at pins
    hashes = tuple(m["hash"] for line in block for m in _HASH.finditer(line))
    if not hashes:
        raise LockError(f"{path}: {head['name']} has no --hash (the locks are written with hashes)")
    return Pin(
        name=canonical(head["name"]),
        version=head["version"],
        marker=head["marker"],
        hashes=hashes,
        required_by=frozenset(_requirers(block)),
        text="\n".join(line for line in block if not line.lstrip().startswith("#")).rstrip(" \\"),
    )


def _requirers(block: list[str]) -> Iterable[str]:
    """The distributions named in a block's ``# via`` comment (input files are not distributions)."""
    comments = [line.strip().lstrip("#").strip() for line in block if line.lstrip().startswith("#")]
    for text in comments:
        entry = text.removeprefix("via").strip()
        match = _REQUIRER.match(entry) if entry and not entry.startswith("-") else None
        if match:
            yield canonical(match["name"])


def needed_by(pins: Collection[Pin], roots: Collection[str]) -> list[Pin]:
    """The pins that ``roots`` (distribution names) need, themselves included, in lock order.

    A pin is needed when a needed distribution requires it, so the answer is the closure of the
    roots over the lock's own ``# via`` edges. A root the lock does not pin is an error: the lock
    is older than the code that asks for it.
    """
    wanted = {canonical(name) for name in roots}
    missing = wanted - {pin.name for pin in pins}
    if missing:
        raise LockError(f"the lock pins no {', '.join(sorted(missing))} (run `make lock`)")
    changed = True
    while changed:
        changed = False
        for pin in pins:
            if pin.name not in wanted and pin.required_by & wanted:
                wanted.add(pin.name)
                changed = True
    return [pin for pin in pins if pin.name in wanted]


def requirements_text(pins: Iterable[Pin]) -> str:
    """A requirements file of ``pins`` that ``pip install --require-hashes -r`` accepts."""
    return "".join(f"{pin.text}\n" for pin in pins)
