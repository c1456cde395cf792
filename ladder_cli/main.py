"""The ``ladder`` command.

``ladder up`` supervises a whole stack on one machine; every other subcommand *is* one component,
run exactly as production runs it. Component commands replace this process with
``python -m <package>`` (exec), so the CLI never imports the components it starts and the package
arrows keep pointing one way.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ladder_cli import data_dir as data_dirs
from ladder_cli.commands import COMPONENTS, groups
from ladder_process.cli import HelpFormatter

if TYPE_CHECKING:
    from ladder_cli.supervisor import Child


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in COMPONENTS:
        _exec_module(COMPONENTS[argv[0]].module, argv[1:])
    group = groups().get(argv[0]) if argv else None
    if group is not None and len(argv) > 1 and argv[1] in group:
        _exec_module(group[argv[1]].module, argv[2:])
    parser = _parser()
    args = parser.parse_args(argv)  # what is not handed over: ladder up, reset, help, mistakes
    if args.command == "up":
        _up(args)
    elif args.command == "reset":
        _reset(args)
    else:
        (getattr(args, "group", None) or parser).print_help(sys.stderr)
        raise SystemExit(2)


def _exec_module(module: str, args: list[str]) -> None:
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, "-m", module, *args])  # noqa: S606 - our own interpreter


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ladder",
        description="Live crypto order books, kept in sync once and served to many tenants.",
        epilog="`ladder COMMAND --help` explains each command and its options.",
        formatter_class=HelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    _up_options(
        sub.add_parser("up", help="run the whole stack on this machine", formatter_class=HelpFormatter)
    )
    reset = sub.add_parser(
        "reset",
        help="delete the data directory `ladder up` keeps (tenants, keys, subscriptions): start afresh",
        formatter_class=HelpFormatter,
    )
    reset.add_argument(
        "--venue",
        choices=VENUES,
        default="binance",
        help="whose default data directory: .ladder/live (binance) or .ladder/demo (fake)",
    )
    reset.add_argument("--data-dir", type=Path, help="this directory instead of the venue's default")
    reset.add_argument("--yes", action="store_true", help="do not ask first")
    for command in COMPONENTS.values():
        sub.add_parser(
            command.name, help=f"{command.summary} (`ladder {command.name} --help`)", add_help=False
        )
    for name, commands in groups().items():
        what = {"bench": "benchmarks, run by hand (never in the tests)", "package": "build deployables"}[name]
        group = sub.add_parser(
            name,
            help=f"{what}: {', '.join(commands)}",
            description=f"ladder {name} NAME [OPTIONS]: {what}.",
            epilog=f"`ladder {name} NAME --help` explains each one's options.",
            formatter_class=HelpFormatter,
        )
        group.set_defaults(group=group)  # a group named without a NAME prints its choices
        names = group.add_subparsers(dest="name", metavar="NAME", title="choose one")
        for command in commands.values():
            names.add_parser(command.name, help=command.summary, add_help=False)
    return parser


VENUES = ["binance", "fake"]


def _up_options(up: argparse.ArgumentParser) -> None:
    up.add_argument(
        "--venue",
        choices=VENUES,
        default="binance",
        help="live Binance (needs internet), or the built-in offline fake venue (what `make demo` runs)",
    )
    up.add_argument("--ingest-nodes", type=int, default=2, metavar="N", help="ingest node processes")
    up.add_argument("--host", default="127.0.0.1", help="address the read API listens on")
    up.add_argument("--port", type=int, default=8080, help="port the read API listens on (0: a free one)")
    up.add_argument("--workers", type=int, default=1, help="read worker processes")
    up.add_argument(
        "--compat-port", type=int, help="also serve the UBDCC API on this port, on 127.0.0.1 (docs/ubdcc.md)"
    )
    up.add_argument("--compat-tenant", default="compat", help="the tenant the UBDCC listener acts as")
    up.add_argument(
        "--compat-keyless-changes",
        action="store_true",
        help="let keyless UBDCC clients create and stop books (see docs/ubdcc.md)",
    )
    up.add_argument(
        "--tls-cert", metavar="PEM", help="serve HTTPS with this certificate chain (with --tls-key)"
    )
    up.add_argument("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    up.add_argument(
        "--data-dir",
        type=Path,
        help="where the embedded stores keep tenants, API key hashes and subscriptions across runs, "
        "readable by its owner only (default: .ladder/live with --venue binance, .ladder/demo with "
        "--venue fake); `ladder reset` empties it",
    )
    up.add_argument("--fake-symbols", type=int, default=50, help="symbols per market type on the fake venue")
    up.add_argument("--fake-rate", type=float, default=10.0, help="events/s per active fake symbol")


def _up(args: argparse.Namespace) -> None:
    from book_store.connect import redacted
    from ladder_cli.readiness import ReadinessWatch
    from ladder_cli.supervisor import Child, Supervisor, child_env
    from ladder_process.redaction import install_log_redaction

    logging.basicConfig(level=logging.INFO, format="%(asctime)s up %(levelname)s: %(message)s")
    install_log_redaction(os.environ.get("LADDER_ADMIN_KEY"))  # and every key-shaped word children print
    supervisor = Supervisor()
    env: dict[str, str] = {}
    try:
        if os.environ.get("LADDER_REDIS_URL"):
            stores = f"store {redacted(os.environ['LADDER_REDIS_URL'])}"
        else:
            data_dir = args.data_dir or data_dirs.default_data_dir(args.venue)
            try:
                held = data_dirs.hold(data_dir)  # noqa: F841 - held while this process runs
            except data_dirs.DataDirInUseError as exc:
                raise SystemExit(f"ladder up: {exc}") from None
            if notice := data_dirs.old_layout_notice(data_dir):
                print(notice, flush=True)
            children, store_env = embedded_stores(data_dir.resolve())
            for child in children:
                supervisor.start(child)
            env.update(store_env)
            print(
                data_dirs.describe(
                    data_dir.resolve(), data_dirs.tenant_names(store_env), _reset_command(args)
                ),
                flush=True,
            )
            stores = f"stores on 127.0.0.1, data in {data_dir}"
        admin_key = os.environ.get("LADDER_ADMIN_KEY")
        if not admin_key:
            admin_key = "ldr_admin_" + secrets.token_urlsafe(24)
            print(f"Generated admin key (shown once): {admin_key}", flush=True)
        env["LADDER_ADMIN_KEY"] = admin_key

        if args.venue == "fake":
            n = str(args.fake_symbols)
            venue = Child(
                "fake-venue",
                [
                    "fake_venue",
                    "--port",
                    "0",
                    "--spot-symbols",
                    n,
                    "--futures-symbols",
                    n,
                    "--alpaca-symbols",
                    n,
                    "--okx-symbols",
                    n,
                    "--bybit-symbols",
                    n,
                    "--rate",
                    str(args.fake_rate),
                    *FAKE_ALPACA_ARGS,
                ],
                child_env(**env),
                ready_key="FAKE_VENUE_URL",
            )
            env.update(fake_venue_env(supervisor.start(venue)))

        supervisor.start(Child("control", ["control_plane"], child_env(**env)))
        for i in range(args.ingest_nodes):
            node = Child(
                f"ingest-{i + 1}",
                ["ingest_nodes", "--node-id", f"node-{i + 1}"],
                child_env(**env),
                ready_key="LADDER_INGEST_NODE",
            )
            supervisor.start(node)
        read_args = [
            "read_functions",
            "--host",
            args.host,
            "--port",
            str(args.port),
            "--workers",
            str(args.workers),
        ]
        if args.tls_cert:
            read_args += ["--tls-cert", args.tls_cert, "--tls-key", args.tls_key]
        if args.compat_port:
            read_args += ["--compat-port", str(args.compat_port), "--compat-tenant", args.compat_tenant]
            if args.compat_keyless_changes:
                read_args.append("--compat-keyless-changes")
        url = supervisor.start(Child("read", read_args, child_env(**env), ready_key="LADDER_READ_URL"))
        print(
            f"Ladder is up: {url}  (console {url}/console; {stores}; venue {args.venue}). "
            "Ctrl-C stops everything.",
            flush=True,
        )
        ReadinessWatch(url, args.venue).start()
        supervisor.run_until_signal()
    finally:
        supervisor.stop()


def _reset_command(args: argparse.Namespace) -> str:
    """The ``ladder reset`` that empties the data directory of this ``ladder up``."""
    if args.data_dir is not None:
        return f"ladder reset --data-dir {args.data_dir}"
    return "ladder reset" + (" --venue fake" if args.venue == "fake" else "")


def _reset(args: argparse.Namespace) -> None:
    data_dir = args.data_dir or data_dirs.default_data_dir(args.venue)
    if not data_dir.exists():
        print(f"{data_dir} does not exist: nothing to reset")
        return
    if not args.yes:
        if not sys.stdin.isatty():
            raise SystemExit(f"ladder reset: give --yes to delete {data_dir} without asking")
        answer = input(f"Delete {data_dir} (every tenant, API key and subscription kept there)? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            raise SystemExit("ladder reset: nothing deleted")
    try:
        data_dirs.reset(data_dir)
    except data_dirs.DataDirInUseError as exc:
        raise SystemExit(f"ladder reset: {exc}") from None
    print(f"Deleted {data_dir}: the next `ladder up` with it starts with no tenants")


STORE_PASSWORD_FILE = "store-password"  # noqa: S105 - the name of the file that holds it


def embedded_stores(data_dir: Path, log_dir: Path | None = None) -> tuple[list[Child], dict[str, str]]:
    """The two Valkey servers ``ladder up`` supervises, and the variables that lead children to them.

    The control store (tenants, key hashes, subscriptions, assignments, the pepper) keeps an
    append-only file in ``data_dir/valkey``; the book store (snapshots, change messages, replica
    counters, catalogs, the weight budget, rate limits, usage) keeps nothing on disk, as ingest
    nodes republish everything in it. Both listen on loopback, on ports fixed for the session so
    a restarted server is found where the children look, and ask for one password, generated
    once into ``data_dir/store-password`` (``0600``); the children get it inside their URLs.
    """
    from ladder_cli.supervisor import Child, child_env
    from ladder_process.embedded_valkey import READY_KEY, free_port, make_private, store_url

    make_private(data_dir)
    password = _store_password(data_dir / STORE_PASSWORD_FILE)
    control_port = free_port()
    books_port = free_port()
    while books_port == control_port:
        books_port = free_port()
    server = ["ladder_process.embedded_valkey", "--password-file", str(data_dir / STORE_PASSWORD_FILE)]
    children = [
        Child(
            "store-control",
            [*server, str(data_dir / "valkey"), "--port", str(control_port)],
            child_env(),
            ready_key=READY_KEY,
            log_path=None if log_dir is None else log_dir / "store-control.log",
        ),
        Child(
            "store-books",
            [*server, str(data_dir / "books"), "--port", str(books_port), "--volatile"],
            child_env(),
            ready_key=READY_KEY,
            log_path=None if log_dir is None else log_dir / "store-books.log",
        ),
    ]
    env = {
        "LADDER_REDIS_URL": store_url("127.0.0.1", books_port, password),
        "LADDER_CONTROL_REDIS_URL": store_url("127.0.0.1", control_port, password),
    }
    return children, env


def _store_password(path: Path) -> str:
    """The embedded stores' password: read from ``path``, or generated into it (owner-only)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        path.chmod(0o600)
        return path.read_text().strip()
    with os.fdopen(fd, "w") as file:
        file.write(secrets.token_urlsafe(32))
    return path.read_text().strip()


FAKE_ALPACA_CREDENTIALS = ",".join(f"fake-alpaca-key-{i}:fake-alpaca-secret-{i}" for i in range(1, 9))
"""The keys the fake venue accepts, each for one connection at a time, as Alpaca's plans do."""
FAKE_ALPACA_ARGS = ("--alpaca-credentials", FAKE_ALPACA_CREDENTIALS, "--alpaca-connection-limit", "1")
FAKE_EXCHANGES = "binance.com,binance.com-futures,alpaca-crypto,okx,bybit,bybit-linear,kraken,coinbase"


def fake_venue_env(url: str) -> dict[str, str]:
    """Point every venue endpoint at the fake venue served at ``url`` (the paths are the fake's, see
    ``fake_venue.app``), Alpaca (and its keys), OKX, Bybit, Kraken and Coinbase included unless
    ``LADDER_EXCHANGES`` says otherwise."""
    ws = "ws" + url.removeprefix("http")
    return {
        "LADDER_BINANCE_SPOT_REST_URL": url,
        "LADDER_BINANCE_SPOT_WS_URL": ws,
        "LADDER_BINANCE_FUTURES_REST_URL": url,
        "LADDER_BINANCE_FUTURES_WS_URL": f"{ws}/public",
        "LADDER_ALPACA_STREAM_URL": ws,
        "LADDER_ALPACA_TRADING_URL": url,
        "LADDER_ALPACA_CREDENTIALS": FAKE_ALPACA_CREDENTIALS,
        "LADDER_OKX_REST_URL": url,
        "LADDER_OKX_WS_URL": ws,
        "LADDER_BYBIT_REST_URL": f"{url}/bybit-spot",
        "LADDER_BYBIT_LINEAR_REST_URL": f"{url}/bybit-linear",
        "LADDER_BYBIT_SPOT_WS_URL": f"{ws}/v5/public/spot",
        "LADDER_BYBIT_LINEAR_WS_URL": f"{ws}/v5/public/linear",
        "LADDER_KRAKEN_REST_URL": url,
        "LADDER_KRAKEN_WS_URL": ws,
        "LADDER_COINBASE_REST_URL": url,
        "LADDER_COINBASE_WS_URL": ws,
        "LADDER_EXCHANGES": os.environ.get("LADDER_EXCHANGES", FAKE_EXCHANGES),
    }


if __name__ == "__main__":
    main()
