"""`ladder package lambda`: the zip imports and answers API Gateway events in a clean interpreter.

The slow test builds the real zip once, unpacks it, and runs the handler in ``python -I -S``. That
interpreter has no site-packages and no repository on its path. Its path holds only the unpacked
zip, then a stand-in for what the Lambda runtime puts next to it (boto3 and its dependencies, which
the zip leaves out on purpose). It serves a health check and a book read against the session's
Valkey. The fast tests cover the builder's parts: the import analysis, what counts as bloat, and
the deterministic zip.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import re
import subprocess
import sys
import sysconfig
import time
import zipfile
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from book_store.catalog import MarketCatalog, MarketInfo
from book_store.codec import BookStatus, SnapshotMeta, encode_snapshot
from book_store.connect import opened, store_client
from book_store.schema import BookKey
from book_store.writer import BookWriter
from control_plane.models import OPERATOR, Principal
from control_plane.scheduling.markets import StaticMarketValidator
from control_plane.service import ControlService
from control_plane.stores.redis import RedisControlStore
from ladder_cli.dependency_lock import canonical, read_lock
from ladder_cli.lambda_package import (
    EXIT_DEPENDENCIES,
    HANDLER,
    PYTHON_VERSIONS,
    import_graph,
    is_bloat,
    source_root,
    write_zip,
)

REPO = Path(__file__).resolve().parents[2]
ADMIN_KEY = "ldr_admin_zip_test_0123456789abcdef"
PEPPER = "pepper-for-the-zip-test-0123456789"
BOOK = BookKey("binance.com", "ETHBTC")
BIDS = [(f"0.0512{9 - i}", f"{i + 1}.25") for i in range(8)]
ASKS = [(f"0.0513{i}", f"{i + 2}.50") for i in range(8)]
UPDATE_ID = 4242

# Where each machine type finds Lambda's wheels (the child must load the zip's compiled modules).
WHEEL_PLATFORMS = {"x86_64": "manylinux2014_x86_64", "aarch64": "manylinux2014_aarch64"}
# What the Lambda Python runtime ships next to the function (/var/runtime), so the zip leaves it out.
RUNTIME_MODULES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3")
# pip's words for "no route to an index" (as opposed to a wheel that does not exist).
NO_INDEX = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|"
    r"Name or service not known|Network is unreachable|Max retries exceeded|ProxyError|Could not fetch URL"
)
NOT_IN_ZIP = (
    "tests",
    "bench",
    "fake_venue",
    "ingest_nodes",
    "sdk",
    "ladder_sdk",
    "aiohttp",
    "boto3",
    "botocore",
)
NOT_IN_ZIP_FILES = (
    "read_functions/server/websocket/connection.py",
    "read_functions/server/http1.py",
    "read_functions/server/workers.py",
    "read_functions/__main__.py",
    "ladder_cli/lambda_package.py",
    "ladder_cli/main.py",
    "ladder_cli/supervisor.py",
    "control_plane/__main__.py",
    "ladder_process/embedded_valkey.py",
)

# Runs in the clean interpreter: put the unpacked zip (then the runtime's own packages) on the path,
# answer the events from stdin, and say where every loaded module came from.
CHILD = """
import json, sys
sys.path[:0] = sys.argv[1:]
from read_functions.server.lambda_handler import handler
answers = [handler(event, None) for event in json.load(sys.stdin)]
files = {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())}
json.dump({"answers": answers, "files": {name: file for name, file in files.items() if file}}, sys.stdout)
"""


@dataclass(frozen=True)
class BuiltZip:
    path: Path
    report: str


@pytest.fixture(scope="session")
def lambda_zip(tmp_path_factory: pytest.TempPathFactory) -> BuiltZip:
    """The zip, built once per session by `ladder package lambda` for this machine's architecture."""
    wheel_platform = WHEEL_PLATFORMS.get(platform.machine())
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    if sys.platform != "linux" or wheel_platform is None or python not in PYTHON_VERSIONS:
        pytest.skip(
            f"Lambda wheels load only on Linux x86_64/aarch64 with Python {'/'.join(PYTHON_VERSIONS)}"
        )
    output = tmp_path_factory.mktemp("lambda") / "ladder-read-lambda.zip"
    command = [sys.executable, "-m", "ladder_cli.main", "package", "lambda", "--output", str(output),
               "--platform", wheel_platform, "--python-version", python]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    if done.returncode == EXIT_DEPENDENCIES and NO_INDEX.search(done.stderr):
        pytest.skip(f"pip cannot reach a package index: {NO_INDEX.search(done.stderr)[0]}")  # type: ignore[index]
    assert done.returncode == 0, f"the build failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    print(f"\nbuilt in {time.monotonic() - started:.1f} s\n{done.stdout}")
    return BuiltZip(output, done.stdout)


def runtime_dir(base: Path) -> Path:
    """A stand-in for /var/runtime: links to this environment's boto3 and the packages it brings."""
    runtime = base / "runtime"
    runtime.mkdir()
    for name in RUNTIME_MODULES:
        spec = find_spec(name)
        assert spec is not None and spec.origin is not None, f"{name} is not installed"
        source = Path(spec.origin)
        source = source.parent if source.name == "__init__.py" else source
        (runtime / source.name).symlink_to(source, target_is_directory=source.is_dir())
    return runtime


def api_gateway_event(path: str, query: str = "", headers: dict[str, str] | None = None) -> dict[str, Any]:
    """A GET as an API Gateway HTTP API delivers it (payload format 2.0)."""
    api_id = "k7x2p9q4rd"
    domain = f"{api_id}.execute-api.eu-central-1.amazonaws.com"
    client = {"sourceIp": "192.0.2.44", "userAgent": "zip-test/1.0"}
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": {
            "accept": "application/json",
            "host": domain,
            "user-agent": client["userAgent"],
            "x-forwarded-for": client["sourceIp"],
            "x-forwarded-proto": "https",
            **(headers or {}),
        },
        "queryStringParameters": dict(p.split("=", 1) for p in query.split("&")) if query else None,
        "requestContext": {
            "accountId": "210987654321",
            "apiId": api_id,
            "domainName": domain,
            "domainPrefix": api_id,
            "http": {"method": "GET", "path": path, "protocol": "HTTP/1.1", **client},
            "requestId": "Zt0pQhXLFiAEMNw=",
            "routeKey": "$default",
            "stage": "$default",
            "time": "01/Dec/2026:09:30:00 +0000",
            "timeEpoch": 1796117400000,
        },
        "isBase64Encoded": False,
    }


async def seed_store(url: str) -> str:
    """A tenant subscribed to ETHBTC, its key, the catalog entry and a synced snapshot; returns the key."""
    client = await opened(store_client(url, cluster=None))
    try:
        await MarketCatalog(client).replace(
            "binance.com", [MarketInfo("binance.com", "ETHBTC", "TRADING", "ETH", "BTC")]
        )
        service = ControlService(
            RedisControlStore(client),
            PEPPER.encode(),
            ADMIN_KEY,
            StaticMarketValidator({"binance.com": ["ETHBTC"]}),
        )
        tenant = await service.tenants.create(
            {"name": "zip-test", "max_markets": 2, "rate_limit_rps": 100}, actor=OPERATOR
        )
        record, key = await service.keys.create(tenant.id, actor=OPERATOR)
        await service.subscriptions.subscribe(
            tenant.id, BOOK.exchange, BOOK.market, actor=Principal(tenant.id, record.id, False)
        )
        now = time.time_ns() // 1_000_000
        meta = SnapshotMeta(UPDATE_ID, now - 3, now - 2, now, 0, BookStatus.SYNCED)
        level = '["{}","{}"]'.format
        writer = BookWriter(client)
        writer.put(
            BOOK,
            0,
            encode_snapshot(meta, [level(*b).encode() for b in BIDS], [level(*a).encode() for a in ASKS]),
        )
        await writer.drain()
        await writer.close()
        return key
    finally:
        await client.aclose()


async def run_clean(
    app: Path, runtime: Path, env: dict[str, str], events: list[dict[str, Any]]
) -> dict[str, Any]:
    """The handler over ``events`` in ``python -I -S`` with only the zip and the runtime on its path."""
    pipe = asyncio.subprocess.PIPE
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        "-S",
        "-c",
        CHILD,
        str(app),
        str(runtime),
        stdin=pipe,
        stdout=pipe,
        stderr=pipe,
        env=env,
    )
    out, err = await asyncio.wait_for(child.communicate(json.dumps(events).encode()), 60)
    assert child.returncode == 0, err.decode()[-4000:]
    result: dict[str, Any] = json.loads(out)
    return result


def outside(files: dict[str, str], *allowed: Path) -> dict[str, str]:
    """Modules loaded from anywhere but ``allowed`` and the standard library (site-packages excluded)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return {
        name: file
        for name, file in files.items()
        if not any(Path(file).is_relative_to(root) for root in allowed)
        and (not Path(file).is_relative_to(stdlib) or "site-packages" in Path(file).parts)
    }


@pytest.mark.slow
async def test_zip_answers_api_gateway_events_in_a_clean_interpreter(
    lambda_zip: BuiltZip, clean_redis_url: str, tmp_path: Path
) -> None:
    with zipfile.ZipFile(lambda_zip.path) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "task")
    size = lambda_zip.path.stat().st_size
    print(f"zip: {size / 1024 / 1024:.2f} MB, {len(names)} entries")
    assert HANDLER in lambda_zip.report and f"{size / 1024 / 1024:.2f} MB" in lambda_zip.report
    assert names == sorted(names) and "read_functions/server/lambda_handler.py" in names
    assert not [n for n in names if n.split("/")[0] in NOT_IN_ZIP or n in NOT_IN_ZIP_FILES]
    assert not [n for n in names if {"tests", "test", "__pycache__"} & set(n.split("/")[:-1])]
    assert any(n.startswith("uvloop/loop.") and n.endswith(".so") for n in names)  # the Linux wheel, compiled
    # OTLP/HTTP export works out of the box: the exporter and the protobuf runtime it encodes with
    assert "opentelemetry/exporter/otlp/proto/http/trace_exporter/__init__.py" in names
    assert any(n.startswith("google/protobuf/") for n in names)
    assert size < 50 * 1024 * 1024  # Lambda's direct-upload limit, with a lot of room to spare

    app = tmp_path / "task"
    runtime = runtime_dir(tmp_path)
    key = await seed_store(clean_redis_url)
    env = {"LADDER_REDIS_URL": clean_redis_url, "LADDER_ADMIN_KEY": ADMIN_KEY, "LADDER_PEPPER": PEPPER,
           "LADDER_MAX_SILENCE_MS": "600000", "PATH": os.defpath}  # fmt: skip
    book_path = f"/v1/books/{BOOK.exchange}/{BOOK.market}"
    result = await run_clean(app, runtime, env, [
        api_gateway_event("/healthz"),
        api_gateway_event(book_path, "depth=5", {"x-api-key": key}),
        api_gateway_event(book_path, "depth=5", {"authorization": f"Bearer {key}x"}),
        api_gateway_event("/console/vendor/uPlot.esm.min.js"),
    ])  # fmt: skip

    health, book, refused, console = result["answers"]
    assert (
        "read_functions/console/index.html" in names
        and "read_functions/console/vendor/uPlot-LICENSE.txt" in names
    )
    assert console["statusCode"] == 200 and console["headers"]["Content-Type"].startswith("text/javascript")
    assert "script-src 'self'" in console["headers"]["Content-Security-Policy"] and "uPlot" in console["body"]
    assert health["statusCode"] == 200 and json.loads(health["body"]) == {"status": "ok"}
    assert book["statusCode"] == 200 and not book["isBase64Encoded"], book
    assert book["headers"]["Content-Type"] == "application/json"
    served = json.loads(book["body"])
    assert (served["exchange"], served["market"], served["update_id"]) == (
        BOOK.exchange,
        BOOK.market,
        UPDATE_ID,
    )
    assert served["status"] == "synced" and served["replica"] == 0 and isinstance(served["age_ms"], int)
    assert served["bids"] == [list(b) for b in BIDS[:5]] and served["asks"] == [list(a) for a in ASKS[:5]]
    assert refused["statusCode"] == 401 and json.loads(refused["body"])["error"]["code"] == "unauthorized"
    assert result["files"]["redis"].startswith(str(app)) and result["files"]["pydantic_core"].startswith(
        str(app)
    )
    assert outside(result["files"], app, runtime) == {}


def test_the_zip_carries_the_runtime_locks_versions(lambda_zip: BuiltZip) -> None:
    locked = {pin.name: pin.version for pin in read_lock(REPO / "requirements" / "runtime.txt")}
    with zipfile.ZipFile(lambda_zip.path) as archive:
        metadata = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        carried = {}
        for name in metadata:
            headers = archive.read(name).decode().split("\n\n", 1)[0].splitlines()
            fields = dict(line.split(": ", 1) for line in headers if ": " in line)
            carried[canonical(fields["Name"])] = fields["Version"]
    carried.pop("ladder")
    assert {"redis", "orjson", "pydantic-core", "uvloop"} <= set(carried)
    assert {name: locked.get(name) for name in carried} == carried
    assert not {"boto3", "botocore", "s3transfer"} & set(carried), "the Lambda runtime provides boto3"


def test_handler_imports_only_the_read_path() -> None:
    graph = import_graph(source_root())
    assert {
        "read_functions.server.lambda_handler",
        "read_functions.deps",
        "control_plane.service",
        "book_store.reader",
    } <= set(graph.modules)
    left_out = {
        "read_functions.server.websocket.connection",
        "read_functions.server.http1",
        "read_functions.server.workers",
        "ladder_cli.lambda_package",
        "ladder_cli.main",
        "ladder_cli.supervisor",
        "ladder_process.embedded_valkey",
    }
    assert not left_out & set(graph.modules)
    assert {name.split(".")[0] for name in graph.modules} == {
        "read_functions",
        "control_plane",
        "book_store",
        "ladder_process",
    }
    tops = {name.split(".")[0] for name in graph.external}
    assert {
        "redis",
        "orjson",
        "pydantic_settings",
        "opentelemetry",
        "uvloop",
    } <= tops and "aiohttp" not in tops
    assert {
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    } <= graph.external, "the OTLP exporter is imported by name, so the zip carries it"


def test_import_analysis_follows_relative_and_late_imports_but_not_type_checking(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from .. import helpers\n")
    (package / "helpers.py").write_text("import orjson\n")
    (package / "late.py").write_text("def f():\n    import uvloop\n")
    (package / "typed_only.py").write_text("import aiohttp\n")
    (package / "entry.py").write_text(
        "from typing import TYPE_CHECKING\nfrom .sub import thing\nfrom pkg import late\n"
        "if TYPE_CHECKING:\n    from pkg import typed_only\nelse:\n    import redis.asyncio\n"
    )
    graph = import_graph(tmp_path, "pkg.entry", ("pkg",))
    assert set(graph.modules) == {"pkg", "pkg.entry", "pkg.sub", "pkg.helpers", "pkg.late"}
    assert {"orjson", "uvloop", "redis.asyncio"} <= graph.external and "aiohttp" not in graph.external


def test_bloat_is_dropped_and_metadata_kept() -> None:
    dropped = [
        "redis/__pycache__/client.cpython-311.pyc",
        "pkg/tests/test_x.py",
        "uvloop/loop.pyx",
        "uvloop/loop.pyi",
        "pydantic/py.typed",
        "bin/dotenv",
        "redis-8.1.0.dist-info/RECORD",
    ]
    kept = [
        "redis/client.py",
        "uvloop/loop.cpython-311-x86_64-linux-gnu.so",
        "redis-8.1.0.dist-info/METADATA",
        "opentelemetry_api-1.45.2.dist-info/entry_points.txt",
        "orjson-3.13.0.dist-info/licenses/LICENSE-MIT",
    ]
    assert [p for p in dropped if not is_bloat(PurePosixPath(p))] == []
    assert [p for p in kept if is_bloat(PurePosixPath(p))] == []


def test_zip_bytes_depend_only_on_contents(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    files = {"b/mod.py": b"x = 1\n", "a.py": b"y = 2\n", "b/ext.so": b"\x7fELF"}
    for name, data in files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(data)
    (source / "b/ext.so").chmod(0o775)
    entries = {name: source / name for name in files}
    write_zip(tmp_path / "one.zip", entries, {"meta.txt": b"v1\n"})
    for path in entries.values():
        os.utime(path, (1_000_000_000, 1_000_000_000))
    write_zip(tmp_path / "two.zip", dict(reversed(entries.items())), {"meta.txt": b"v1\n"})
    assert (tmp_path / "one.zip").read_bytes() == (tmp_path / "two.zip").read_bytes()
    with zipfile.ZipFile(tmp_path / "one.zip") as archive:
        assert archive.namelist() == ["a.py", "b/ext.so", "b/mod.py", "meta.txt"]
        modes = {info.filename: info.external_attr >> 16 & 0o777 for info in archive.infolist()}
        assert modes == {"a.py": 0o644, "b/ext.so": 0o755, "b/mod.py": 0o644, "meta.txt": 0o644}
