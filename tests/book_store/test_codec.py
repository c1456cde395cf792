import orjson
import pytest

from book_store.codec import BookStatus, Snapshot, SnapshotMeta, encode_snapshot
from book_store.errors import StoreError

META = SnapshotMeta(
    update_id=42, event_time=1000, ingest_time=1001, publish_time=1002, replica=3, status=BookStatus.SYNCED
)
BIDS = [b'["100.10","1.5"]', b'["100.00","2"]', b'["99.5","0.001"]']
ASKS = [b'["100.20","3"]']


def parse_side(items: bytes) -> list[list[str]]:
    return orjson.loads(b"[" + items + b"]")


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
    assert snap.bids(10) == b"" and snap.asks(10) == b""
    assert Snapshot(encode_snapshot(META, BIDS, ASKS)).bids(0) == b""


def test_unknown_times_roundtrip_as_none() -> None:
    meta = SnapshotMeta(
        update_id=1, event_time=None, ingest_time=None, publish_time=5, replica=0, status=BookStatus.RESYNCING
    )
    assert Snapshot(encode_snapshot(meta, [], [])).meta == meta


def test_corrupt_bytes_are_a_store_error() -> None:
    with pytest.raises(StoreError):
        Snapshot(b"\x01\x02")
    raw = bytearray(encode_snapshot(META, BIDS, ASKS))
    raw[0] = 99
    with pytest.raises(StoreError, match="version"):
        Snapshot(bytes(raw))
