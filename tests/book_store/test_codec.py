import orjson
import pytest

from book_store.codec import DEEP, MORE_ASKS, MORE_BIDS, BookStatus, Snapshot, SnapshotMeta, encode_snapshot
from ladder_process.errors import StoreError

META = SnapshotMeta(
    update_id=42, event_time=1000, ingest_time=1001, publish_time=1002, replica=3, status=BookStatus.SYNCED
)
BIDS = [b'["100.10","1.5"]', b'["100.00","2"]', b'["99.5","0.001"]']
ASKS = [b'["100.20","3"]']


def parse_side(items: bytes | memoryview) -> list[list[str]]:
    side: list[list[str]] = orjson.loads(b"[" + items + b"]")
    return side


def test_roundtrip_metadata() -> None:
    snap = Snapshot(encode_snapshot(META, BIDS, ASKS))
    assert snap.meta == META
    assert snap.depth == 3


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 100])
def test_slices_any_depth_without_parsing(depth: int) -> None:
    snap = Snapshot(encode_snapshot(META, BIDS, ASKS))
    assert parse_side(snap.bids(depth)) == [orjson.loads(b) for b in BIDS[:depth]]
    assert parse_side(snap.asks(depth)) == [orjson.loads(a) for a in ASKS[:depth]]


def test_empty_and_zero_depth() -> None:
    snap = Snapshot(encode_snapshot(META, [], []))
    assert bytes(snap.bids(10)) == b"" and bytes(snap.asks(10)) == b""
    assert bytes(Snapshot(encode_snapshot(META, BIDS, ASKS)).bids(0)) == b""


def test_unknown_times_roundtrip_as_none() -> None:
    meta = SnapshotMeta(
        update_id=1, event_time=None, ingest_time=None, publish_time=5, replica=0, status=BookStatus.RESYNCING
    )
    assert Snapshot(encode_snapshot(meta, [], [])).meta == meta


def test_the_venue_state_is_known_as_of_the_later_of_the_last_event_and_the_last_confirmation() -> None:
    confirmed = SnapshotMeta(42, 1000, 1001, 1002, 3, BookStatus.SYNCED, confirmed_time=5000)
    snap = Snapshot(encode_snapshot(confirmed, BIDS, ASKS))
    assert snap.meta == confirmed and snap.confirmed_time == 5000 and snap.known_time == 5000
    assert Snapshot(encode_snapshot(META, BIDS, ASKS)).known_time == META.ingest_time
    unknown = SnapshotMeta(1, None, None, 7, 0, BookStatus.RESYNCING)
    assert Snapshot(encode_snapshot(unknown, [], [])).known_time == 7  # nothing known: when written


def test_corrupt_bytes_are_a_store_error() -> None:
    with pytest.raises(StoreError):
        Snapshot(b"\x01\x02")
    raw = bytearray(encode_snapshot(META, BIDS, ASKS))
    raw[0] = 99
    with pytest.raises(StoreError, match="version"):
        Snapshot(bytes(raw))


def test_level_offsets_and_recency_come_from_the_header() -> None:
    snap = Snapshot(encode_snapshot(META, BIDS, ASKS))
    assert list(snap.bid_ends) == [len(b",".join(BIDS[: i + 1])) for i in range(len(BIDS))]
    assert list(snap.ask_ends) == [len(ASKS[0])]
    assert snap.recency == (META.publish_time, META.update_id)
    assert snap.meta is snap.meta  # built once, on first use


def test_later_publish_then_higher_update_id_is_more_recent() -> None:
    def recency(update_id: int, publish_time: int) -> tuple[int, int]:
        meta = SnapshotMeta(update_id, None, None, publish_time, 0, BookStatus.SYNCED)
        return Snapshot(encode_snapshot(meta, [], [])).recency

    assert recency(1, 2000) > recency(9, 1999)
    assert recency(10, 2000) > recency(9, 2000)


@pytest.mark.parametrize("cut", [1, 10, len(BIDS[0])])
def test_a_truncated_snapshot_is_rejected_at_receipt(cut: int) -> None:
    raw = encode_snapshot(META, BIDS, ASKS)
    with pytest.raises(StoreError, match="header says"):
        Snapshot(raw[:-cut])


def test_trailing_bytes_are_rejected_at_receipt() -> None:
    with pytest.raises(StoreError, match="header says"):
        Snapshot(encode_snapshot(META, BIDS, ASKS) + b",")


def test_an_unknown_status_is_rejected_at_receipt() -> None:
    raw = bytearray(encode_snapshot(META, BIDS, ASKS))
    raw[43] = 9  # the status byte: version, update id, four times and the replica come first
    with pytest.raises(StoreError, match="status"):
        Snapshot(bytes(raw))


def test_flags_roundtrip_and_default_to_a_whole_head() -> None:
    plain = Snapshot(encode_snapshot(META, BIDS, ASKS))
    assert (plain.more_bids, plain.more_asks, plain.deep) == (False, False, False)
    flagged = Snapshot(encode_snapshot(META, BIDS, ASKS, MORE_ASKS | DEEP))
    assert (flagged.more_bids, flagged.more_asks, flagged.deep) == (False, True, True)
    assert (flagged.bid_count, flagged.ask_count) == (3, 1)
    assert Snapshot(encode_snapshot(META, BIDS, ASKS, MORE_BIDS)).more_bids


def test_unknown_flags_are_rejected_at_receipt() -> None:
    with pytest.raises(StoreError, match="flags"):
        Snapshot(encode_snapshot(META, BIDS, ASKS, 0x80))


def test_a_snapshot_names_the_node_that_wrote_it_and_version_3_is_still_read() -> None:
    tagged = SnapshotMeta(42, 1000, 1001, 1002, 3, BookStatus.SYNCED, node=2**62 + 5)
    snap = Snapshot(encode_snapshot(tagged, BIDS, ASKS))
    assert snap.node == 2**62 + 5 and snap.meta == tagged
    v4 = encode_snapshot(META, BIDS, ASKS, MORE_ASKS)
    v3 = b"\x03" + v4[1:56] + v4[64:]  # the same header without its trailing node tag
    old = Snapshot(v3)
    assert old.node == 0 and old.meta == META and old.more_asks
    assert parse_side(old.bids(2)) == [orjson.loads(b) for b in BIDS[:2]]
    assert parse_side(old.asks(1)) == [orjson.loads(a) for a in ASKS]
