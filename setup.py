"""Ladder's compiled modules; everything else about the package is in pyproject.toml.

Two kinds, both optional (without a C compiler, or without mypy, installing still succeeds and the
same modules run as pure Python, only slower):

- ``ingest_nodes/core/_levels.c``: the ingest nodes' book store, hand-written C;
- ``COMPILED``: modules of the per-event hot path compiled by mypyc from their own strictly typed
  source (the node's book, engine, lane, replica and publisher, and the replica's rhythm, lag and
  trusted-window keepers; Binance's frame parser, stream reader and sync machines and the actions
  they answer with; the delta and snapshot codec that nodes encode and read workers apply). An
  event there crosses dozens of small calls, and interpreting them was most of its cost
  (docs/scale.md gives the measurement).

An editable install builds them next to their sources, where they shadow the ``.py`` files:
``make install`` (and so ``make test``) builds them again whenever one of those sources changes,
and ``tests/conftest.py`` refuses to run tests against a compiled module older than its source,
or one left from a build that listed it and this ``COMPILED`` does not (delete it).
"""

from __future__ import annotations

from setuptools import Extension, setup

COMPILED = [
    "book_store/codec.py",
    "book_store/delta.py",
    "ingest_nodes/core/book.py",
    "ingest_nodes/core/engine.py",
    "ingest_nodes/core/lag.py",
    "ingest_nodes/core/stall_watch.py",
    "ingest_nodes/core/sync/actions.py",
    "ingest_nodes/core/sync/binance/_diff_snapshot.py",
    "ingest_nodes/core/sync/binance/futures.py",
    "ingest_nodes/core/sync/binance/spot.py",
    "ingest_nodes/core/trusted_window.py",
    "ingest_nodes/runtime/lane.py",
    "ingest_nodes/runtime/publisher.py",
    "ingest_nodes/runtime/replica.py",
    "ingest_nodes/venues/binance/parse.py",
    "ingest_nodes/venues/binance/stream.py",
    "ingest_nodes/venues/wire.py",
]
"""Compiled by mypyc."""


def _mypyc_modules() -> list[Extension]:
    try:
        from mypyc.build import mypycify
    except ImportError:  # installed without mypy: pure Python
        return []
    extensions: list[Extension] = mypycify(COMPILED, opt_level="3")
    for extension in extensions:
        extension.optional = True
    return extensions


levels = Extension(
    "ingest_nodes.core._levels",
    sources=["ingest_nodes/core/_levels.c"],
    optional=True,
    extra_compile_args=["-O2"],
)

setup(ext_modules=[levels, *_mypyc_modules()])
