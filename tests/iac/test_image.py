"""The container recipe, read as a reviewer would: this machine runs no container engine.

A build is ``make image`` (buildah, chroot isolation, a debootstrapped base); what the image
installs, Ladder's wheel in a clean environment, is started for real in
``tests/e2e/test_clean_install.py``. Here the Dockerfile itself is checked: two stages, a base pinned
by digest, a compiler in the build stage only (for Ladder's C book store), an unprivileged user,
``ladder`` as the entrypoint, and a build context that leaves the repository's bulk out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
INSTRUCTION = re.compile(r"^(?P<op>[A-Z]+)\s+(?P<args>.*)$")
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
BUILD_TOOLS = re.compile(r"\b(gcc|g\+\+|clang|make|build-essential|python3-dev|libc6-dev|apt-get install)\b")


def instructions() -> list[tuple[str, str]]:
    """(instruction, arguments) in order, continuation lines joined, comments dropped."""
    logical, pending = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        logical.append(pending + stripped)
        pending = ""
    found = []
    for text in logical:
        match = INSTRUCTION.match(text)
        assert match, f"not an instruction: {text}"
        found.append((match["op"], match["args"]))
    return found


def stages() -> list[list[tuple[str, str]]]:
    """The instructions of each stage (the global ARGs before the first FROM are stage 0's)."""
    result: list[list[tuple[str, str]]] = [[]]
    for op, args in instructions():
        if op == "FROM":
            result.append([])
        result[-1].append((op, args))
    return result


def test_the_base_is_pinned_by_digest_and_both_stages_use_it() -> None:
    preamble, *built = stages()
    base_args = dict(args.split("=", 1) for op, args in preamble if op == "ARG")
    assert DIGEST.search(base_args["PYTHON_IMAGE"]), "the default base must be pinned by digest"
    assert len(built) == 2, "a build stage and a final stage"
    assert [stage[0] for stage in built] == [
        ("FROM", "${PYTHON_IMAGE} AS build"),
        ("FROM", "${PYTHON_IMAGE}"),
    ]


def test_the_final_stage_runs_ladder_as_an_unprivileged_user_with_no_build_tools() -> None:
    final = stages()[-1]
    ops = [op for op, _ in final]
    users = [args for op, args in final if op == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root"), "the image must not run as root"
    assert ops.index("USER") > max(i for i, op in enumerate(ops) if op in ("RUN", "COPY"))
    entrypoint = json.loads(next(args for op, args in final if op == "ENTRYPOINT"))
    assert entrypoint == ["/opt/ladder/bin/ladder"], "one image: `ladder ingest|control|read ...`"
    copies = [args for op, args in final if op == "COPY"]
    assert copies == ["--from=build /opt/ladder /opt/ladder"], "the final stage takes only the environment"
    for op, args in final:
        assert not (op == "RUN" and BUILD_TOOLS.search(args)), f"a build tool is installed: {args}"


def test_the_build_compiles_the_level_loops_and_proves_the_environment_runs_them() -> None:
    run = " ".join(args for op, args in stages()[1] if op == "RUN")
    assert "gcc" in run, "ingest_nodes/core/_levels.c needs a compiler in the build stage"
    assert 'native.describe() == "compiled"' in run, "an image without the compiled loops must not build"


def test_the_build_installs_binary_wheels_into_an_environment_without_pip() -> None:
    run = " ".join(args for op, args in stages()[1] if op == "RUN")
    assert "venv --without-pip /opt/ladder" in run and "--only-binary=:all:" in run
    assert "/opt/ladder/bin/ladder --help" in run, "the build proves the command starts"


def test_the_build_installs_the_runtime_lock_and_nothing_else() -> None:
    run = " ".join(args for op, args in stages()[1] if op == "RUN")
    assert "--require-hashes -r requirements/runtime.txt" in run, "third-party packages come from the lock"
    assert "--require-hashes -r requirements/build.txt" in run and "--no-build-isolation" in run, (
        "the wheel is built by the locked setuptools"
    )
    assert "--no-deps" in run.split("runtime.txt", 1)[1], "Ladder's wheel adds no unlocked dependency"


def test_the_build_context_leaves_out_the_bulk_but_not_what_the_wheel_needs() -> None:
    ignored = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()}
    assert {".git", ".venv", "tests", "iac"} <= ignored
    needed = {
        "pyproject.toml",
        "README.md",
        "requirements",
        "book_store",
        "ingest_nodes",
        "control_plane",
        "read_functions",
    }
    assert not needed & ignored
