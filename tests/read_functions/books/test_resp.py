"""The RESP2 reply parser, fed in every possible split."""

from __future__ import annotations

import pytest

from book_store.connect import command
from read_functions.books.resp_parser import RespError, RespParser, Simple

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


def message(channel: bytes, payload: bytes) -> bytes:
    head = b"*3\r\n$7\r\nmessage\r\n$%d\r\n%b\r\n" % (len(channel), channel)
    return head + b"$%d\r\n%b\r\n" % (len(payload), payload)


# Change messages of a realistic size (payloads holding CRLF and RESP markers) around other replies.
BIG = bytes(range(256)) * 8 + b"\r\n$5\r\n*3\r\n"
A, B = b"ladder:{x|A}:chg", b"ladder:{x|B}:chg"
FEED = message(A, BIG) + STREAM + message(B, BIG[::-1]) + message(b"c", b"")
FEED_REPLIES = [[b"message", A, BIG], *REPLIES, [b"message", B, BIG[::-1]], [b"message", b"c", b""]]


def test_large_messages_split_at_every_byte_boundary() -> None:
    for split in range(1, len(FEED)):
        parser = RespParser()
        assert parser.feed(FEED[:split]) + parser.feed(FEED[split:]) == FEED_REPLIES, split


def test_large_messages_in_three_pieces_and_byte_by_byte() -> None:
    for first in range(0, len(FEED), 97):
        for second in range(first, len(FEED), 389):
            parser = RespParser()
            pieces = (FEED[:first], FEED[first:second], FEED[second:])
            assert [reply for piece in pieces for reply in parser.feed(piece)] == FEED_REPLIES
    parser = RespParser()
    assert [reply for i in range(len(FEED)) for reply in parser.feed(FEED[i : i + 1])] == FEED_REPLIES


def test_a_channel_holding_a_carriage_return_is_parsed_in_full() -> None:
    data = message(b"a\r\n$1\r\nb", b"payload")
    assert RespParser().feed(data) == [[b"message", b"a\r\n$1\r\nb", b"payload"]]


def test_a_length_that_is_not_a_number_is_a_resp_error() -> None:
    with pytest.raises(RespError, match="not a RESP2 reply"):
        RespParser().feed(b"$x1\r\nab\r\n")


def test_a_payload_is_a_view_of_its_chunk_unless_it_would_pin_a_much_larger_one() -> None:
    alone = message(A, BIG)
    [reply] = RespParser().feed(alone)
    assert isinstance(reply, list)
    [_, _, payload] = reply
    assert isinstance(payload, memoryview) and payload.obj is alone  # no copy
    crowd = message(A, BIG) + message(B, b"small")
    [_, reply] = RespParser().feed(crowd)
    assert isinstance(reply, list)
    [_, _, small] = reply
    assert small == b"small" and isinstance(small, bytes)  # a copy: the chunk can go


def test_a_sharded_message_takes_the_same_path_and_says_it_is_sharded() -> None:
    sharded = message(A, BIG).replace(b"$7\r\nmessage", b"$8\r\nsmessage", 1)
    [reply] = RespParser().feed(sharded)
    assert isinstance(reply, list)
    [kind, channel, payload] = reply
    assert (kind, channel, payload) == (b"smessage", A, BIG)
    assert isinstance(payload, memoryview) and payload.obj is sharded  # the fast path: no copy
    for split in range(1, len(sharded), 101):
        parser = RespParser()
        assert parser.feed(sharded[:split]) + parser.feed(sharded[split:]) == [[b"smessage", A, BIG]], split
