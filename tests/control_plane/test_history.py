"""The cluster's history: samples summed over the live nodes' documents, resyncs counted as each
node's rise (a restart from zero), one sampler per round, a capped list in a real Valkey."""

from __future__ import annotations

import orjson

from book_store.connect import StoreClient
from book_store.history import HISTORY_KEY, History, Sample
from book_store.liveness import NodeHeartbeat, encode_heartbeat
from book_store.schema import NODES_ALIVE, node_stats_key
from control_plane.history import LOCK_KEY, HistorySampler, summarize


def document(
    p99: float, statuses: dict[str, int], resyncs: dict[str, int], count: int = 10
) -> dict[str, object]:
    latency = {"binance.com": {"count": count, "p50": p99 / 4, "p90": p99 / 2, "p99": p99}}
    return {"publish_latency_ms": latency, "statuses": statuses, "resyncs_total": resyncs}


def test_a_sample_sums_the_nodes_and_counts_resyncs_since_the_one_before() -> None:
    first = summarize(
        {
            "node-1": document(4.0, {"synced": 3}, {"gap": 2}),
            "node-2": document(9.0, {"synced": 1, "stale": 1}, {}),
        },
        None,
        1000,
    )
    assert first.latency_ms == {"binance.com": {"count": 20, "p50": 2.25, "p90": 4.5, "p99": 9.0}}
    assert first.replicas == {"synced": 4, "stale": 1}
    assert first.resyncs == {}  # nothing to count a rise from yet
    assert first.node_resyncs == {"node-1": {"gap": 2}, "node-2": {}}

    second = summarize(
        {
            "node-1": document(5.0, {"synced": 2, "resyncing": 1}, {"gap": 3, "stall": 1}),
            "node-2": document(1.0, {"synced": 2}, {"disconnect": 2}),
            "node-3": document(1.0, {"synced": 1}, {"gap": 7}),  # new: counted from its next sample
        },
        first,
        11000,
    )
    assert second.resyncs == {"gap": 1, "stall": 1, "disconnect": 2}
    assert second.replicas == {"synced": 5, "resyncing": 1}

    restarted = summarize({"node-1": document(1.0, {"synced": 3}, {"gap": 1})}, second, 21000)
    assert restarted.resyncs == {"gap": 1}  # its running total fell: it counts from zero again
    assert restarted.shown() == {
        "at": 21000,
        "latency_ms": {"binance.com": {"count": 10, "p50": 0.25, "p90": 0.5, "p99": 1.0}},
        "replicas": {"synced": 3},
        "resyncs": {"gap": 1},
    }


async def test_one_sampler_a_round_appends_to_a_capped_list(redis_client: StoreClient) -> None:
    now = 1_764_500_000_000
    clock = iter(range(now, now + 10**6, 10_000))
    for tag, node_id in enumerate(("node-1", "node-2", "node-gone")):
        at = now - (60_000 if node_id == "node-gone" else 1000)
        await redis_client.hset(NODES_ALIVE, node_id, encode_heartbeat(node_id, NodeHeartbeat(tag, at, at)))
        await redis_client.set(
            node_stats_key(node_id), orjson.dumps(document(2.0, {"synced": 2}, {"gap": 1}))
        )
    samplers = [HistorySampler(redis_client, interval_s=0.05, clock=lambda: next(clock)) for _ in range(2)]

    taken = await samplers[0].sample()
    assert taken is not None and taken.replicas == {"synced": 4}  # the silent node is left out
    assert await samplers[1].sample() is None  # this round is taken
    await redis_client.delete(LOCK_KEY)
    await redis_client.set(node_stats_key("node-2"), orjson.dumps(document(2.0, {"stale": 2}, {"gap": 4})))
    again = await samplers[1].sample()  # the other process: counts from the stored sample
    assert again is not None and again.resyncs == {"gap": 3} and again.replicas == {"synced": 2, "stale": 2}

    assert [s.at for s in await History(redis_client).recent(10)] == [taken.at, again.at]
    small = History(redis_client, keep=3)
    for at in range(5):
        await small.append(Sample(at))
    assert await redis_client.llen(HISTORY_KEY) == 3
    assert [s.at for s in await small.recent(60)] == [2, 3, 4]
