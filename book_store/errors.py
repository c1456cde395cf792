"""The root of every error Ladder's server packages raise.

It lives here because ``book_store`` is the one package every server component may import.

    LadderError                      anything Ladder raises on purpose
    ├── StoreError                   the book store (Valkey/Redis) failed or is unreachable
    │   └── StoreUnavailableError    no connection could be made
    ├── control_plane.errors.*       bad input, auth, limits, conflicts (carry an HTTP-ish ``code``)
    └── ingest_nodes.errors.*        venue faults (rate limits, bans, bad payloads)

Every error carries ``code``, a stable machine-readable string that callers may branch on.
"""

from __future__ import annotations


class LadderError(Exception):
    """Base class of every error Ladder raises on purpose."""

    code: str = "internal"


class StoreError(LadderError):
    """The book store answered with an error, or the answer could not be decoded."""

    code = "store_error"


class StoreUnavailableError(StoreError):
    """The book store could not be reached."""

    code = "store_unavailable"
