"""The log filter every process installs: no key-shaped word, and no secret it was given, is written."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from ladder_process.redaction import RedactingFilter, install_log_redaction, redact, secrets_of

KEY = "ldr_" + "A1b2" * 9 + "cd"


@pytest.fixture
def written() -> Iterator[io.StringIO]:
    """A handler on the root logger writing into a buffer, redaction installed as a process does."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        install_log_redaction("hunter2-not-key-shaped")
        yield out
    finally:
        root.removeHandler(handler)


def test_messages_arguments_exceptions_and_stacks_are_masked(written: io.StringIO) -> None:
    log = logging.getLogger("tests.redaction")
    log.warning("a client sent %s and %s", KEY, "hunter2-not-key-shaped")
    try:
        raise ValueError(f"bad market {KEY!r}")
    except ValueError:
        log.exception("failed for %r", {"market": KEY})
    log.warning("where", stack_info=True)
    text = written.getvalue()
    assert "a client sent ldr_*** and ***" in text and "bad market 'ldr_***'" in text
    assert KEY[4:] not in text and "hunter2" not in text
    assert "ValueError" in text and "Stack (most recent call last)" in text


def test_installing_twice_filters_once() -> None:
    handler = logging.StreamHandler(io.StringIO())
    logging.getLogger().addHandler(handler)
    try:
        install_log_redaction()
        install_log_redaction()
        assert sum(isinstance(f, RedactingFilter) for f in handler.filters) == 1
    finally:
        logging.getLogger().removeHandler(handler)


def test_redact_and_the_secrets_of_a_settings_object() -> None:
    assert redact(f"x {KEY} ldr_short y") == "x ldr_*** ldr_short y"  # too short to be a key
    assert redact("token s3cret!", ("s3cret!",)) == "token ***"

    class Secret:
        def get_secret_value(self) -> str:
            return "shh"

    class Settings:
        def __init__(self) -> None:
            self.admin_key = Secret()
            self.port = 8080

    assert secrets_of(Settings()) == ("shh",)
