"""Diffs between heads: exact at any depth, mergeable, and checked by the checksum the SDK computes."""

from __future__ import annotations

import itertools
import random
import zlib

import orjson
import pytest
from ladder_sdk import LocalBook

from book_store.codec import BookStatus, Snapshot, SnapshotMeta, encode_snapshot
from book_store.delta import DELETE, INSERT, REPLACE, TRUNCATE, Op, apply_delta, encode_delta, read_delta
from book_store.schema import BookKey
from ingest_nodes.core.book import OrderBook
from read_functions.books.diffs.book_diffs import (
    checksum,
    delta_changes,
    diff,
    merge,
    render_diff,
    render_snapshot,
    top,
)
from read_functions.books.render import names_json

NAMES = names_json(BookKey("binance.com", "ETHBTC"))


def head(update_id: int, bids: dict[str, str], asks: dict[str, str]) -> Snapshot:
    meta = SnapshotMeta(update_id, 1, 2, 3, 0, BookStatus.SYNCED)
    return Snapshot(encode_snapshot(meta, _rows(bids, True), _rows(asks, False)))


def _rows(side: dict[str, str], best_high: bool) -> list[bytes]:
    return [orjson.dumps([p, side[p]]) for p in sorted(side, key=float, reverse=best_high)]


def test_the_checksum_is_the_documented_crc32() -> None:
    bids, asks = [b'"0.0351","4.2"', b'"0.035","1"'], [b'"0.0352","0.5"']
    assert checksum(bids, asks) == zlib.crc32(b"0.0351:4.2,0.035:1|0.0352:0.5")


def test_random_diffs_at_every_depth_applied_by_the_sdk_give_the_new_head_and_merge_exactly() -> None:
    rng = random.Random(7)
    bids = {f"{100 - i}.{rng.randrange(10)}": "1" for i in range(30)}
    asks = {f"{200 + i}.{rng.randrange(10)}": "1" for i in range(30)}
    heads = [head(1, bids, asks)]
    for update_id in range(2, 60):
        for side in (bids, asks):
            for _ in range(rng.randrange(1, 8)):
                price = rng.choice(list(side))
                if rng.random() < 0.3 and len(side) > 3:
                    del side[price]
                else:
                    side[f"{float(price) + rng.choice((0.01, -0.01)):.2f}"] = str(rng.randrange(1, 99))
        heads.append(head(update_id, bids, asks))
    for depth in (1, 5, 10, 20):
        local = LocalBook("binance.com", "ETHBTC")
        local.apply(orjson.loads(render_snapshot(NAMES, heads[0], depth, top(heads[0], depth)).body(3)))
        steps = []
        levels = top(heads[0], depth)
        for old, new in itertools.pairwise(heads):
            step, levels = diff(old, levels, new, depth)
            steps.append(step)
            local.apply(orjson.loads(render_diff(NAMES, step).body(3)))  # checks the checksum
            assert [f'"{level.price}","{level.quantity}"'.encode() for level in local.bids()] == levels[0]
        merged = merge(steps[10:30])
        assert (merged.prev_update_id, merged.update_id) == (heads[10].update_id, heads[30].update_id)
        replay = LocalBook("binance.com", "ETHBTC")
        replay.apply(orjson.loads(render_snapshot(NAMES, heads[10], depth, top(heads[10], depth)).body(3)))
        replay.apply(orjson.loads(render_diff(NAMES, merged).body(3)))
        assert replay.update_id == heads[30].update_id and replay.checksum() == merged.checksum


# -- diffs from the publish path's deltas ----------------------------------------------------------


def _meta(update_id: int) -> SnapshotMeta:
    return SnapshotMeta(update_id, 1, 2, 1000 + update_id, 0, BookStatus.SYNCED, node=7)


def _item(price: int, qty: str = "1") -> bytes:
    return b'"%d","%b"' % (price, qty.encode())


def _level(price: int, qty: str = "1") -> bytes:
    return b"[%b]" % _item(price, qty)


FIVE = [100, 99, 98, 97, 96]


@pytest.mark.parametrize(
    ("ops", "count", "depth", "changed"),
    [
        ([(REPLACE, 0, _level(100, "5"))], 5, 3, [_item(100, "5")]),  # the top
        ([(REPLACE, 2, _level(98, "5"))], 5, 3, [_item(98, "5")]),  # the view's last
        ([(REPLACE, 4, _level(96, "5"))], 5, 3, []),  # past the view
        ([(INSERT, 0, _level(101))], 5, 3, [_item(101), b'"98","0"']),  # 98 pushed past the depth
        ([(INSERT, 3, _level(97, "2"))], 5, 3, []),  # below the view
        ([(DELETE, 1, b"")], 4, 3, [b'"99","0"', _item(97)]),  # 97 pulled up into view
        ([(TRUNCATE, 1, b"")], 1, 3, [b'"99","0"', b'"98","0"']),
        ([(INSERT, 0, _level(101))], 5, 5, [_item(101), b'"96","0"']),  # past the cap: 96 falls off
        ([(DELETE, 4, b"")], 4, 5, [b'"96","0"']),  # the last level of the head goes
        ([(DELETE, 0, b""), (INSERT, 4, _level(95))], 5, 5, [b'"100","0"', _item(95)]),  # moved up, refilled
        ([(DELETE, 0, b""), (INSERT, 0, _level(100, "3"))], 5, 3, [_item(100, "3")]),  # the last word wins
    ],
)
def test_a_diff_from_a_delta_follows_each_operation_s_rule(
    ops: list[Op], count: int, depth: int, changed: list[bytes]
) -> None:
    old = Snapshot(encode_snapshot(_meta(10), [_level(p) for p in FIVE], [_level(200)]))
    new = apply_delta(old, read_delta(encode_delta(_meta(11), 10, 0, 5, (count, 1), ops, [])))
    assert delta_changes(old, top(old, depth), new, top(new, depth), depth) == (tuple(changed), ())
    step, levels = diff(old, top(old, depth), new, depth)
    local = LocalBook("binance.com", "ETHBTC")
    local.apply(orjson.loads(render_snapshot(NAMES, old, depth, top(old, depth)).body(3)))
    local.apply(orjson.loads(render_diff(NAMES, step).body(3)))  # checks the checksum
    assert [f'"{level.price}","{level.quantity}"'.encode() for level in local.bids()] == levels[0]


def test_a_head_that_is_not_one_delta_of_the_last_is_diffed_by_comparing_the_tops() -> None:
    old = Snapshot(encode_snapshot(_meta(10), [_level(p) for p in FIVE], []))
    gap = apply_delta(old, read_delta(encode_delta(_meta(12), 10, 0, 5, (5, 0), [], [])))
    later = apply_delta(
        gap, read_delta(encode_delta(_meta(13), 12, 0, 5, (5, 0), [(REPLACE, 0, _level(100, "2"))], []))
    )
    assert delta_changes(old, top(old, 5), later, top(later, 5), 5) is None  # 13 follows 12, not 10
    whole = Snapshot(encode_snapshot(_meta(11), [_level(100, "2")], []))
    assert delta_changes(old, top(old, 5), whole, top(whole, 5), 5) is None  # a whole snapshot
    step, _ = diff(old, top(old, 5), later, 5)
    assert step.bids == (_item(100, "2"),)


def test_diffs_from_journaled_deltas_keep_a_client_equal_to_the_head_at_every_depth() -> None:
    """Random books, changes and truncations, published as the ingest node does (its journal made
    into deltas): at every depth the diff comes from the delta and takes the client to the new top."""
    rng = random.Random(39)
    for _ in range(60):
        book = OrderBook()
        book.load(
            [(str(1000 - i), str(rng.randint(1, 9))) for i in range(rng.randint(0, 40))],
            [(str(1001 + i), str(rng.randint(1, 9))) for i in range(rng.randint(0, 40))],
            bids_complete=rng.random() < 0.5,
            asks_complete=rng.random() < 0.5,
        )
        cap = rng.randint(1, 30)
        book.open_journal(cap)
        shown = [min(cap, window.trusted) for window in book.window()]
        old: Snapshot = Snapshot(
            encode_snapshot(_meta(0), book.first_bids(shown[0]), book.first_asks(shown[1]))
        )
        depths = (1, 3, 10, 25, 40)
        locals_ = {d: LocalBook("binance.com", "ETHBTC") for d in depths}
        for depth, local in locals_.items():
            local.apply(orjson.loads(render_snapshot(NAMES, old, depth, top(old, depth)).body(3)))
        for turn in range(1, 16):
            for _event in range(rng.randint(0, 4)):
                book.apply(_random_levels(rng, 950, 1000), _random_levels(rng, 1001, 1050))
                if rng.random() < 0.1:
                    book.truncate(rng.randint(0, 30))
            journal = book.take_journal()
            assert journal is not None
            counts = (min(cap, book.window()[0].trusted), min(cap, book.window()[1].trusted))
            changes = (book.bid_changes(journal[0], shown[0], counts[0]),
                       book.ask_changes(journal[1], shown[1], counts[1]))  # fmt: skip
            new = apply_delta(old, read_delta(encode_delta(_meta(turn), turn - 1, 0, cap, counts, *changes)))
            for depth, local in locals_.items():
                assert delta_changes(old, top(old, depth), new, top(new, depth), depth) is not None
                step, levels = diff(old, top(old, depth), new, depth)
                local.apply(orjson.loads(render_diff(NAMES, step).body(3)))  # checks the checksum
                assert [f'"{level.price}","{level.quantity}"'.encode() for level in local.bids()] == levels[0]
                assert [f'"{level.price}","{level.quantity}"'.encode() for level in local.asks()] == levels[1]
            old, shown = new, list(counts)


def _random_levels(rng: random.Random, low: int, high: int) -> list[tuple[str, str]]:
    return [(str(rng.randint(low, high)), str(rng.choice([0, 0, 1, 2, 3]))) for _ in range(rng.randint(0, 6))]
