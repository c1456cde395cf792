"""The ``ladder`` command explains itself: every subcommand and option has help with its default, a
group named without a subcommand lists its choices, and the README's command table lists exactly
what the CLI runs (one registry: ladder_cli/commands.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ladder_cli.commands import COMPONENTS, PACKAGERS, benches, groups
from ladder_cli.main import main

REPO = Path(__file__).resolve().parents[2]

# Runs a command's own module with argparse stopped at parse time, and prints each parser's actions
# and its formatted help, so the test reads what `--help` shows without parsing prose.
SPY = """
import argparse, json, runpy, sys
def spy(self, args=None, namespace=None):
    silent = lambda d: d is None or d is False or d == [] or d == () or d == "" or d is argparse.SUPPRESS
    actions = [{"option": a.option_strings[0], "help": a.help,
                "default": None if silent(a.default) else str(a.default)}
               for a in self._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]
    print(json.dumps({"prog": self.prog, "actions": actions, "help": self.format_help()}))
    raise SystemExit(0)
argparse.ArgumentParser.parse_args = spy
module = sys.argv[1]
sys.argv = [module]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def described(module: str) -> dict[str, Any]:
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "COLUMNS": "1000"}  # one line per option
    done = subprocess.run(
        [sys.executable, "-c", SPY, module], cwd=REPO, capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


MODULES = sorted({c.module for g in (COMPONENTS, PACKAGERS, benches()) for c in g.values()})


@pytest.mark.parametrize("module", MODULES)
def test_every_option_has_help_and_shows_its_default(module: str) -> None:
    parser = described(module)
    assert parser["prog"].startswith("ladder "), parser["prog"]
    silent = [a["option"] for a in parser["actions"] if not (a["help"] or "").strip()]
    assert not silent, f"{parser['prog']}: options without help: {silent}"
    text = " ".join(parser["help"].split())
    unsaid = [a["option"] for a in parser["actions"] if a["default"] is not None
              and "default" not in " ".join(a["help"].split()).lower()
              and f"(default: {a['default']})" not in text]  # fmt: skip
    assert not unsaid, f"{parser['prog']}: defaults not shown for {unsaid}"


@pytest.mark.parametrize("command", ["up", "reset"])
def test_ladder_up_and_reset_explain_every_option(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    entries = re.split(r"\n  (?=-)", capsys.readouterr().out.split("options:", 1)[1])[1:]
    assert len(entries) > 3
    for entry in entries:
        option, _, help_text = entry.strip().partition("  ")
        assert help_text.strip() or "\n" in entry, f"ladder {command} {option}: no help"
    if command == "up":
        text = " ".join(" ".join(entries).split())
        assert "(default: 8080)" in text and "(default: binance)" in text and ".ladder/demo" in text


@pytest.mark.parametrize("group", ["bench", "package"])
def test_a_group_lists_its_commands_and_a_missing_one_prints_the_choices(
    group: str, capsys: pytest.CaptureFixture[str]
) -> None:
    commands = groups()[group]
    assert commands
    with pytest.raises(SystemExit) as done:
        main([group])
    assert done.value.code == 2
    listed = capsys.readouterr().err
    for command in commands.values():
        assert command.name in listed and command.summary.split()[0] in listed, listed
    with pytest.raises(SystemExit):
        main([group, "--help"])
    helped = capsys.readouterr().out
    assert all(name in helped for name in commands), helped
    with pytest.raises(SystemExit) as done:
        main([group, "nosuch"])
    assert done.value.code == 2
    assert f"invalid choice: 'nosuch' (choose from {', '.join(repr(n) for n in commands)})" in (
        capsys.readouterr().err
    )


def test_every_benchmark_module_is_registered() -> None:
    runnable = {
        p.stem for p in (REPO / "bench").glob("*.py") if 'if __name__ == "__main__":' in p.read_text()
    }
    assert {c.module.removeprefix("bench.") for c in benches().values()} == runnable


def test_the_readme_command_table_is_the_cli() -> None:
    readme = (REPO / "README.md").read_text()
    rows = re.findall(r"^\| `ladder ([^`]+)` \|", readme, re.M)
    firsts = {row.split()[0] for row in rows}
    assert firsts == {"up", "reset", *COMPONENTS, *groups()}, rows
    for group, commands in groups().items():
        (row,) = [r for r in rows if r.startswith(f"{group} ")]
        listed = row.split()[1].replace("\\|", "|").split("|")
        assert sorted(listed) == sorted(commands), f"the README's `ladder {group}` row: {listed}"
