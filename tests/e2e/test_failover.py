"""Losing an ingest node loses no reads: three nodes, books at two replicas, one node SIGKILLed."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.stack import Stack, start_stack, stored_bytes

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("failover")]

BOOKS = [("binance.com", "ETHBTC"), ("binance.com", "BNBBTC"), ("binance.com", "SOLUSDT"),
         ("binance.com-futures", "BTCUSDT"), ("binance.com-futures", "ETHUSDT")]  # fmt: skip


@pytest.fixture(scope="module")
def three_nodes() -> Iterator[Stack]:
    running = start_stack(ingest_nodes=3, extra_env={"LADDER_NODE_TIMEOUT_MS": "1500"})
    yield running
    running.stop()


def replica_nodes(stack: Stack) -> dict[str, list[tuple[str, str, int]]]:
    nodes = stack.admin("GET", "/v1/admin/nodes").json()["nodes"]
    return {
        n["id"]: [(a["exchange"], a["market"], a["replica"]) for a in n["assignments"]]
        for n in nodes
        if n["live"]
    }


def test_sigkill_of_a_node_loses_no_reads(three_nodes: Stack) -> None:
    stack = three_nodes
    key = stack.tenant_key("failover", max_markets=10, max_replicas=2, rate_limit_rps=10_000, burst=10_000)
    for exchange, market in BOOKS:
        response = stack.call(key, "POST", "/v1/subscriptions", json={"exchange": exchange, "market": market,
                                                                      "replicas": 2})  # fmt: skip
        assert response.status_code == 201, response.text
    for exchange, market in BOOKS:
        stack.wait_synced(key, exchange, market)

    failures: list[str] = []
    reads = 0
    stop = threading.Event()

    def read_loop() -> None:
        nonlocal reads
        with httpx.Client(timeout=5, headers={"Authorization": f"Bearer {key}"}) as http:
            while not stop.is_set():
                for exchange, market in BOOKS:
                    r = http.get(f"{stack.api}/v1/books/{exchange}/{market}", params={"depth": 20})
                    reads += 1
                    if r.status_code != 200 or r.json()["status"] != "synced":
                        failures.append(f"{exchange} {market}: {r.status_code} {r.text[:120]}")

    reader = threading.Thread(target=read_loop)
    reader.start()
    try:
        time.sleep(1)
        before = replica_nodes(stack)
        victim = max(before, key=lambda node: len(before[node]))
        lost = len(before[victim])
        assert lost, "the victim keeps replicas"
        process = stack.child(f"ingest-{victim.removeprefix('node-')}").proc
        assert process is not None
        process.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()

        # Every book is back at two synced replicas, on the two remaining nodes, within 15 s.
        while time.monotonic() - killed_at < 15:
            after = replica_nodes(stack)
            placed = [r for node, replicas in after.items() if node != victim for r in replicas]
            if victim not in after and len(placed) == 2 * len(BOOKS) and all_replicas_synced(stack, key):
                break
            time.sleep(0.25)
        else:
            pytest.fail(f"replicas not restored within 15 s: {replica_nodes(stack)}")
        recovered_s = time.monotonic() - killed_at
        time.sleep(0.5)
    finally:
        stop.set()
        reader.join()
    assert reads > 50
    assert failures == [], f"{len(failures)} of {reads} reads failed: {failures[:5]}"
    print(f"recovered {lost} replicas in {recovered_s:.1f} s; {reads} reads, 0 failed")


def all_replicas_synced(stack: Stack, key: str) -> bool:
    subscriptions = stack.call(key, "GET", "/v1/subscriptions").json()["subscriptions"]
    return all(s["status"] == "synced" for s in subscriptions) and len(synced_replica_ids(stack)) == 2 * len(
        BOOKS
    )


def synced_replica_ids(stack: Stack) -> set[tuple[str, str, int]]:
    """Replicas whose snapshot in the store says synced and that were heard from in the last second
    (published, or vouched for by their node's heartbeat)."""
    from book_store.codec import BookStatus
    from book_store.liveness import Heartbeats
    from book_store.reader import decode_stored
    from book_store.schema import NODES_ALIVE, BookKey

    client = stack.store(stack.redis_url)
    now_ms = int(time.time() * 1000)
    heartbeats = Heartbeats()
    heartbeats.learn_stored(stored_bytes(raw) for raw in client.hvals(NODES_ALIVE))
    synced = set()
    for exchange, market in BOOKS:
        raw = client.hgetall(BookKey(exchange, market).snapshots)
        heads = decode_stored({stored_bytes(k): stored_bytes(v) for k, v in raw.items()}).heads
        for replica, head in heads.items():
            meta = head.meta
            if (
                meta.status is BookStatus.SYNCED
                and now_ms - heartbeats.heard(meta.publish_time, meta.node) < 1000
            ):
                synced.add((exchange, market, int(replica)))
    client.close()
    return synced
