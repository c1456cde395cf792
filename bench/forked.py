"""Measuring processes forked from a benchmark: they freeze the heap they inherit, and what they
send back is waited for a bounded time only.

A forked child starts with a copy of every object the benchmark holds. Left as it is, the
child's first full collections walk that whole copy (tens of milliseconds), and a child that
measures latencies (the load generator, the streams' receiver) would stamp those pauses onto
what it measures. None of it is the child's garbage, so the child freezes it (``gc.freeze``) before
it begins: its collections walk only what it makes.

A child reports over a pipe. A benchmark that waits on a bare ``recv`` hangs forever, idle, when
the child dies first (crashed, killed for memory): while the parent holds its own copy of the
child's end the pipe never reads as closed. So :func:`start` closes that copy, and
:func:`message` waits for the child's message or its death, whichever comes first, for a bounded
time, and fails the benchmark naming the child instead of hanging.
"""

from __future__ import annotations

import gc
import multiprocessing
import multiprocessing.connection
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

JOIN_S = 10.0
"""How long a child that has sent its message may take to exit before it is killed."""


def _frozen_run(target: Callable[..., None], args: tuple[Any, ...]) -> None:
    gc.freeze()
    target(*args)


def fork(target: Callable[..., None], *args: Any) -> BaseProcess:
    """A forked (not yet started) process that runs ``target(*args)`` with its inherited heap frozen."""
    return multiprocessing.get_context("fork").Process(target=_frozen_run, args=(target, args))


def start(target: Callable[..., None], *args: Any) -> tuple[BaseProcess, Connection]:
    """Start ``target(*args, pipe)`` forked (:func:`fork`); the process, and our end of its pipe."""
    ours, theirs = multiprocessing.Pipe()
    process = fork(target, *args, theirs)
    process.start()
    theirs.close()  # the child's copy is the only one left: its death closes the pipe
    return process, ours


def message(process: BaseProcess, pipe: Connection, timeout_s: float, what: str) -> Any:
    """The next message ``process`` sends on ``pipe`` (from :func:`start`); blocks.

    RuntimeError naming ``what`` if the child exits without sending it or sends nothing within
    ``timeout_s`` (then it is killed): a benchmark fails where it would otherwise hang."""
    if not pipe.poll(timeout_s):  # True at once when the child is gone: the pipe reads as closed
        process.kill()
        process.join(JOIN_S)
        raise RuntimeError(f"{what} (pid {process.pid}) sent nothing within {timeout_s:g} s")
    try:
        return pipe.recv()
    except EOFError:
        process.join(JOIN_S)
        raise RuntimeError(
            f"{what} (pid {process.pid}) exited with status {process.exitcode} before it sent its result"
        ) from None


def receive(process: BaseProcess, pipe: Connection, timeout_s: float, what: str) -> Any:
    """The child's last :func:`message`, its result; then it exits (or is killed after ``JOIN_S``)."""
    result = message(process, pipe, timeout_s, what)
    process.join(JOIN_S)
    if process.is_alive():
        process.kill()
        process.join(JOIN_S)
    return result
