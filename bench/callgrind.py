"""Instruction counts of a benchmark's stages under ``valgrind --tool=callgrind``.

CPU time on a shared 2-core machine moves by tens of percent with what else runs; instructions do
not. A benchmark marks where each stage begins and ends (:func:`begin`, :func:`end`); run under
callgrind (:func:`rerun_under_callgrind`), each end dumps the instructions executed since the
stage began into a file of its own, named by the stage, and :func:`instructions` sums them per
stage. Outside valgrind the marks cost next to nothing and do nothing.

The marks are valgrind's client requests (``CALLGRIND_ZERO_STATS``, ``CALLGRIND_DUMP_STATS_AT``),
which only C code can make: a tiny library of three functions is compiled with the system's C
compiler against valgrind's header on first use. Without either, the marks are no-ops and the
benchmark says it could not count.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

_SOURCE = r"""
#include <valgrind/callgrind.h>
void ladder_cg_zero(void) { CALLGRIND_ZERO_STATS; }
void ladder_cg_dump(const char *name) { CALLGRIND_DUMP_STATS_AT(name); }
int ladder_cg_running(void) { return RUNNING_ON_VALGRIND; }
"""
_ENV = "LADDER_BENCH_CALLGRIND_DIR"


def _load() -> ctypes.CDLL | None:
    compiler = shutil.which("cc")
    if compiler is None or not Path("/usr/include/valgrind/callgrind.h").exists():
        return None
    out = Path(tempfile.gettempdir()) / f"ladder-callgrind-marks-{os.getuid()}.so"
    if not out.exists():
        source = out.with_suffix(".c")
        source.write_text(_SOURCE)
        subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", str(out), str(source)], check=True)
    library = ctypes.CDLL(str(out))
    library.ladder_cg_dump.argtypes = [ctypes.c_char_p]
    return library


_LIBRARY = _load() if os.environ.get(_ENV) else None


def running() -> bool:
    """True under callgrind (started by :func:`rerun_under_callgrind`) with the marks compiled."""
    return _LIBRARY is not None and bool(_LIBRARY.ladder_cg_running())


def begin() -> None:
    """A stage begins: forget what was counted since the last mark."""
    if _LIBRARY is not None:
        _LIBRARY.ladder_cg_zero()


def end(stage: str) -> None:
    """``stage`` ends: dump what was counted since it began."""
    if _LIBRARY is not None:
        _LIBRARY.ladder_cg_dump(stage.encode())


def rerun_under_callgrind(module: str, argv: list[str], out: Path) -> int:
    """Run ``python -m module argv`` under callgrind, its dumps in ``out``; its exit status."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("callgrind.out*"):
        old.unlink()
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/callgrind.out",
               "--dump-line=no", "--compress-strings=no", sys.executable, "-m", module, *argv]  # fmt: skip
    return subprocess.run(command, env={**os.environ, _ENV: str(out)}, check=False).returncode


def instructions(out: Path) -> Counter[str]:
    """Instructions per stage, summed over every dump in ``out``."""
    totals: Counter[str] = Counter()
    prefix = "Client Request: "
    for dump in out.glob("callgrind.out*"):
        stage = None
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith("desc: Trigger:") and prefix in line:
                stage = line.split(prefix, 1)[1].strip()
            elif line.startswith(("summary:", "totals:")) and stage is not None:
                totals[stage] += int(line.split()[1])
                break
    return totals
