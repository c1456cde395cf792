"""book_store against a real Valkey server."""

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import orjson
import pytest
import redis.asyncio as redis

from book_store.catalog import MarketCatalog, MarketInfo
from book_store.codec import DEEP, BookStatus, Snapshot, SnapshotMeta, decode_message, encode_snapshot
from book_store.delta import REPLACE, encode_delta, read_change
from book_store.reader import BookReader, choose_replica
from book_store.schema import BookKey, InvalidBookIdError, catalog_key
from book_store.writer import BookWriter
from ladder_process.errors import StoreError
from tests.stores import ChangeMessages

BOOK = BookKey("binance.com", "ETHBTC")


def snap(
    update_id: int, replica: int, status: BookStatus = BookStatus.SYNCED, publish_time: int = 1000
) -> bytes:
    meta = SnapshotMeta(update_id, 1, 1, publish_time, replica, status)
    return encode_snapshot(meta, [f'["{update_id}","1"]'.encode()], [])


def test_keys_share_one_hash_slot_per_book() -> None:
    assert BOOK.snapshots == "ladder:{binance.com|ETHBTC}:snap"
    assert BOOK.channel.count(BOOK.tag) == 1
    assert BookKey.from_channel(BOOK.channel) == BOOK
    assert BookKey("alpaca-crypto", "BTC/USD").tag == "{alpaca-crypto|BTC/USD}"


@pytest.mark.parametrize("bad", ["", "A{B", "A}B", "A|B", "A B", "X" * 65])
def test_keys_reject_names_that_break_the_schema(bad: str) -> None:
    with pytest.raises(InvalidBookIdError):
        BookKey("binance.com", bad)


@pytest.mark.parametrize("message", [b"", b"\x01"])
def test_a_message_too_short_to_name_its_replica_is_a_store_error(message: bytes) -> None:
    with pytest.raises(StoreError, match="too short"):
        decode_message(message)


async def test_writer_batches_a_loop_turn_into_one_flush(redis_client: redis.Redis) -> None:
    flushes: list[int] = []
    writer = BookWriter(redis_client, on_flush=lambda n, _s: flushes.append(n))
    changes = ChangeMessages(redis_client)
    await changes.subscribe(BOOK.channel)
    for update_id in range(1, 6):  # five versions of replica 0 in one turn: conflated
        writer.put(BOOK, 0, snap(update_id, 0))
    writer.put(BOOK, 1, snap(4, 1))
    await writer.drain()
    assert flushes == [2]
    replicas = await BookReader(redis_client).replicas(BOOK)
    assert {r: s.meta.update_id for r, s in replicas.items()} == {0: 5, 1: 4}
    message = await changes.next()
    assert message is not None
    replica, payload = decode_message(message[1])
    assert replica == 0 and Snapshot(payload).meta.update_id == 5
    writer.remove(BOOK, 1)
    await writer.drain()
    assert set(await BookReader(redis_client).replicas(BOOK)) == {0}
    await changes.close()


async def test_a_fenced_writer_sends_nothing_until_unfenced(redis_client: redis.Redis) -> None:
    """A node that may have been declared dead keeps recording but writes only after it has
    removed the replicas taken from it: then the removal, not the last snapshot, is what lands."""
    writer = BookWriter(redis_client)
    writer.put(BOOK, 0, snap(1, 0))
    writer.put(BOOK, 1, snap(1, 1))
    await writer.drain()
    writer.fence()
    assert writer.fenced
    writer.put(BOOK, 0, snap(2, 0))
    writer.put(BOOK, 1, snap(2, 1))
    await asyncio.sleep(0.05)
    await writer.drain()
    assert {r: s.meta.update_id for r, s in (await BookReader(redis_client).replicas(BOOK)).items()} == {
        0: 1,
        1: 1,
    }
    writer.remove(BOOK, 1)  # replica 1 was moved away meanwhile
    writer.unfence()
    await writer.drain()
    assert {r: s.meta.update_id for r, s in (await BookReader(redis_client).replicas(BOOK)).items()} == {0: 2}


def test_choose_replica_prefers_synced_fresh_newest() -> None:
    synced_old = Snapshot(snap(10, 0, publish_time=1000))
    synced_new = Snapshot(snap(12, 1, publish_time=1000))
    resyncing = Snapshot(snap(50, 2, BookStatus.RESYNCING, publish_time=1000))
    silent = Snapshot(snap(99, 3, publish_time=0))
    chosen = choose_replica([synced_old, synced_new, resyncing, silent], now_ms=1500, max_silence_ms=1000)
    assert chosen is synced_new
    assert choose_replica([resyncing, silent], now_ms=1500, max_silence_ms=1000) is None


async def test_catalog_replace_and_read(redis_client: redis.Redis) -> None:
    catalog = MarketCatalog(redis_client)
    eth = MarketInfo("binance.com", "ETHBTC", "TRADING", "ETH", "BTC")
    halted = MarketInfo("binance.com", "OLDBTC", "BREAK", "OLD", "BTC")
    await catalog.replace("binance.com", [eth, halted])
    assert await catalog.exchanges() == ["binance.com"]
    assert await catalog.get("binance.com", "ETHBTC") == eth
    assert not halted.tradable
    await catalog.replace("binance.com", [eth])
    assert await catalog.markets("binance.com") == [eth]
    assert await catalog.get("binance.com", "OLDBTC") is None


async def test_a_catalog_row_that_does_not_say_its_kind_is_of_unknown_kind(redis_client: redis.Redis) -> None:
    """A row an older node wrote is never taken for spot (it may be a perpetual's)."""
    catalog = MarketCatalog(redis_client)
    swap = MarketInfo("okx", "BTC-USDT-SWAP", "TRADING", "BTC", "USDT", "perpetual")
    await catalog.replace("okx", [swap])
    assert await catalog.get("okx", "BTC-USDT-SWAP") == swap
    old = orjson.dumps({k: v for k, v in swap.to_json().items() if k != "kind"})
    await redis_client.hset(catalog_key("okx"), "BTC-USDT-SWAP", old)
    assert (await catalog.markets("okx"))[0].kind == "unknown"


async def test_a_catalog_row_keeps_its_alias_and_one_without_is_no_alias(redis_client: redis.Redis) -> None:
    """Only an alias's row names one: every other row is stored as it was before aliases."""
    catalog = MarketCatalog(redis_client)
    usd = MarketInfo("coinbase", "BTC-USD", "TRADING", "BTC", "USD")
    usdc = MarketInfo("coinbase", "BTC-USDC", "TRADING", "BTC", "USDC", alias="BTC-USD")
    await catalog.replace("coinbase", [usd, usdc])
    assert await catalog.markets("coinbase") == [usd, usdc]
    stored = await redis_client.hget(catalog_key("coinbase"), "BTC-USD")
    assert isinstance(stored, bytes) and "alias" not in orjson.loads(stored)
    old = orjson.dumps({k: v for k, v in usd.to_json().items() if k != "kind"})
    await redis_client.hset(catalog_key("coinbase"), "BTC-USD", old)
    assert (await catalog.get("coinbase", "BTC-USD")) == MarketInfo(
        "coinbase", "BTC-USD", "TRADING", "BTC", "USD", "unknown"
    )


async def test_the_catalog_digest_changes_with_the_content_only(redis_client: redis.Redis) -> None:
    catalog = MarketCatalog(redis_client)
    eth = MarketInfo("binance.com", "ETHBTC", "TRADING", "ETH", "BTC")
    bnb = MarketInfo("binance.com", "BNBBTC", "TRADING", "BNB", "BTC")
    assert await catalog.digest("binance.com") is None
    await catalog.replace("binance.com", [eth, bnb])
    first = await catalog.digest("binance.com")
    await catalog.replace("binance.com", [bnb, eth])  # the same markets, listed in another order
    assert first is not None and await catalog.digest("binance.com") == first
    await catalog.replace("binance.com", [eth, MarketInfo("binance.com", "BNBBTC", "BREAK", "BNB", "BTC")])
    assert await catalog.digest("binance.com") not in (None, first)


def test_embedded_server_dies_with_its_parent() -> None:
    """SIGKILL the process that started Valkey: the server must not survive it."""
    script = (
        "from ladder_process.embedded_valkey import main; import signal; "
        "signal.pthread_sigmask(signal.SIG_BLOCK, {2, 15}); main()"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    assert parent.stdout.readline().startswith("LADDER_STORE_READY=redis://127.0.0.1:")
    pids = subprocess.run(["pgrep", "-P", str(parent.pid)], capture_output=True, text=True).stdout.split()
    assert pids, "the server should be running"
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(int(p)) for p in pids):
        time.sleep(0.05)
    assert not any(_alive(int(p)) for p in pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


async def test_reader_reports_unreachable_store() -> None:
    from ladder_process.errors import StoreUnavailableError

    # A port bound but not listening refuses connections, and no parallel test can take it meanwhile.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        client = redis.Redis(port=closed.getsockname()[1], socket_connect_timeout=0.2)
        with pytest.raises(StoreUnavailableError):
            await BookReader(client).replicas(BOOK)
        await client.aclose()
    await asyncio.sleep(0)


async def test_many_reads_every_book_in_one_round_trip(redis_client: redis.Redis) -> None:
    other = BookKey("binance.com-futures", "BTCUSDT")
    writer = BookWriter(redis_client)
    writer.put(BOOK, 0, snap(7, 0))
    writer.put(other, 2, snap(9, 2))
    await writer.drain()
    result = await BookReader(redis_client).many([BOOK, other, BookKey("binance.com", "NONE")])
    assert {b: {r: s.meta.update_id for r, s in reps.items()} for b, reps in result.items()} == {
        BOOK: {0: 7},
        other: {2: 9},
        BookKey("binance.com", "NONE"): {},
    }


async def test_a_writer_says_when_heads_can_be_sent(redis_client: redis.Redis) -> None:
    writer = BookWriter(redis_client)
    assert writer.heads_ready.is_set()  # nothing in flight: record now
    writer.put(BOOK, 0, snap(1, 0))
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # the pipeline is on its way
    assert not writer.heads_ready.is_set()
    await asyncio.wait_for(writer.heads_ready.wait(), 5)
    writer.fence()
    assert not writer.heads_ready.is_set()  # a fenced writer sends nothing
    writer.unfence()
    assert writer.heads_ready.is_set()


async def test_deep_snapshots_land_after_the_store_forgot_their_script(redis_client: redis.Redis) -> None:
    def deep(update_id: int) -> bytes:
        return encode_snapshot(
            SnapshotMeta(update_id, 1, 1, 1000, 0, BookStatus.SYNCED), [b'["1","1"]'], [], DEEP
        )

    writer = BookWriter(redis_client)
    writer.put(BOOK, 0, deep(1), deep=True)
    await writer.drain()
    await redis_client.script_flush()  # as after a restart of the store
    writer.put(BOOK, 0, deep(2), deep=True)
    await writer.drain()
    assert (await BookReader(redis_client).stored(BOOK)).deeps[0].update_id == 2


def delta_after(update_id: int, replica: int = 0) -> bytes:
    """The delta from ``snap(update_id, replica)`` to ``snap(update_id + 1, replica)``."""
    meta = SnapshotMeta(update_id + 1, 1, 1, 1000 + update_id + 1, replica, BookStatus.SYNCED)
    level = f'["{update_id + 1}","1"]'.encode()
    return encode_delta(meta, update_id, 0, 5, (1, 0), [(REPLACE, 0, level)], [])


async def test_deltas_are_published_and_stored_so_a_reader_gets_the_latest_head(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client)
    changes = ChangeMessages(redis_client)
    await changes.subscribe(BOOK.channel)
    writer.put(BOOK, 0, snap(10, 0, publish_time=1010))
    for update_id in (10, 11, 12):  # one loop turn: never conflated, all sent in order
        writer.put_delta(BOOK, 0, delta_after(update_id))
    await writer.drain()
    kinds = []
    for _ in range(4):
        message = await changes.next()
        assert message is not None
        kinds.append(type(read_change(decode_message(message[1])[1])).__name__)
    assert kinds == ["Snapshot", "Delta", "Delta", "Delta"]
    assert sorted(await redis_client.hkeys(BOOK.snapshots)) == [b"0", b"0:1", b"0:2", b"0:3"]
    head = (await BookReader(redis_client).replicas(BOOK))[0]
    assert (head.update_id, bytes(head.bids(5))) == (13, b'["13","1"]')
    await changes.close()


async def test_a_new_base_a_whole_snapshot_or_a_removal_drops_the_delta_fields(
    redis_client: redis.Redis,
) -> None:
    writer = BookWriter(redis_client)
    writer.put(BOOK, 0, snap(10, 0, publish_time=1010))
    writer.put_delta(BOOK, 0, delta_after(10))
    writer.put_delta(BOOK, 0, delta_after(11), base=snap(12, 0, publish_time=1012))
    await writer.drain()
    assert await redis_client.hkeys(BOOK.snapshots) == [b"0"]
    assert (await BookReader(redis_client).replicas(BOOK))[0].update_id == 12
    writer.put_delta(BOOK, 0, delta_after(12))
    writer.put(BOOK, 0, snap(20, 0, publish_time=1020))  # replaces the unsent delta, drops the sent ones
    writer.put_delta(BOOK, 0, delta_after(20))
    await writer.drain()
    assert sorted(await redis_client.hkeys(BOOK.snapshots)) == [b"0", b"0:1"]
    assert (await BookReader(redis_client).replicas(BOOK))[0].update_id == 21
    writer.remove(BOOK, 0)
    await writer.drain()
    assert await redis_client.hkeys(BOOK.snapshots) == []


async def test_a_stored_delta_that_does_not_continue_its_head_leaves_the_replica_out(
    redis_client: redis.Redis,
) -> None:
    await redis_client.hset(
        BOOK.snapshots, mapping={"0": snap(10, 0), "0:1": delta_after(11), "1": snap(5, 1)}
    )
    assert set(await BookReader(redis_client).replicas(BOOK)) == {1}  # replica 0's head is not what it says
    await redis_client.hset(BOOK.snapshots, mapping={"0:1": delta_after(9), "0:2": delta_after(10)})
    assert (await BookReader(redis_client).replicas(BOOK))[0].update_id == 11  # stored before it: skipped
