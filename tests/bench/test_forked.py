"""``bench.forked``: a benchmark waiting for a forked child's result never hangs on it. A child that
dies first, or that never answers, fails the wait with its name (``ladder bench binance`` once sat
idle for 20 minutes on a pipe no one would ever write to)."""

from __future__ import annotations

import os
import time
from multiprocessing.connection import Connection

import pytest

from bench import forked


def _answer(word: str, pipe: Connection) -> None:
    pipe.send(word.upper())


def _echo(pipe: Connection) -> None:
    pipe.send("ready")
    pipe.send(pipe.recv())


def _die(pipe: Connection) -> None:
    os._exit(3)


def _say_nothing(pipe: Connection) -> None:
    time.sleep(60)


def test_the_child_s_message_is_received_and_the_child_has_exited() -> None:
    process, pipe = forked.start(_answer, "done")
    assert forked.receive(process, pipe, 10.0, "the answering child") == "DONE"
    assert process.exitcode == 0


def test_a_child_talks_message_by_message_until_its_last() -> None:
    process, pipe = forked.start(_echo)
    assert forked.message(process, pipe, 10.0, "the echo") == "ready"
    pipe.send("again")
    assert forked.receive(process, pipe, 10.0, "the echo") == "again"
    assert process.exitcode == 0


def test_a_child_that_dies_before_it_sends_fails_the_wait_at_once() -> None:
    process, pipe = forked.start(_die)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"the dying child \(pid \d+\) exited with status 3 before"):
        forked.receive(process, pipe, 30.0, "the dying child")
    assert time.monotonic() - started < 10.0  # its death, not the timeout, ended the wait


def test_a_child_that_sends_nothing_in_time_fails_the_wait_and_is_killed() -> None:
    process, pipe = forked.start(_say_nothing)
    with pytest.raises(RuntimeError, match=r"the silent child \(pid \d+\) sent nothing within 0.5 s"):
        forked.receive(process, pipe, 0.5, "the silent child")
    assert not process.is_alive()
