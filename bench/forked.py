"""Measuring processes forked from a benchmark: they freeze the heap they inherit.

A forked child starts with a copy of every object the benchmark holds. Left as it is, the
child's first full collections walk that whole copy (tens of milliseconds), and a child that
measures latencies (the load generator, the streams' receiver) would stamp those pauses onto
what it measures. None of it is the child's garbage, so the child freezes it (``gc.freeze``) before
it begins: its collections walk only what it makes.
"""

from __future__ import annotations

import gc
import multiprocessing
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from typing import Any


def _frozen_run(target: Callable[..., None], args: tuple[Any, ...]) -> None:
    gc.freeze()
    target(*args)


def fork(target: Callable[..., None], *args: Any) -> BaseProcess:
    """A forked (not yet started) process that runs ``target(*args)`` with its inherited heap frozen."""
    return multiprocessing.get_context("fork").Process(target=_frozen_run, args=(target, args))
