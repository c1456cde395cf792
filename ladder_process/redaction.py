"""No key in a log, or in an error: whatever is shaped like a Ladder key is masked on its way out.

A client can put its key anywhere it can put text (a path, a query, a header, a subprotocol, a
message body, a market's name), and what a process says about a request may quote any of those.
So rather than trust every line that logs to leave secrets out, :func:`install_log_redaction`
puts a filter on every handler of the root logger: each record's message, exception and stack are
rendered and anything shaped like a key (``ldr_`` and eight or more base62 characters), or equal
to a secret the process was given (its admin key, say), is masked before a handler writes it.
:func:`redact` does the same for a message an error quotes a caller's input in.
"""

from __future__ import annotations

import logging
import re

_KEY_SHAPE = re.compile(r"ldr_[0-9A-Za-z_]{8,}")
MASK = "ldr_***"


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every key-shaped word, and every one of ``secrets``, masked."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return _KEY_SHAPE.sub(MASK, text)


class RedactingFilter(logging.Filter):
    """Masks keys and ``secrets`` in a record before a handler formats it (see the module's doc)."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self._secrets = tuple(s for s in secrets if s)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        record.msg, record.args = redact(message, self._secrets), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self._secrets)
        if record.stack_info:
            record.stack_info = redact(record.stack_info, self._secrets)
        return True


def secrets_of(settings: object) -> tuple[str, ...]:
    """The values of a settings object's secret fields (pydantic's ``SecretStr``: whatever has a
    ``get_secret_value``)."""
    values = vars(settings).values() if hasattr(settings, "__dict__") else ()
    return tuple(v.get_secret_value() for v in values if hasattr(v, "get_secret_value"))


def install_log_redaction(*secrets: str | None) -> None:
    """Put a :class:`RedactingFilter` on every handler the root logger has now (call it after
    ``logging.basicConfig``); ``secrets`` are masked wherever they appear, key-shaped or not."""
    redacting = RedactingFilter(tuple(s for s in secrets if s))
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(redacting)
