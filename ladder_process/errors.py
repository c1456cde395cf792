"""The root of every error Ladder's server packages raise.

It lives in ``ladder_process``, the one package every server component imports and that imports
none of them.

    LadderError                      anything Ladder raises on purpose
    ├── StoreError                   the book store (Valkey/Redis) failed or is unreachable
    │   └── StoreUnavailableError    no connection could be made
    ├── control_plane.errors.*       bad input, auth, limits, conflicts (carry an HTTP-ish ``code``)
    └── ingest_nodes.*               venue faults (ingest_nodes.venues.rest: rate limits, bans;
                                     ingest_nodes.core.errors: bad payloads)

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
