"""The locks (requirements/*.txt) agree with pyproject.toml, and this environment is the dev lock.

What `make install` installs must be what the tests ran against, so the suite checks three things
against the environment it runs in: every distribution installed is pinned by the dev lock at that
version, and every pin that applies here is installed; every requirement the two pyproject files
declare is pinned, at a version its range admits; and nothing is pinned that those requirements do
not reach (found by walking the installed distributions' own metadata, so a dependency removed
from pyproject.toml and left in the lock is found too). The runtime and build locks are the dev
lock's pins, cut to what they install, so the image, the Lambda zip and the tests share versions.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from collections.abc import Iterable
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement

from ladder_cli.dependency_lock import LockError, Pin, canonical, needed_by, read_lock, requirements_text

REPO = Path(__file__).resolve().parents[2]
LOCKS = REPO / "requirements"
# Installed here on purpose but not from the lock: the two editable projects, and the venv's pip.
NOT_LOCKED = frozenset({"ladder", "ladder-sdk", "pip"})


def pyproject(path: Path) -> dict[str, object]:
    return tomllib.loads(path.read_text())


def project_requirements(path: Path, extras: Iterable[str] = ()) -> list[Requirement]:
    project = pyproject(path)["project"]
    assert isinstance(project, dict)
    found = [Requirement(text) for text in project["dependencies"]]
    for extra in extras:
        found += [Requirement(text) for text in project["optional-dependencies"][extra]]
    return found


def build_requirements() -> list[Requirement]:
    return [
        Requirement(text)
        for path in (REPO / "pyproject.toml", REPO / "sdk" / "pyproject.toml")
        for text in pyproject(path)["build-system"]["requires"]  # type: ignore[index]
    ]


def dev_requirements() -> list[Requirement]:
    return [
        *project_requirements(REPO / "pyproject.toml", ("dev", "bench")),
        *project_requirements(REPO / "sdk" / "pyproject.toml", ("tracing",)),
        *build_requirements(),
    ]


def applies(pin: Pin) -> bool:
    """True when pip installs ``pin`` on this machine (its marker, if any, holds here)."""
    return pin.marker is None or Marker(pin.marker).evaluate()


def pins_here(lock: str) -> dict[str, Pin]:
    """The pins of ``requirements/<lock>.txt`` that apply to this machine, by name."""
    pins = [pin for pin in read_lock(LOCKS / f"{lock}.txt") if applies(pin)]
    by_name = {pin.name: pin for pin in pins}
    assert len(by_name) == len(pins), f"{lock}.txt pins one name twice for this machine"
    return by_name


def reached(requirements: Iterable[Requirement]) -> set[str]:
    """Every distribution ``requirements`` need here, by the installed distributions' metadata."""
    seen: set[str] = set()
    pending = [
        (req, frozenset(req.extras)) for req in requirements if req.marker is None or req.marker.evaluate()
    ]
    while pending:
        req, extras = pending.pop()
        name = canonical(req.name)
        if name in NOT_LOCKED:
            continue
        key = f"{name}[{','.join(sorted(extras))}]"
        if key in seen:
            continue
        seen.add(key)
        for text in importlib.metadata.requires(name) or []:
            child = Requirement(text)
            holds = child.marker is None or any(
                child.marker.evaluate({"extra": extra}) for extra in (extras or {""})
            )
            if holds:
                pending.append((child, frozenset(child.extras)))
    return {key.partition("[")[0] for key in seen}


def test_this_environment_is_exactly_the_dev_lock() -> None:
    locked = pins_here("dev")
    installed = {
        canonical(dist.metadata["Name"]): dist.version for dist in importlib.metadata.distributions()
    }
    unlocked = sorted(f"{name}=={version}" for name, version in installed.items() if name not in locked)
    unlocked = [text for text in unlocked if text.partition("==")[0] not in NOT_LOCKED]
    assert not unlocked, f"installed but not in requirements/dev.txt: {unlocked} (run `make install`)"
    differ = {name: (installed.get(name), pin.version) for name, pin in locked.items()}
    differ = {name: pair for name, pair in differ.items() if pair[0] != pair[1]}
    assert not differ, f"installed vs locked (run `make install`): {differ}"


@pytest.mark.parametrize(
    ("lock", "requirements"),
    [
        ("dev", dev_requirements),
        ("runtime", lambda: project_requirements(REPO / "pyproject.toml")),
        ("build", build_requirements),
    ],
)
def test_every_declared_requirement_is_pinned_within_its_range(lock: str, requirements: object) -> None:
    assert callable(requirements)
    locked = pins_here(lock)
    wrong = []
    for req in requirements():
        if req.marker is not None and not req.marker.evaluate():
            continue
        pin = locked.get(canonical(req.name))
        if pin is None or not req.specifier.contains(pin.version, prereleases=True):
            wrong.append(f"{req} (locked: {pin.version if pin else 'nothing'})")
    assert not wrong, f"requirements/{lock}.txt does not satisfy pyproject: {wrong} (run `make lock`)"


@pytest.mark.parametrize(
    ("lock", "requirements"),
    [("dev", dev_requirements), ("runtime", lambda: project_requirements(REPO / "pyproject.toml"))],
)
def test_the_lock_pins_nothing_that_pyproject_does_not_reach(lock: str, requirements: object) -> None:
    assert callable(requirements)
    stale = sorted(set(pins_here(lock)) - reached(requirements()))
    assert not stale, (
        f"requirements/{lock}.txt pins what pyproject.toml no longer needs: {stale} (run `make lock`)"
    )


@pytest.mark.parametrize("lock", ["runtime", "build"])
def test_runtime_and_build_locks_take_the_dev_locks_pins(lock: str) -> None:
    dev = {(pin.name, pin.marker): pin for pin in read_lock(LOCKS / "dev.txt")}
    for pin in read_lock(LOCKS / f"{lock}.txt"):
        twin = dev.get((pin.name, pin.marker))
        assert twin is not None, f"{lock}.txt pins {pin.name} ({pin.marker}), dev.txt does not"
        assert (pin.version, set(pin.hashes)) == (twin.version, set(twin.hashes)), pin.name


LOCK_SAMPLE = """\
# This file was autogenerated by uv via the following command:
#    make lock
aiohttp==3.14.5 \\
    --hash=sha256:{a}
    # via ladder (pyproject.toml)
async-timeout==5.0.1 ; python_full_version < '3.11.3' \\
    --hash=sha256:{b} \\
    --hash=sha256:{c}
    # via
    #   -c requirements/dev.txt
    #   redis
boto3==1.44.18 \\
    --hash=sha256:{d}
    # via ladder (pyproject.toml)
jmespath==1.1.0 \\
    --hash=sha256:{e}
    # via
    #   boto3
    #   botocore
redis==8.2.0 \\
    --hash=sha256:{f}
    # via ladder (pyproject.toml)
""".format(**{letter: letter * 64 for letter in "abcdef"})


def test_a_lock_is_read_into_pins_with_markers_hashes_and_requirers(tmp_path: Path) -> None:
    lock = tmp_path / "runtime.txt"
    lock.write_text(LOCK_SAMPLE)
    pins = {pin.name: pin for pin in read_lock(lock)}
    assert list(pins) == ["aiohttp", "async-timeout", "boto3", "jmespath", "redis"]
    timeout = pins["async-timeout"]
    assert (timeout.version, timeout.marker) == ("5.0.1", "python_full_version < '3.11.3'")
    assert timeout.hashes == ("sha256:" + "b" * 64, "sha256:" + "c" * 64)
    assert timeout.required_by == {"redis"}
    assert pins["jmespath"].required_by == {"boto3", "botocore"}
    assert pins["aiohttp"].required_by == {"ladder"}


def test_what_the_roots_need_follows_the_via_edges_and_leaves_the_rest(tmp_path: Path) -> None:
    lock = tmp_path / "runtime.txt"
    lock.write_text(LOCK_SAMPLE)
    pins = read_lock(lock)
    assert [pin.name for pin in needed_by(pins, ["redis"])] == ["async-timeout", "redis"]
    assert [pin.name for pin in needed_by(pins, ["Boto3"])] == ["boto3", "jmespath"]
    text = requirements_text(needed_by(pins, ["redis"]))
    assert text.splitlines()[0] == "async-timeout==5.0.1 ; python_full_version < '3.11.3' \\"
    assert "# via" not in text and text.count("--hash=") == 3
    with pytest.raises(LockError, match="pins no uvloop"):
        needed_by(pins, ["uvloop"])


def test_a_lock_without_hashes_or_pins_is_refused(tmp_path: Path) -> None:
    bare = tmp_path / "bare.txt"
    bare.write_text("aiohttp==3.14.5\n    # via ladder\n")
    with pytest.raises(LockError, match="no --hash"):
        read_lock(bare)
    bare.write_text("# nothing here\n")
    with pytest.raises(LockError, match="pins nothing"):
        read_lock(bare)
    with pytest.raises(LockError, match="run `make lock`"):
        read_lock(tmp_path / "missing.txt")
