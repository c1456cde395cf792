"""The RESP2 reply parser, fed in every possible split."""

from __future__ import annotations

import pytest

from read_functions.resp import RespError, RespParser, Simple, command

STREAM = (
    b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
    b"+PONG\r\n"
    b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$6\r\nab\r\ncd\r\n"
    b"$-1\r\n"
    b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
)
REPLIES = [[b"subscribe", b"ch", 1], Simple(b"PONG"), [b"message", b"ch", b"ab\r\ncd"], None, [b"pong", b""]]


def test_whole_stream() -> None:
    assert RespParser().feed(STREAM) == REPLIES


@pytest.mark.parametrize("split", range(1, len(STREAM)))
def test_any_split_gives_the_same_replies(split: int) -> None:
    parser = RespParser()
    assert parser.feed(STREAM[:split]) + parser.feed(STREAM[split:]) == REPLIES


def test_byte_by_byte() -> None:
    parser = RespParser()
    replies = [reply for i in range(len(STREAM)) for reply in parser.feed(STREAM[i : i + 1])]
    assert replies == REPLIES and isinstance(replies[1], Simple)


def test_errors() -> None:
    with pytest.raises(RespError, match="WRONGPASS"):
        RespParser().feed(b"-WRONGPASS invalid username-password pair\r\n")
    with pytest.raises(RespError, match="not a RESP2 reply"):
        RespParser().feed(b"HTTP/1.1 400\r\n")


def test_command() -> None:
    assert command(b"SUBSCRIBE", b"a", b"bc") == b"*3\r\n$9\r\nSUBSCRIBE\r\n$1\r\na\r\n$2\r\nbc\r\n"
