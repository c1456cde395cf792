"""The data directory of ``ladder up``: live and demo apart, said at start, locked while in use,
emptied by ``ladder reset`` (never under a running stack)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ladder_cli import data_dir as data_dirs
from ladder_cli.main import main


def test_live_and_demo_keep_their_data_apart() -> None:
    assert data_dirs.default_data_dir("binance") == Path(".ladder/live")
    assert data_dirs.default_data_dir("fake") == Path(".ladder/demo")


def test_the_start_line_says_what_the_directory_holds() -> None:
    empty = data_dirs.describe(Path("/srv/.ladder/demo"), [], "ladder reset --venue fake")
    assert empty.startswith("Data directory /srv/.ladder/demo: the control store (tenants, API key hashes")
    assert "no tenants yet" in empty and "`ladder reset --venue fake` starts afresh" in empty
    names = [f"t{i}" for i in range(7)]
    held = data_dirs.describe(Path("/d"), names, "ladder reset")
    assert "7 tenants from earlier runs (t0, t1, t2, t3, t4 and 2 more)" in held
    assert "1 tenant from earlier runs (acme)" in data_dirs.describe(Path("/d"), ["acme"], "ladder reset")


def test_a_directory_in_use_is_neither_shared_nor_reset(tmp_path: Path) -> None:
    data = tmp_path / "demo"
    # Another process holds it, as a running `ladder up` does.
    code = (
        "import sys, time; from pathlib import Path; from ladder_cli.data_dir import hold; "
        "lock = hold(Path(sys.argv[1])); print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(data)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(data_dirs.DataDirInUseError, match="in use by another `ladder up`"):
            data_dirs.hold(data)
        with pytest.raises(SystemExit, match=r"ladder reset: .* in use by another `ladder up`"):
            main(["reset", "--data-dir", str(data), "--yes"])
        assert data.exists()
    finally:
        holder.kill()
        holder.wait()
    main(["reset", "--data-dir", str(data), "--yes"])  # the lock went with the process
    assert not data.exists()


def test_reset_asks_first_unless_told(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "live"
    (data / "valkey").mkdir(parents=True)
    with pytest.raises(SystemExit, match="give --yes"):
        main(["reset", "--data-dir", str(data)])  # no terminal to ask on
    assert data.exists()
    main(["reset", "--data-dir", str(data), "--yes"])
    assert f"Deleted {data}" in capsys.readouterr().out
    main(["reset", "--data-dir", str(data), "--yes"])
    assert "nothing to reset" in capsys.readouterr().out
