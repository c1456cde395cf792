"""The SDK's logger, with credentials masked before any handler sees a record.

websockets logs every handshake header at DEBUG level, `Authorization` included. `stream()` hands
websockets this logger instead of its own, and the filter below replaces the values of credential
headers with `***`, so turning on debug logging never writes a key to a log.
"""

from __future__ import annotations

import logging

CREDENTIAL_HEADERS = frozenset({"authorization", "x-api-key", "proxy-authorization"})

STREAM_LOGGER = logging.getLogger("ladder_sdk.stream")


class MaskCredentials(logging.Filter):
    """Masks `("> %s: %s", name, value)` header records whose name is a credential header."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 2 and str(args[0]).lower() in CREDENTIAL_HEADERS:
            record.args = (args[0], "***")
        return True


STREAM_LOGGER.addFilter(MaskCredentials())
