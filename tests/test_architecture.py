"""The arrows of docs/architecture.md, checked on every import the code makes.

Every import counts: module level, inside functions and under ``TYPE_CHECKING`` alike, because a
type-only import that points the wrong way still inverts the layers for a reader. The test fails
when a package imports one it must not (the table below), when any import circle appears, when
the ingest core reaches for I/O, when the publish path calls back up it, when a read-side folder
imports a layer it must not, when two folders of a package import each other (through however
many others), or when a folder grows past what a newcomer can take in at once.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PACKAGES = {
    "ladder_process": ROOT / "ladder_process",
    "book_store": ROOT / "book_store",
    "control_plane": ROOT / "control_plane",
    "ingest_nodes": ROOT / "ingest_nodes",
    "read_functions": ROOT / "read_functions",
    "fake_venue": ROOT / "fake_venue",
    "ladder_cli": ROOT / "ladder_cli",
    "bench": ROOT / "bench",
    "ladder_sdk": ROOT / "sdk" / "ladder_sdk",
}

MAY_IMPORT: dict[str, set[str]] = {
    "ladder_process": set(),
    "book_store": {"ladder_process"},
    "control_plane": {"book_store", "ladder_process"},
    "ingest_nodes": {"control_plane", "book_store", "ladder_process"},
    "read_functions": {"control_plane", "book_store", "ladder_process"},
    # An independent imitation of the venues: sharing Ladder's code would let it share its bugs.
    "fake_venue": set(),
    "ladder_cli": set(PACKAGES) - {"ladder_cli", "ladder_sdk"},
    "bench": set(PACKAGES) - {"bench"},
    # What customers install: nothing of the server.
    "ladder_sdk": set(),
}
"""Which other Ladder packages each package may import (ingest and read never import each other,
the contract imports nothing above it, the SDK nothing of the server)."""

INGEST_LAYERS: dict[str, set[str]] = {
    "core": {"core"},
    "venues": {"core", "venues", "settings"},
    "ops": {"core", "ops"},
}
"""Within ``ingest_nodes``, what each folder may import of it (``runtime`` may import all)."""

READ_LAYERS: dict[str, set[str]] = {
    "tenancy": {"tenancy"},
    "books": {"books", "tenancy"},
    "app": {"app", "tenancy"},
    "handlers": {"handlers", "app", "books", "tenancy", "deps", "settings", "telemetry"},
    "server": {"server", "app", "settings", "wiring"},
}
"""Within ``read_functions``, what each folder may import of it: ``app/`` is the request core and
knows no ``Deps``; only ``handlers/`` see ``Deps``; ``server/`` drives ``app/`` (and gets it built
by ``wiring``); ``books/`` and ``tenancy/`` know nothing of HTTP. The top-level modules (``deps``,
``routes``, ``wiring``, ``settings``, ``telemetry``) are where the folders are wired together."""

CORE_FORBIDDEN = {"asyncio", "aiohttp", "websockets", "redis", "socket", "time", "opentelemetry"}
"""The ingest core is pure: no sockets, no event loop, no clock."""

CORE_MAY_IMPORT = ("ingest_nodes.core", "ladder_process.errors")

MAX_MODULES_PER_FOLDER = 10

CHECKED_FOLDERS = sorted(set(PACKAGES) - {"bench"})
"""Packages whose folders are held to the size limit and to no circle between folders (``bench/``
is a set of scripts, ``tests/`` mirrors the tree)."""


def module_name(path: Path, package: str) -> str:
    parts = path.relative_to(PACKAGES[package]).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((package, *parts))


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            found[module_name(path, package)] = path
    return found


def imported(name: str, path: Path, known: Collection[str]) -> Iterator[str]:
    """Every absolute module name ``path`` imports, whatever the import's position (``from a import
    b`` names ``a.b`` when that is a module, else ``a``)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                yield submodule if submodule in known else module


def graph() -> dict[str, set[str]]:
    """Ladder module -> the Ladder modules it imports."""
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = set()
        for target in imported(name, path, known):
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
        edges[name] = targets
    return edges


GRAPH = graph()


def test_the_scan_sees_the_whole_house() -> None:
    assert "read_functions.books.cache" in GRAPH
    assert "ingest_nodes.runtime.replica" in GRAPH["ingest_nodes.runtime.node"]
    assert "book_store.codec" in GRAPH["book_store.reader"]


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_a_package_imports_only_what_its_arrows_allow(package: str) -> None:
    wrong = sorted(
        f"{source} -> {target}"
        for source, targets in GRAPH.items()
        if source.split(".")[0] == package
        for target in targets
        if (other := target.split(".")[0]) != package and other not in MAY_IMPORT[package]
    )
    assert not wrong, "imports against the arrows of docs/architecture.md:\n" + "\n".join(wrong)


def layer_breaches(package: str, layers: dict[str, set[str]]) -> list[str]:
    """Imports from a folder of ``package`` named in ``layers`` to a part of ``package`` (a folder
    or a top-level module) that its entry does not name."""
    wrong = []
    for source, targets in GRAPH.items():
        parts = source.split(".")
        if parts[0] != package or len(parts) < 2 or parts[1] not in layers:
            continue
        for target in targets:
            inner = target.split(".")
            if inner[0] == package and len(inner) > 1 and inner[1] not in layers[parts[1]]:
                wrong.append(f"{source} -> {target}")
    return sorted(wrong)


def test_ingest_folders_import_only_their_layers() -> None:
    wrong = layer_breaches("ingest_nodes", INGEST_LAYERS)
    assert not wrong, "\n".join(wrong)


def test_read_folders_import_only_their_layers() -> None:
    wrong = layer_breaches("read_functions", READ_LAYERS)
    assert not wrong, "\n".join(wrong)


def test_the_ingest_core_does_no_io() -> None:
    known = modules()
    wrong = sorted(
        f"{name} imports {target}"
        for name, path in known.items()
        if name.startswith("ingest_nodes.core")
        for target in imported(name, path, known)
        if target.split(".")[0] in CORE_FORBIDDEN
        or (target.split(".")[0] in MAY_IMPORT and not target.startswith(CORE_MAY_IMPORT))
    )
    assert not wrong, "\n".join(wrong)


def test_no_import_circle_type_imports_included() -> None:
    circles = [sorted(group) for group in strongly_connected(GRAPH) if len(group) > 1]
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


@pytest.mark.parametrize("package", CHECKED_FOLDERS)
def test_no_folder_holds_more_modules_than_a_newcomer_can_take_in(package: str) -> None:
    crowded = {
        str(folder.relative_to(ROOT)): count
        for folder in [PACKAGES[package], *PACKAGES[package].rglob("*")]
        if folder.is_dir()
        and (count := sum(1 for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__")))
        > MAX_MODULES_PER_FOLDER
    }
    assert not crowded, crowded


def folder_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def sibling_folder_edges(package: str) -> dict[str, set[str]]:
    """Between the subfolders of each folder of ``package`` (each subfolder with all below it): which
    imports which. The modules directly in a folder are where its subfolders are wired together
    and what they share, so they take no part."""
    known = modules()
    edges: dict[str, set[str]] = {}
    for source, targets in GRAPH.items():
        if source.split(".")[0] != package:
            continue
        here = folder_of(source, known[source]).split(".")
        for target in targets:
            there = folder_of(target, known[target]).split(".")
            common = 0
            while common < min(len(here), len(there)) and here[common] == there[common]:
                common += 1
            if 0 < common < len(here) and common < len(there):
                a, b = ".".join(here[: common + 1]), ".".join(there[: common + 1])
                edges.setdefault(a, set()).add(b)
                edges.setdefault(b, set())
    return edges


@pytest.mark.parametrize("package", CHECKED_FOLDERS)
def test_no_circle_between_folders(package: str) -> None:
    circles = [sorted(group) for group in strongly_connected(sibling_folder_edges(package)) if len(group) > 1]
    assert not circles, "folders that import each other:\n" + "\n".join(" <-> ".join(c) for c in circles)


PUBLISH_PATH = (
    "ingest_nodes.runtime.replica",
    "ingest_nodes.runtime.lane",
    "ingest_nodes.runtime.publisher",
    "book_store.writer",
)
"""Walk 1's rooms from the replica on (docs/architecture.md, "one price"): the replica calls its
lane and marks itself for the publisher, which writes through the writer. Calls go one way: a
module here never imports one before it, and no module after the replica is handed something to
call (a callable: a bound method of the replica, a publisher's waker), which could lead back up."""

OBSERVERS = {("book_store.writer", "on_flush")}
"""Callables a module on the publish path may be handed because they lead off it, not back up:
``on_flush`` is telemetry observing each batch (book_store cannot import ingest telemetry)."""

CALLABLE = re.compile(r"\b(Callable|Awaitable|Coroutine)\b")


def handed_callables(name: str, path: Path) -> Iterator[str]:
    """Each parameter of a function or method in ``path`` whose type is a callable, directly or
    through one of the module's aliases (``Handler = Callable[...]``)."""
    tree = ast.parse(path.read_text(), str(path))
    aliases = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and CALLABLE.search(ast.unparse(node.value))
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                if arg.annotation is None:
                    continue
                annotation = ast.unparse(arg.annotation)
                named = set(re.findall(r"\w+", annotation))
                if (CALLABLE.search(annotation) or named & aliases) and (name, arg.arg) not in OBSERVERS:
                    yield f"{name}: {node.name}({arg.arg}: {annotation})"


def test_the_publish_path_calls_one_way() -> None:
    known = modules()
    wrong = [
        f"{later} imports {earlier}"
        for i, earlier in enumerate(PUBLISH_PATH)
        for later in PUBLISH_PATH[i + 1 :]
        if earlier in GRAPH[later]
    ]
    wrong += [found for name in PUBLISH_PATH[1:] for found in handed_callables(name, known[name])]
    assert not wrong, "\n".join(wrong)


SERVER_PACKAGES = (
    "ladder_process",
    "book_store",
    "control_plane",
    "ingest_nodes",
    "read_functions",
    "ladder_cli",
)

EPOCH_MS_BY_HAND = re.compile(r"time_ns\(\)\s*//\s*1_?000_?000\b|time\(\)\s*\*\s*1_?000\b")


def test_the_clock_in_milliseconds_is_read_in_one_place() -> None:
    """``ladder_process.clock.now_ms`` is Ladder's clock (a ``Clock`` where a test injects one); a
    module that computes epoch milliseconds itself bypasses it."""
    wrong = sorted(
        name
        for name, path in modules().items()
        if name.startswith(SERVER_PACKAGES)
        and name != "ladder_process.clock"
        and EPOCH_MS_BY_HAND.search(path.read_text())
    )
    assert not wrong, f"epoch milliseconds computed outside ladder_process.clock: {wrong}"


def test_every_docs_page_the_code_cites_exists() -> None:
    cited = {
        (str(path.relative_to(ROOT)), page)
        for path in [*modules().values(), *(ROOT / "tests").rglob("*.py")]
        for page in re.findall(r"\bdocs/([\w.-]+\.md)\b", path.read_text())
    }
    missing = sorted(
        f"{source} cites docs/{page}" for source, page in cited if not (ROOT / "docs" / page).is_file()
    )
    assert not missing, "\n".join(missing)


def strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (the graph has hundreds of modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                groups.append(group)
    return groups
