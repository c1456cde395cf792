"""Head deltas: read back as written, applied only where they continue a head, never half applied."""

from __future__ import annotations

import pytest

from book_store.codec import (
    DEEP,
    MORE_ASKS,
    MORE_BIDS,
    BookStatus,
    Snapshot,
    SnapshotMeta,
    encode_message,
    encode_snapshot,
)
from book_store.delta import (
    CHAIN_LIMIT,
    DELETE,
    INSERT,
    REPLACE,
    TRUNCATE,
    Delta,
    Op,
    apply_delta,
    encode_delta,
    follows,
    read_change,
    read_delta,
    read_message,
)
from ladder_process.errors import StoreError


def level(price: int, qty: str = "1") -> bytes:
    return f'["{price}","{qty}"]'.encode()


def meta(
    update_id: int, *, publish_time: int = 1000, node: int = 7, status: BookStatus = BookStatus.SYNCED
) -> SnapshotMeta:
    return SnapshotMeta(update_id, publish_time - 2, publish_time - 1, publish_time, 1, status, node=node)


def head(update_id: int, bids: list[int], asks: list[int], **kwargs: object) -> Snapshot:
    bid_levels = [level(p) for p in bids]
    ask_levels = [level(p) for p in asks]
    return Snapshot(encode_snapshot(meta(update_id, **kwargs), bid_levels, ask_levels))  # type: ignore[arg-type]


def delta(
    prev: int,
    update_id: int,
    bid_ops: list[Op],
    ask_ops: list[Op],
    counts: tuple[int, int],
    *,
    cap: int = 5,
    flags: int = 0,
    **kwargs: object,
) -> Delta:
    raw = encode_delta(meta(update_id, **kwargs), prev, flags, cap, counts, bid_ops, ask_ops)  # type: ignore[arg-type]
    return read_delta(raw)


def sides(snapshot: Snapshot) -> tuple[bytes, bytes]:
    return bytes(snapshot.bids(snapshot.bid_count)), bytes(snapshot.asks(snapshot.ask_count))


def test_a_delta_reads_back_as_it_was_written() -> None:
    ops: list[Op] = [(REPLACE, 0, level(99, "2")), (DELETE, 1, b""), (INSERT, 2, level(97))]
    written = encode_delta(meta(12, publish_time=5000), 11, MORE_ASKS, 5, (3, 1), ops, [(TRUNCATE, 1, b"")])
    read = read_change(written)
    assert isinstance(read, Delta)
    said = (read.prev_update_id, read.meta, read.flags, read.cap, read.bid_count, read.ask_count)
    assert said == (11, meta(12, publish_time=5000), MORE_ASKS, 5, 3, 1)
    assert (read.bid_ops, read.ask_ops) == (ops, [(TRUNCATE, 1, b"")])


def test_a_snapshot_and_a_delta_are_told_apart() -> None:
    assert type(read_change(encode_snapshot(meta(1), [], []))) is Snapshot


def test_a_delta_turns_the_head_into_the_next_one_level_by_level() -> None:
    base = head(10, [100, 99, 98], [101, 102])
    ops: list[Op] = [(REPLACE, 0, level(100, "5")), (DELETE, 1, b""), (INSERT, 2, level(97))]
    after = apply_delta(base, delta(10, 11, ops, [(INSERT, 0, level(100))], (3, 3), flags=MORE_BIDS))
    assert after is not None
    assert sides(after) == (b'["100","5"],["98","1"],["97","1"]', b'["100","1"],["101","1"],["102","1"]')
    assert (after.update_id, after.bid_count, after.ask_count, after.more_bids, after.more_asks) == (
        11,
        3,
        3,
        True,
        False,
    )
    by_depth = [b"", b'["100","5"]', b'["100","5"],["98","1"]', sides(after)[0]]
    assert [bytes(after.bids(d)) for d in range(4)] == by_depth
    assert base.parts() == (
        [level(100), level(99), level(98)],
        [level(101), level(102)],
    )  # the head is untouched


def test_an_insert_into_a_full_head_pushes_its_last_level_out_and_a_truncation_cuts() -> None:
    base = head(10, [100, 99], [101, 102, 103])
    after = apply_delta(base, delta(10, 11, [(INSERT, 0, level(101))], [(TRUNCATE, 1, b"")], (2, 1), cap=2))
    assert after is not None and sides(after) == (b'["101","1"],["100","1"]', b'["101","1"]')


def test_a_delta_applies_only_where_it_continues_the_head() -> None:
    base = head(10, [100], [101], publish_time=1000)
    assert follows(base, delta(10, 11, [], [], (1, 1), publish_time=1001)) is True
    assert follows(base, delta(10, 10, [], [], (1, 1), publish_time=1001)) is True  # news of a quiet book
    assert follows(base, delta(9, 10, [], [], (1, 1), publish_time=999)) is False  # older: skipped
    assert follows(base, delta(8, 9, [], [], (1, 1), publish_time=1001)) is False  # already in the head
    assert follows(base, delta(11, 12, [], [], (1, 1), publish_time=1001)) is None  # a gap
    assert follows(base, delta(10, 11, [], [], (1, 1), publish_time=1001, node=8)) is None  # another node's
    stale = delta(10, 11, [], [], (1, 1), publish_time=1001, status=BookStatus.STALE)
    assert follows(base, stale) is None  # a status change comes whole
    deep = Snapshot(encode_snapshot(meta(10), [b'["1","1"]'], [], DEEP))
    assert follows(deep, delta(10, 11, [], [], (1, 0), publish_time=1001)) is None


@pytest.mark.parametrize(
    ("bid_ops", "counts"),
    [
        ([(REPLACE, 1, level(1))], (1, 1)),  # past the head's last level
        ([(DELETE, 1, b"")], (0, 1)),
        ([(INSERT, 2, level(1))], (2, 1)),
        ([], (2, 1)),  # the count says a level is missing
        ([(TRUNCATE, 3, b"")], (1, 1)),
    ],
)
def test_levels_that_do_not_fit_are_refused_whole(bid_ops: list[Op], counts: tuple[int, int]) -> None:
    base = head(10, [100], [101])
    after = apply_delta(base, delta(10, 11, bid_ops, [], counts))
    assert (after.update_id, after.bid_count) == (11, counts[0])  # its header, read at once ...
    with pytest.raises(StoreError):
        after.parts()  # ... its levels, when worked out, refused
    assert base.parts() == ([level(100)], [level(101)])


def test_malformed_deltas_are_store_errors_and_a_followed_book_reads_only_their_headers() -> None:
    good = encode_delta(meta(11), 10, 0, 5, (1, 0), [(INSERT, 0, level(1))], [])
    bad = [
        good[:20],  # the header cut short
        good[:-1],  # a level cut short
        good + b"x",  # bytes the operations do not account for
        good[:75] + bytes([9]) + good[76:],  # an unknown operation (the first kind, past the header)
        good[:1] + bytes([99]) + good[2:],  # an unknown status
        good[:2] + bytes([0x80]) + good[3:],  # unknown flags
    ]
    assert read_delta(good).bid_ops == [(INSERT, 0, level(1))]
    for raw in bad:
        with pytest.raises(StoreError):
            assert read_delta(raw).bid_ops  # the header at once, the operations when they are read


# -- a head made by deltas: the chain worked out in one pass, rule by rule ----------------------------


def chain(base: Snapshot, *deltas: Delta) -> Snapshot:
    for each in deltas:
        assert follows(base, each) is True
        base = apply_delta(base, each)
    return base


@pytest.mark.parametrize(
    ("ops", "after"),
    [
        ([(REPLACE, 0, level(100, "7"))], [level(100, "7"), level(99), level(98)]),  # at the top
        ([(REPLACE, 2, level(98, "7"))], [level(100), level(99), level(98, "7")]),  # at the bottom
        ([(INSERT, 0, level(101))], [level(101), level(100), level(99)]),  # past the cap: 98 falls out
        ([(INSERT, 3, level(97))], [level(100), level(99), level(98)]),  # at the cap: it falls out at once
        ([(DELETE, 0, b"")], [level(99), level(98)]),
        ([(DELETE, 2, b"")], [level(100), level(99)]),
        (
            [(DELETE, 1, b""), (INSERT, 2, level(97))],
            [level(100), level(98), level(97)],
        ),  # moved up into view
        ([(TRUNCATE, 1, b"")], [level(100)]),
        ([(TRUNCATE, 0, b"")], []),
        ([(TRUNCATE, 3, b"")], [level(100), level(99), level(98)]),  # keeps all: nothing cut
    ],
)
def test_each_operation_edits_the_side_as_its_rule_says(ops: list[Op], after: list[bytes]) -> None:
    base = head(10, [100, 99, 98], [101])
    made = chain(base, delta(10, 11, ops, [], (len(after), 1), cap=3))
    assert made.parts() == (after, [level(101)])
    assert bytes(made.bids(3)) == b",".join(after)
    assert [bytes(made.bids(d)) for d in range(-1, 5)] == [
        b",".join(after[: max(d, 0)]) for d in range(-1, 5)
    ]


def test_deltas_wait_until_their_levels_are_asked_for_then_apply_in_order_in_one_pass() -> None:
    base = head(10, [100, 99], [101, 102])
    first = delta(10, 11, [(REPLACE, 0, level(100, "2"))], [(DELETE, 0, b"")], (2, 1))
    second = delta(11, 12, [(INSERT, 0, level(101))], [(INSERT, 0, level(100, "9"))], (3, 2))
    third = delta(12, 13, [(DELETE, 2, b"")], [(REPLACE, 1, level(102, "5"))], (2, 2))
    made = chain(base, first, second, third)
    assert isinstance(made, Delta) and made.waiting and first.waiting and second.waiting
    assert made.parts() == ([level(101), level(100, "2")], [level(100, "9"), level(102, "5")])
    assert not made.waiting
    assert second.waiting  # a head between is worked out only if someone asks for it ...
    assert second.parts() == ([level(101), level(100, "2"), level(99)], [level(100, "9"), level(102)])
    assert base.parts() == ([level(100), level(99)], [level(101), level(102)])  # ... and no head is edited


def test_a_long_chain_is_worked_out_at_its_limit() -> None:
    made: Snapshot = head(0, [100], [101])
    for update_id in range(1, CHAIN_LIMIT + 1):
        made = chain(
            made, delta(update_id - 1, update_id, [(REPLACE, 0, level(100, str(update_id)))], [], (1, 1))
        )
        assert isinstance(made, Delta) and made.waiting is (update_id < CHAIN_LIMIT)
    assert made.parts() == ([level(100, str(CHAIN_LIMIT))], [level(101)])


def test_a_delta_applied_to_two_heads_makes_two_heads() -> None:
    one, other = head(10, [100], [101]), head(10, [200], [201])
    edit = delta(10, 11, [(REPLACE, 0, level(100, "3"))], [], (1, 1))
    made_one, made_other = apply_delta(one, edit), apply_delta(other, edit)
    assert made_one is not made_other
    assert made_other.parts() == ([level(100, "3")], [level(201)])
    assert made_one.parts() == ([level(100, "3")], [level(101)])


def test_a_delta_applied_to_no_head_has_no_levels() -> None:
    with pytest.raises(StoreError):
        delta(10, 11, [], [], (0, 0)).parts()


def test_an_unknown_operation_is_refused_when_applied() -> None:
    raw = bytearray(encode_delta(meta(11), 10, 0, 5, (1, 1), [(REPLACE, 0, level(1))], []))
    raw[75] = 9  # the first kind, past the header
    made = apply_delta(head(10, [100], [101]), read_delta(bytes(raw)))
    with pytest.raises(StoreError):
        made.parts()


def test_a_gap_in_the_chain_is_never_applied() -> None:
    base = head(10, [100], [101])
    made = chain(base, delta(10, 11, [], [], (1, 1), publish_time=1001))
    assert follows(made, delta(12, 13, [], [], (1, 1), publish_time=1002)) is None  # 12 never came
    assert follows(made, delta(10, 11, [], [], (1, 1), publish_time=1001)) is False  # already in it


def test_a_change_message_is_read_with_its_replica() -> None:
    edit = encode_delta(meta(11), 10, 0, 5, (1, 0), [(INSERT, 0, level(1))], [])
    replica, read = read_message(memoryview(encode_message(1, edit)))
    assert replica == 1 and isinstance(read, Delta) and read.bid_ops == [(INSERT, 0, level(1))]
    whole = encode_snapshot(meta(11), [level(1)], [])
    replica, read = read_message(encode_message(1, whole))
    assert replica == 1 and type(read) is Snapshot and read.update_id == 11
    with pytest.raises(StoreError):
        read_message(encode_message(1, edit)[:-1])
