"""Consolidated views: one merge per set of snapshots, reused by identity, bounded in levels."""

from __future__ import annotations

import orjson

from book_store.codec import BookStatus, Snapshot, SnapshotMeta, encode_snapshot
from book_store.schema import BookKey
from read_functions.books.consolidated import ConsolidatedViews, Question, Source

A, B = Source(BookKey("binance.com", "BTCUSDT"), "USDT"), Source(BookKey("okx", "BTC-USDT"), "USDT")


def snap(update_id: int, bids: list[str], asks: list[str]) -> Snapshot:
    meta = SnapshotMeta(update_id, 1, 2, 3, 0, BookStatus.SYNCED)
    return Snapshot(
        encode_snapshot(
            meta, [f'["{p}","1"]'.encode() for p in bids], [f'["{p}","2"]'.encode() for p in asks]
        )
    )


def question(depth: int = 10, top: bool = False) -> Question:
    return Question("BTC", "USDT", ("USDT",), (A, B), depth, top)


def test_a_view_is_reused_while_every_book_serves_the_same_snapshot() -> None:
    views = ConsolidatedViews()
    a, b = snap(1, ["10"], ["11"]), snap(2, ["10.0", "9"], ["12"])
    first = views.view(question(), (a, b))
    assert views.view(question(), (a, b)) is first and views.merges == 1
    answer = orjson.loads(first.body([3, 4], b"[]"))
    assert [book["age_ms"] for book in answer["books"]] == [3, 4]
    assert answer["bids"] == [
        ["10", "2", {"binance.com:BTCUSDT": "1", "okx:BTC-USDT": "1"}],
        ["9", "1", {"okx:BTC-USDT": "1"}],
    ]
    b2 = snap(3, ["10.5"], ["12"])
    second = views.view(question(), (a, b2))
    assert second is not first and views.merges == 2
    assert second.parsed[0] is first.parsed[0]  # the book that did not change is not parsed again
    assert orjson.loads(second.body([0, 0], b"[]"))["books"][1]["update_id"] == 3


def test_a_top_is_the_best_level_of_each_side_or_null() -> None:
    view = ConsolidatedViews().view(question(1, top=True), (snap(1, ["10"], []), snap(2, ["9"], [])))
    answer = orjson.loads(view.body([0, 0], b"[]"))
    assert (answer["bid"], answer["ask"], "depth" in answer) == (
        ["10", "1", {"binance.com:BTCUSDT": "1"}],
        None,
        False,
    )


def test_no_book_at_all_is_an_empty_answer_with_its_left_out() -> None:
    view = ConsolidatedViews().view(Question("BTC", "USDT", ("USDT",), (), 5), ())
    left = orjson.dumps([{"exchange": "okx", "code": "forbidden", "message": "m"}])
    answer = orjson.loads(view.body([], left))
    assert (answer["books"], answer["bids"], answer["left_out"][0]["exchange"]) == ([], [], "okx")


def test_the_levels_views_hold_are_bounded() -> None:
    views = ConsolidatedViews(max_levels=50)
    a = snap(1, [str(100 - i) for i in range(30)], [str(200 + i) for i in range(30)])
    for depth in range(1, 40):
        views.view(question(depth), (a, a))
        assert views.levels <= 50 + 4 * depth  # at most one view past the bound, then all dropped
    assert len(views) < 39
