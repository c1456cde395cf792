"""Diffs between heads: exact at any depth, mergeable, and checked by the checksum the SDK computes."""

from __future__ import annotations

import itertools
import random
import zlib

import orjson
from ladder_sdk import LocalBook

from book_store.codec import BookStatus, Snapshot, SnapshotMeta, encode_snapshot
from book_store.schema import BookKey
from read_functions.books.diffs.book_diffs import checksum, diff, merge, render_diff, render_snapshot, top
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
