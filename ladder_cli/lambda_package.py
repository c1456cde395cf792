"""Build the AWS Lambda zip of the read path (``ladder package lambda``).

Theory of operation
-------------------
The zip should hold what ``read_functions.server.lambda_handler`` imports and nothing else. So the
first-party part comes from import analysis, not from a hand-kept list. Starting at the handler
module, the builder parses every reachable module of ``read_functions``, ``control_plane``,
``book_store`` and ``ladder_process`` (it reads them and never imports them). It follows
module-level and function-level imports and skips ``if TYPE_CHECKING:`` blocks. The HTTP server
and its streams, the CLI, the supervisor, ingest nodes, the fake venue, benchmarks and tests stay
out because the handler never reaches them. The one non-module part is the web console's static files, which
``read_functions.handlers.console`` reads from ``read_functions/console/``: they go in whenever that module
does (``MODULE_DATA``).

The imports that leave the first-party packages name third-party modules. Each one is traced to
the installed distribution that owns its file. Those distributions, and everything they need by the
runtime lock's own dependency edges (``requirements/runtime.txt``, written by ``make lock``), are
installed by pip into a staging directory from that lock, hashes required, with
``--only-binary=:all: --platform <manylinux tag> --python-version <ver>``. That way orjson,
pydantic-core and uvloop are Lambda's Linux wheels, not this machine's, and the zip carries exactly
the versions the container image installs and the tests ran against, transitive ones included.
boto3 and botocore are left out by default because the Lambda Python runtime ships them; what only
they need (s3transfer, jmespath, ...) drops out with them.

The builder then drops what is never used at run time: ``__pycache__``, test folders, type stubs,
Cython sources, console scripts, and the install bookkeeping in ``*.dist-info``. It keeps
``METADATA`` and ``entry_points.txt``, because redis reads its version and OpenTelemetry finds its
context implementation through them. The zip is deterministic: sorted entries, one fixed
timestamp, normalised permissions. The same sources and versions give the same bytes, so
terraform's ``source_code_hash`` changes only when the code does.
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import os
import re
import stat
import subprocess
import sys
import tempfile
import zipfile
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ladder_cli.dependency_lock import LockError, Pin, canonical, needed_by, read_lock, requirements_text
from ladder_process.cli import HelpFormatter

HANDLER = "read_functions.server.lambda_handler.handler"
ENTRY_MODULE = "read_functions.server.lambda_handler"
FIRST_PARTY = ("read_functions", "control_plane", "book_store", "ladder_process")
PROJECT = "ladder"
# Distributions the Lambda Python runtime already provides (its own boto3, kept current by AWS).
RUNTIME_PROVIDED = frozenset({"boto3", "botocore"})
# pip platform tag -> the Lambda architecture name (terraform's lambda_architecture).
PLATFORMS = {"manylinux2014_x86_64": "x86_64", "manylinux2014_aarch64": "arm64"}
PYTHON_VERSIONS = ("3.11", "3.12")
DEFAULT_OUTPUT = Path("dist/ladder-read-lambda.zip")
# The lock the container image installs too (relative to the repository; `make lock` writes it).
RUNTIME_LOCK = Path("requirements/runtime.txt")
# Files a module reads at run time rather than imports: the module, and the folder it reads.
MODULE_DATA = {"read_functions.handlers.console": "read_functions/console"}

# Lambda's own limits: a zip uploaded directly, and the unpacked function (layers included).
DIRECT_UPLOAD_LIMIT = 50 * 1024 * 1024
UNZIPPED_LIMIT = 250 * 1024 * 1024
# The earliest timestamp a zip entry can carry; every entry gets it, so builds compare equal.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
LARGEST_SHOWN = 10

_BLOAT_DIRS = frozenset({"__pycache__", "tests", "test"})
_BLOAT_SUFFIXES = frozenset({".pyc", ".pyi", ".pyx", ".pxd", ".pxi", ".c", ".h", ".cpp"})
_BLOAT_NAMES = frozenset({"py.typed"})
_INSTALL_RECORDS = frozenset({"RECORD", "INSTALLER", "REQUESTED", "WHEEL", "direct_url.json"})
_DIST_INFO = re.compile(r"\.(dist|egg)-info$")
# pip exits 1 for any failure; the builder reports a failed dependency install with its own code.
EXIT_DEPENDENCIES = 3


class PackagingError(Exception):
    """The zip cannot be built as asked; the message says why."""


class DependencyInstallError(PackagingError):
    """pip could not install the third-party dependencies (no index, no matching wheel, ...)."""


@dataclass(frozen=True, slots=True)
class ImportGraph:
    """What the handler reaches: first-party modules (name -> source) and third-party imports."""

    modules: dict[str, Path]
    external: frozenset[str]


# -- import analysis ----------------------------------------------------------------------------


def source_root() -> Path:
    """The directory holding ``read_functions`` and its sibling packages (the repo or site-packages)."""
    return Path(__file__).resolve().parent.parent


def module_file(root: Path, name: str) -> Path | None:
    """The source of first-party module ``name`` under ``root``, or None if there is no such module."""
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def import_graph(
    root: Path, entry: str = ENTRY_MODULE, first_party: Collection[str] = FIRST_PARTY
) -> ImportGraph:
    """Every first-party module ``entry`` can import, and the third-party names they import."""
    modules: dict[str, Path] = {}
    external: set[str] = set()
    pending = [entry]
    while pending:
        name = pending.pop()
        if name in modules:
            continue
        path = module_file(root, name)
        if path is None:
            continue
        modules[name] = path
        parts = name.split(".")
        pending.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parents run first
        for imported in _imports(path, name, is_package=path.name == "__init__.py"):
            top = imported.partition(".")[0]
            if top in first_party:
                pending.append(imported)
            elif top not in sys.stdlib_module_names and top != "__future__":
                external.add(imported)
    return ImportGraph(modules, frozenset(external))


def _imports(path: Path, module: str, *, is_package: bool) -> Iterator[str]:
    """Absolute names a module imports; ``from a import b`` yields ``a`` and ``a.b`` (b may be a module)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in _runtime_nodes(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(package, node.module, node.level)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """All nodes except the bodies of ``if TYPE_CHECKING:`` (imports for the type checker only)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(package: str, module: str | None, level: int) -> str:
    if level == 0:
        return module or ""
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{module}" if module else base


# -- third-party distributions ------------------------------------------------------------------


def owning_distributions(names: Iterable[str]) -> dict[str, str]:
    """Map each imported name to the installed distribution providing it (the longest module match)."""
    owners = _module_owners()
    found: dict[str, str] = {}
    unknown: list[str] = []
    for name in sorted(set(names)):
        parts = name.split(".")
        owner = next(
            (owners[prefix] for i in range(len(parts), 0, -1) if (prefix := ".".join(parts[:i])) in owners),
            None,
        )
        if owner is None:
            unknown.append(name)
        else:
            found[name] = owner
    if unknown:
        raise PackagingError(
            "no installed distribution provides "
            + ", ".join(unknown)
            + " (install the project's dependencies)"
        )
    return found


def _module_owners() -> dict[str, str]:
    """Dotted module name -> distribution name, from the file lists of everything installed."""
    owners: dict[str, str] = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        for file in dist.files or ():
            if ".." in file.parts or not file.name.endswith((".py", ".so", ".pyd")):
                continue
            stem = file.name.split(".")[0]
            dotted = file.parts[:-1] if stem == "__init__" else (*file.parts[:-1], stem)
            if dotted:
                owners.setdefault(".".join(dotted), name)
    return owners


def lock_subset(distributions: Iterable[str], lock: Path, *, bundle_boto3: bool) -> list[Pin]:
    """The pins of ``lock`` that ``distributions`` need (boto3's left out unless bundled)."""
    skipped = set() if bundle_boto3 else RUNTIME_PROVIDED
    roots = {canonical(d) for d in distributions} - skipped - {PROJECT}
    return needed_by(read_lock(lock), roots)


def pip_install(pins: list[Pin], target: Path, platform: str, python: str) -> None:
    """Install Lambda's wheels of ``pins`` into ``target``, hashes checked; pip's messages go to stderr.

    Dependencies are not turned off: pip resolves them again for the target and refuses, in
    hash-checking mode, any that the subset does not pin, so a hole in the lock's edges is an
    error, never an unpinned install.
    """
    requirements_file = target.parent / "requirements.txt"
    requirements_file.write_text(requirements_text(pins))
    command = [
        sys.executable, "-m", "pip", "install", "--quiet", "--no-input", "--disable-pip-version-check",
        "--no-compile", "--target", str(target), "--only-binary=:all:", "--implementation", "cp",
        "--platform", platform, "--python-version", python, "--require-hashes",
        "--requirement", str(requirements_file),
    ]  # fmt: skip
    done = subprocess.run(command, stdout=sys.stderr, check=False)  # noqa: S603 - our own interpreter's pip
    if done.returncode != 0:
        names = " ".join(f"{pin.name}=={pin.version}" for pin in pins)
        raise DependencyInstallError(f"pip could not install {names} for {platform}/cp{python}")


# -- assembling the zip -------------------------------------------------------------------------


def first_party_files(graph: ImportGraph, root: Path) -> dict[str, Path]:
    """Zip entry name -> source file for the modules the handler reaches, and the data files
    those modules read (:data:`MODULE_DATA`)."""
    files = {path.relative_to(root).as_posix(): path for path in graph.modules.values()}
    for module, folder in MODULE_DATA.items():
        if module in graph.modules:
            for path in sorted((root / folder).rglob("*")):
                if path.is_file():
                    files[path.relative_to(root).as_posix()] = path
    return files


def third_party_files(site: Path) -> dict[str, Path]:
    """Zip entry name -> file for everything pip installed, minus what is never used at run time."""
    files: dict[str, Path] = {}
    for directory, _, names in os.walk(site):
        for name in names:
            path = Path(directory, name)
            entry = PurePosixPath(path.relative_to(site).as_posix())
            if not is_bloat(entry):
                files[str(entry)] = path
    return files


def is_bloat(entry: PurePosixPath) -> bool:
    """True for installed files the function never reads: caches, stubs, sources, scripts, records."""
    if entry.parts[0] == "bin" or _BLOAT_DIRS.intersection(entry.parts[:-1]):
        return True
    if entry.suffix in _BLOAT_SUFFIXES or entry.name in _BLOAT_NAMES:
        return True
    return (
        len(entry.parts) == 2 and bool(_DIST_INFO.search(entry.parts[0])) and entry.name in _INSTALL_RECORDS
    )


def project_metadata() -> dict[str, bytes]:
    """A minimal ``ladder-<version>.dist-info/METADATA`` so the function reports its own version."""
    try:
        version = importlib.metadata.version(PROJECT)
    except importlib.metadata.PackageNotFoundError:
        return {}
    text = f"Metadata-Version: 2.1\nName: {PROJECT}\nVersion: {version}\n"
    return {f"{PROJECT}-{version}.dist-info/METADATA": text.encode()}


def write_zip(output: Path, files: Mapping[str, Path], generated: Mapping[str, bytes] | None = None) -> None:
    """Write a deterministic zip: sorted entries, one timestamp, permissions 644 (755 if executable)."""
    clash = set(files) & set(generated or {})
    if clash:
        raise PackagingError(f"entries provided twice: {', '.join(sorted(clash))}")
    contents: dict[str, Path | bytes] = {**files, **(generated or {})}
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name in sorted(contents):
            source = contents[name]
            data = source if isinstance(source, bytes) else source.read_bytes()
            executable = not isinstance(source, bytes) and bool(source.stat().st_mode & stat.S_IXUSR)
            info = zipfile.ZipInfo(name, ZIP_EPOCH)
            info.create_system = 3  # unix, so that the permission bits below are honoured
            info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data, compresslevel=9)
    partial.replace(output)


# -- report -------------------------------------------------------------------------------------


def size_report(output: Path, platform: str, python: str) -> str:
    """Sizes in total, per top-level package and for the largest files, against Lambda's limits."""
    entries = zip_entries(output)
    packed = output.stat().st_size
    unpacked = sum(info.file_size for info in entries)
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for info in entries:
        group = groups[_group(info.filename)]
        group[0] += 1
        group[1] += info.compress_size
        group[2] += info.file_size
    lines = [
        f"Lambda zip: {output}",
        f"  handler        {HANDLER}",
        f"  built for      python{python} {PLATFORMS[platform]} ({platform})",
        f"  zip file       {_mb(packed)}  (direct upload limit {_mb(DIRECT_UPLOAD_LIMIT)})",
        f"  unzipped       {_mb(unpacked)}  (limit {_mb(UNZIPPED_LIMIT)})",
        f"  files          {len(entries)}",
        f'  terraform      lambda_package_path = "{output.resolve()}"',
        f'                 lambda_runtime = "python{python}", lambda_architecture = "{PLATFORMS[platform]}"',
        "",
        f"  {'package':<28}{'files':>7}{'zipped':>12}{'unzipped':>12}",
    ]
    for name, (count, group_packed, group_unpacked) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"  {name:<28}{count:>7}{_mb(group_packed):>12}{_mb(group_unpacked):>12}")
    lines += ["", "  largest files (unzipped, zipped)"]
    for info in sorted(entries, key=lambda i: (-i.file_size, i.filename))[:LARGEST_SHOWN]:
        lines.append(f"  {_mb(info.file_size):>10}{_mb(info.compress_size):>10}  {info.filename}")
    return "\n".join(lines)


def zip_entries(output: Path) -> list[zipfile.ZipInfo]:
    """The file entries of a zip."""
    with zipfile.ZipFile(output) as archive:
        return [info for info in archive.infolist() if not info.is_dir()]


def _group(entry: str) -> str:
    top = entry.split("/")[0]
    if _DIST_INFO.search(top):
        return "(dist-info metadata)"
    return top.removesuffix(".py")


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.2f} MB"


# -- build --------------------------------------------------------------------------------------


def build(
    output: Path, platform: str, python: str, *, bundle_boto3: bool = False, lock: Path | None = None
) -> Path:
    """Build the zip at ``output`` and return its path; PackagingError says what went wrong."""
    if platform not in PLATFORMS:
        raise PackagingError(f"unsupported platform {platform!r}; choose one of {', '.join(PLATFORMS)}")
    if python not in PYTHON_VERSIONS:
        raise PackagingError(f"unsupported Python {python!r}; choose one of {', '.join(PYTHON_VERSIONS)}")
    root = source_root()
    graph = import_graph(root)
    distributions = set(owning_distributions(graph.external).values())
    with tempfile.TemporaryDirectory(prefix="ladder-lambda-") as staging:
        site = Path(staging, "site")
        pins = lock_subset(distributions, lock or root / RUNTIME_LOCK, bundle_boto3=bundle_boto3)
        pip_install(pins, site, platform, python)
        files = {**third_party_files(site), **first_party_files(graph, root)}
        write_zip(output, files, project_metadata())
    unpacked = sum(info.file_size for info in zip_entries(output))
    if unpacked > UNZIPPED_LIMIT:
        raise PackagingError(
            f"{output} unpacks to {_mb(unpacked)}, over Lambda's {_mb(UNZIPPED_LIMIT)} limit"
        )
    return output


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ladder package lambda",
        description=f"Build the read path's AWS Lambda zip (handler {HANDLER}).",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="where to write the zip")
    parser.add_argument(
        "--platform",
        choices=sorted(PLATFORMS),
        default="manylinux2014_x86_64",
        help="wheel platform: manylinux2014_x86_64 for x86_64 functions, manylinux2014_aarch64 for arm64",
    )
    parser.add_argument(
        "--python-version", choices=PYTHON_VERSIONS, default="3.11", help="the Lambda runtime"
    )
    parser.add_argument(
        "--bundle-boto3",
        action="store_true",
        help="also bundle boto3/botocore (the Lambda runtime ships them; bundle to pin their version)",
    )
    parser.add_argument(
        "--lock",
        type=Path,
        help=f"the lock to install third-party packages from (default: the repository's {RUNTIME_LOCK})",
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    try:
        output = build(
            args.output, args.platform, args.python_version, bundle_boto3=args.bundle_boto3, lock=args.lock
        )
    except DependencyInstallError as exc:
        print(f"ladder package lambda: {exc}", file=sys.stderr)
        raise SystemExit(EXIT_DEPENDENCIES) from None
    except (PackagingError, LockError) as exc:
        print(f"ladder package lambda: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    print(size_report(output, args.platform, args.python_version))


if __name__ == "__main__":
    main()
