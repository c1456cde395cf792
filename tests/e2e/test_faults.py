"""Every venue fault, driven through the fake venue against a whole stack, judged by the read API.

Two properties are checked throughout: whenever ``/v1/books`` says ``synced`` the book equals the
venue's true book at the served ``update_id``; and every fault ends, within the configured times,
in a resync (the per-replica counters the ingest nodes keep in the store say which, and why) or in
a ``stale`` status. Connections roll over every few seconds for the whole file, so every fault also
meets handovers in progress.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from book_store.codec import BookStatus
from book_store.reader import decode_stored
from tests.e2e.stack import Stack, start_stack, stored_bytes
from tests.stores import SyncClient

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("faults")]

VENUE = {"binance.com": "spot", "binance.com-futures": "futures"}
STALE_AFTER_S = 0.8
SETTLE_S = 5.0
"""Time a fault may take to end in a resync (or a stale status) and the book to be synced again."""
CONNECTION_MAX_AGE_S = 5
"""Every connection hands its books over to a successor at 70-100 % of this age."""


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    running = start_stack(
        extra_env={
            "LADDER_STALE_AFTER_MS": str(int(STALE_AFTER_S * 1000)),
            "LADDER_CATALOG_REFRESH_S": "120",
            "LADDER_KEEPALIVE_MS": "200",
            "LADDER_CONNECTION_MAX_AGE_S": str(CONNECTION_MAX_AGE_S),
            "LADDER_ROLLOVER_JITTER": "0.3",
            "LADDER_HANDOVER_TIMEOUT_S": "5",
            "LADDER_CHECKPOINT_EVERY": "4",
            "LADDER_REPLICA_CHECK_INTERVAL_S": "1",
            "LADDER_STATS_INTERVAL_S": "0.3",
        },
        extra_venue_args=["--unicode-symbol"],
    )
    yield running
    running.stop()


@pytest.fixture(scope="module")
def key(stack: Stack) -> str:
    return stack.tenant_key("faults", max_markets=100, max_replicas=2, rate_limit_rps=100_000, burst=100_000)


@pytest.fixture(scope="module")
def store(stack: Stack) -> Iterator[SyncClient]:
    client = stack.store(stack.redis_url)
    yield client
    client.close()


# -- helpers ---------------------------------------------------------------------------------------


def path(exchange: str, market: str) -> str:
    return f"/v1/books/{exchange}/{quote(market, safe='')}"


def subscribe(stack: Stack, key: str, exchange: str, market: str) -> None:
    body = {"exchange": exchange, "market": market, "replicas": 2}
    response = stack.call(key, "POST", "/v1/subscriptions", json=body)
    assert response.status_code in (200, 201), response.text


def read(stack: Stack, key: str, exchange: str, market: str) -> dict[str, Any]:
    """One read; a synced answer is checked against the venue's truth at its update id."""
    response = stack.call(key, "GET", path(exchange, market), params={"depth": 50})
    if response.status_code != 200:
        return {"http": response.status_code, "status": response.json()["error"]["code"]}
    book = response.json()
    assert book["status"] == "synced", book
    truth = stack.truth(VENUE[exchange], market, book["update_id"])
    assert truth.status_code == 200, truth.text
    true_book = truth.json()
    for side in ("bids", "asks"):
        served = [tuple(level) for level in book[side]]
        assert served == [tuple(level) for level in true_book[side][: len(served)]], (
            f"{exchange} {market} {side} differ from the venue at update {book['update_id']}"
        )
    if book["bids"] and book["asks"]:
        assert Decimal(book["bids"][0][0]) < Decimal(book["asks"][0][0]), "a served book is never crossed"
    return {"http": 200, "status": "synced", "update_id": book["update_id"]}


def watch(stack: Stack, key: str, exchange: str, market: str, seconds: float) -> list[dict[str, Any]]:
    """Read the book for ``seconds``, checking every synced answer against the truth."""
    answers = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        answers.append(read(stack, key, exchange, market))
        time.sleep(0.01)
    return answers


def synced(stack: Stack, key: str, exchange: str, market: str, timeout_s: float = SETTLE_S) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        answer = read(stack, key, exchange, market)
        if answer["http"] == 200:
            return answer
        assert time.monotonic() < deadline, f"{exchange} {market} not synced within {timeout_s} s: {answer}"
        time.sleep(0.05)


def replica_stats(store: SyncClient, exchange: str, market: str) -> dict[int, dict[str, Any]]:
    """What each replica's ingest node reports for the book (resyncs by reason, handovers, ...)."""
    raw = store.hgetall(f"ladder:{{{exchange}|{market}}}:stats")
    return {int(replica): orjson.loads(value) for replica, value in raw.items()}


def resyncs(store: SyncClient, exchange: str, market: str) -> Counter[str]:
    total: Counter[str] = Counter()
    for stats in replica_stats(store, exchange, market).values():
        total.update(stats["resyncs"])
    return total


def moves(store: SyncClient, exchange: str, market: str) -> int:
    """Times a replica of the book changed connection, spliced or (``handover`` resync) not."""
    stats = replica_stats(store, exchange, market).values()
    return sum(s["handovers"] + s["resyncs"].get("handover", 0) for s in stats)


def eventually(check: Callable[[], bool], what: str, timeout_s: float = SETTLE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout_s} s: {what}"
        time.sleep(0.05)


def synced_replicas(store: SyncClient, exchange: str, market: str) -> int:
    raw = store.hgetall(f"ladder:{{{exchange}|{market}}}:snap")
    heads = decode_stored({stored_bytes(k): stored_bytes(v) for k, v in raw.items()}).heads.values()
    return sum(head.status is BookStatus.SYNCED for head in heads)


def start_book(stack: Stack, key: str, store: SyncClient, exchange: str, market: str) -> None:
    """Subscribe with two replicas and wait until both are synced."""
    subscribe(stack, key, exchange, market)
    eventually(lambda: synced_replicas(store, exchange, market) == 2, f"{market}: two synced replicas", 10)


def newest_connection(stack: Stack, exchange: str, market: str, replicas: int = 2) -> int:
    """The venue's newest connection carrying the book: a replica's live one.

    Taken while no handover is in progress, i.e. while the book is on one connection per replica.
    During a make-before-break handover the newest connection is a successor that no replica reads
    yet: losing it costs the book nothing (the handover waits for the next successor), so a fault
    aimed at it would test nothing. An older one may be handing its books over and carry none.
    """
    params = {"venue": VENUE[exchange], "symbol": market}
    deadline = time.monotonic() + SETTLE_S
    while True:
        listed = stack.http.get(f"{stack.venue}/_fake/connections", params=params).json()["connections"]
        if len(listed) == replicas:
            return max(int(c["id"]) for c in listed)
        assert time.monotonic() < deadline, f"{market} not on one connection per replica: {listed}"
        time.sleep(0.05)


def node_stats(store: SyncClient) -> list[dict[str, Any]]:
    return [orjson.loads(stored_bytes(store.get(k))) for k in store.scan_iter(match="ladder:node-stats:*")]


# -- stream faults ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exchange", "market"), [("binance.com", "ETHBTC"), ("binance.com-futures", "ETHUSDT")]
)
def test_a_gap_for_everyone_resyncs_both_replicas(
    stack: Stack, key: str, store: SyncClient, exchange: str, market: str
) -> None:
    start_book(stack, key, store, exchange, market)
    stack.fault(action="gap", venue=VENUE[exchange], symbol=market, count=3)
    eventually(lambda: resyncs(store, exchange, market)["gap"] >= 2, "both replicas resync for the gap")
    synced(stack, key, exchange, market)
    watch(stack, key, exchange, market, 0.5)


def test_a_gap_on_one_connection_is_covered_by_the_other_replica(
    stack: Stack, key: str, store: SyncClient
) -> None:
    exchange, market = "binance.com-futures", "SOLUSDT"
    start_book(stack, key, store, exchange, market)
    eventually(lambda: len(replica_stats(store, exchange, market)) == 2, "two replicas")
    conn = newest_connection(stack, exchange, market)
    stack.fault(action="gap", venue="futures", symbol=market, count=1, connection=conn)
    answers = watch(stack, key, exchange, market, 1.5)
    assert resyncs(store, exchange, market)["gap"] == 1
    assert all(a["http"] == 200 for a in answers), "the other replica kept the book served"


def test_a_duplicate_is_dropped_without_a_resync(stack: Stack, key: str, store: SyncClient) -> None:
    exchange, market = "binance.com", "BNBUSDT"
    start_book(stack, key, store, exchange, market)
    before = resyncs(store, exchange, market)
    for _ in range(3):
        stack.fault(action="duplicate", venue="spot", symbol=market)
        watch(stack, key, exchange, market, 0.2)
    assert resyncs(store, exchange, market)["gap"] == before["gap"] == 0


@pytest.mark.parametrize("mode", ["close", "drop"])
def test_a_lost_connection_resyncs_its_replica(stack: Stack, key: str, store: SyncClient, mode: str) -> None:
    exchange, market = "binance.com", {"close": "SOLUSDT", "drop": "XRPUSDT"}[mode]
    start_book(stack, key, store, exchange, market)
    eventually(lambda: len(replica_stats(store, exchange, market)) == 2, "two replicas")
    conn = newest_connection(stack, exchange, market)
    stack.fault(action="disconnect", venue="spot", symbol=market, mode=mode, connection=conn)
    answers = watch(stack, key, exchange, market, 1.0)
    eventually(lambda: resyncs(store, exchange, market)["disconnect"] >= 1, "a resync for the lost socket")
    assert all(a["http"] == 200 for a in answers), "the other replica kept the book served"
    synced(stack, key, exchange, market)


def test_a_server_shutdown_moves_the_replica_to_a_new_connection(
    stack: Stack, key: str, store: SyncClient
) -> None:
    exchange, market = "binance.com-futures", "XRPUSDT"
    start_book(stack, key, store, exchange, market)
    eventually(lambda: len(replica_stats(store, exchange, market)) == 2, "two replicas")
    conn = newest_connection(stack, exchange, market)
    moved, lost = moves(store, exchange, market), resyncs(store, exchange, market)["disconnect"]
    stack.fault(action="server_shutdown", venue="futures", symbol=market, connection=conn)
    answers = watch(stack, key, exchange, market, 1.0)
    # The fake venue closes right after its notice, so the replica mostly resyncs on the successor;
    # when the notice meets an age rollover whose successor is already live, it splices onto that.
    eventually(lambda: moves(store, exchange, market) > moved, "the replica moved over")
    assert resyncs(store, exchange, market)["disconnect"] == lost, "the close was not a plain lost socket"
    assert all(a["http"] == 200 for a in answers)
    assert sum(n["exchanges"][exchange]["connections"]["shutdown_notices"] for n in node_stats(store)) >= 1


def test_rollovers_keep_the_book_served_without_a_snapshot(stack: Stack, key: str, store: SyncClient) -> None:
    """Connections here hand their books over every 3.5-5 s: reads never see the book unsynced."""
    exchange, market = "binance.com", "ADAUSDT"
    start_book(stack, key, store, exchange, market)
    eventually(lambda: len(replica_stats(store, exchange, market)) == 2, "two replicas")
    eventually(lambda: all(s["snapshots"] for s in replica_stats(store, exchange, market).values()), "stats")
    snapshots = {r: s["snapshots"] for r, s in replica_stats(store, exchange, market).items()}
    answers = watch(stack, key, exchange, market, 5.5)
    assert all(a["http"] == 200 for a in answers), [a for a in answers if a["http"] != 200][:3]
    eventually(lambda: all(s["handovers"] for s in replica_stats(store, exchange, market).values()),
               "a handover of each replica", 2)  # fmt: skip
    stats = replica_stats(store, exchange, market)
    assert all(s["resyncs"].get("handover", 0) == 0 for s in stats.values()), stats
    assert {r: s["snapshots"] for r, s in stats.items()} == snapshots, "a handover costs no snapshot"


def test_a_silently_stalled_stream_is_stale_within_2_s_then_resyncs(
    stack: Stack, key: str, store: SyncClient
) -> None:
    exchange, market = "binance.com-futures", "DOGEUSDT"
    start_book(stack, key, store, exchange, market)
    time.sleep(1.0)  # a rhythm of events
    stack.fault(action="withhold", venue="futures", symbol=market, seconds=4.0, resume="replay")
    stalled = time.monotonic()
    # Stale within 2 s at the node (tests/ingest_nodes/runtime/test_stall_checks.py); here through the whole
    # stack, polled with truth checks, on a machine shared with other tests.
    eventually(lambda: read(stack, key, exchange, market)["http"] == 503, "a frozen book is not served", 3)
    answer = stack.call(key, "GET", path(exchange, market))
    assert answer.status_code == 503 and answer.headers.get("Retry-After"), answer.headers
    statuses = {s["market"]: s["status"] for s in stack.call(key, "GET", "/v1/subscriptions").json()[
        "subscriptions"]}  # fmt: skip
    assert statuses[market] in ("stale", "resyncing")
    answers = watch(stack, key, exchange, market, 2.9 - (time.monotonic() - stalled))
    assert all(a["http"] == 503 for a in answers), "never served while the stream withholds its events"
    synced(stack, key, exchange, market)
    eventually(lambda: all(s["stalls"] >= 1 and s["resyncs"].get("stall", 0) >= 1
                           for s in replica_stats(store, exchange, market).values()),
               "both replicas found the stall and resynced", 3)  # fmt: skip


def test_a_quiet_market_stays_synced_and_says_when_it_was_confirmed(
    stack: Stack, key: str, store: SyncClient
) -> None:
    exchange, market = "binance.com", "XRPUSDT"
    start_book(stack, key, store, exchange, market)
    time.sleep(1.0)
    restarts = {r: s["restarts"] for r, s in replica_stats(store, exchange, market).items()}
    stack.fault(action="stall", venue="spot", symbol=market, seconds=6.0)  # no change at all
    quiet = time.monotonic()
    answers = watch(stack, key, exchange, market, 3.5)
    assert all(a["http"] == 200 for a in answers), [a for a in answers if a["http"] != 200][:3]
    book: dict[str, Any] = {}

    def confirmed() -> bool:
        """The venue confirmed the quiet book since its last event: its silence turned suspect and
        a check had its turn in the check share, which on a machine shared with other tests can
        take past the watch above (still within the stall)."""
        book.update(stack.call(key, "GET", path(exchange, market)).json())
        return book["confirmed_time"] is not None and book["confirmed_time"] > book["ingest_time"]

    eventually(confirmed, "the quiet book confirmed after its last event", 2.0)
    assert book["age_ms"] <= int(1000 * (time.monotonic() - quiet)), "age counts from the confirmation"
    too_old = stack.call(key, "GET", path(exchange, market), params={"max_age_ms": 0})
    assert too_old.status_code == 503 and too_old.json()["error"]["code"] == "book_too_old"
    stats = replica_stats(store, exchange, market)
    assert {r: s["restarts"] for r, s in stats.items()} == restarts, "a quiet book is never resynced"
    assert all(s["quiet_checks"] >= 1 for s in stats.values()), stats


def test_a_crossed_book_is_an_alarm_and_resyncs(stack: Stack, key: str, store: SyncClient) -> None:
    exchange, market = "binance.com", "DOGEUSDT"
    start_book(stack, key, store, exchange, market)
    stack.fault(action="cross", venue="spot", symbol=market, updates=6)
    watch(stack, key, exchange, market, 1.0)  # no served answer is crossed
    eventually(lambda: resyncs(store, exchange, market)["crossed"] >= 2, "both replicas raise the alarm")
    synced(stack, key, exchange, market)


def test_an_emptied_side_is_a_valid_one_sided_book(stack: Stack, key: str, store: SyncClient) -> None:
    exchange, market = "binance.com", "LTCUSDT"
    start_book(stack, key, store, exchange, market)
    stack.fault(action="rate", venue="spot", symbol=market, rate=0)
    try:
        stack.fault(action="empty_book", venue="spot", symbol=market, side="asks")
        # The emptying update is the book's last event: it stays synced until stale_after.
        eventually(lambda: stack.call(key, "GET", path(exchange, market)).json().get("asks") == [],
                   "a synced book without asks", STALE_AFTER_S * 0.7)  # fmt: skip
        assert read(stack, key, exchange, market)["http"] == 200
    finally:
        stack.fault(action="rate", venue="spot", symbol=market, rate=20)
    synced(stack, key, exchange, market)


# -- snapshot faults -------------------------------------------------------------------------------


def test_a_lagging_snapshot_is_fetched_again(stack: Stack, key: str, store: SyncClient) -> None:
    exchange, market = "binance.com", "BNBBTC"
    stack.fault(action="snapshot_lag", venue="spot", symbol=market, updates=15)
    try:
        start_book(stack, key, store, exchange, market)
        watch(stack, key, exchange, market, 0.3)
        stats = replica_stats(store, exchange, market)
        assert any(s["snapshots"] >= 2 for s in stats.values()), "a too-old snapshot is refetched"
    finally:
        stack.fault(action="snapshot_lag", venue="spot", symbol=market, updates=0)


def test_a_snapshot_id_in_a_hole_is_never_guessed_at(stack: Stack, key: str) -> None:
    exchange, market = "binance.com-futures", "LTCUSDT"
    stack.fault(action="snapshot_in_hole", venue="futures", enabled=True)
    try:
        subscribe(stack, key, exchange, market)
        answers = watch(stack, key, exchange, market, 1.0)
        assert all(a["http"] == 503 for a in answers), "a snapshot no event continues is never served"
    finally:
        stack.fault(action="snapshot_in_hole", venue="futures", enabled=False)
    synced(stack, key, exchange, market)


@pytest.mark.parametrize(("status", "retry_after"), [(429, 1), (418, 2)])
def test_refusals_close_the_budget_until_retry_after(
    stack: Stack, key: str, store: SyncClient, status: int, retry_after: int
) -> None:
    """The next futures request is refused; whichever book it was for, the budget closes for everyone."""
    exchange, market = "binance.com-futures", {429: "LINKUSDT", 418: "AVAXUSDT"}[status]
    stack.fault(action="http_status", venue="futures", status=status, retry_after=retry_after)
    started = time.monotonic()
    start_book(stack, key, store, exchange, market)
    if any(s["snapshot_failures"] for s in replica_stats(store, exchange, market).values()):
        assert time.monotonic() - started >= retry_after - 0.2, "nothing is sent before Retry-After"

    def refusals() -> int:
        counts = [n["exchanges"][exchange]["snapshots"]["http_status"] for n in node_stats(store)]
        return sum(c.get(str(status), 0) for c in counts)

    eventually(lambda: refusals() == 1, "exactly one refusal", 1)
    assert stack.http.get(f"{stack.venue}/_fake/stats").json()["venues"]["futures"]["http_418"] == 0


def test_slow_snapshots_and_late_acks_still_sync(stack: Stack, key: str) -> None:
    stack.fault(action="snapshot_delay_ms", venue="spot", symbol="BTCUSDT", ms=700)
    stack.fault(action="ack_delay_ms", venue="futures", ms=500)
    try:
        subscribe(stack, key, "binance.com", "BTCUSDT")
        subscribe(stack, key, "binance.com-futures", "BNBUSDT")
        synced(stack, key, "binance.com", "BTCUSDT")
        synced(stack, key, "binance.com-futures", "BNBUSDT")
    finally:
        stack.fault(action="snapshot_delay_ms", venue="spot", symbol="BTCUSDT", ms=0)
        stack.fault(action="ack_delay_ms", venue="futures", ms=0)


# -- markets and the whole run ---------------------------------------------------------------------


def test_only_listed_trading_markets_can_be_subscribed(stack: Stack, key: str, store: SyncClient) -> None:
    start_book(stack, key, store, "binance.com", "币安人生USDT")
    watch(stack, key, "binance.com", "币安人生USDT", 0.3)
    for exchange, market in [("binance.com", "BCCBTC"), ("binance.com-futures", "FTTUSDT"),
                             ("binance.com", "NOSUCHPAIR"), ("binance.com", "币安人生USDC")]:  # fmt: skip
        body = {"exchange": exchange, "market": market}
        response = stack.call(key, "POST", "/v1/subscriptions", json=body)
        assert response.status_code == 404, response.text
        error = response.json()["error"]
        assert error["code"] == "unknown_market" and market in error["message"]


def test_no_replica_disagreed_and_the_venue_never_refused(stack: Stack, key: str, store: SyncClient) -> None:
    """Runs last: over every fault above, replicas compared at equal ids agreed, no 429/418, and
    connections rolled over.

    "Above" is whatever ran before on this test's stack: xdist may spread the file over workers,
    each with its own stack, and the test may run alone. So it keeps a spot book of its own and waits
    for rollovers rather than counting on how long the file took.
    """
    start_book(stack, key, store, "binance.com", "ETHUSDT")
    start_book(stack, key, store, "binance.com-futures", "BTCUSDT")

    def rollovers() -> int:
        return sum(n["exchanges"]["binance.com"]["connections"]["rollovers"] for n in node_stats(store))

    # Each replica's connection hands over by CONNECTION_MAX_AGE_S; the rest is room for a busy host.
    eventually(lambda: rollovers() >= 2, "two spot connection rollovers", 4 * CONNECTION_MAX_AGE_S)
    eventually(lambda: sum(n["replica_checks"] for n in node_stats(store)) > 0, "replica comparisons")
    assert sum(n["replica_mismatches"] for n in node_stats(store)) == 0
    venue = stack.http.get(f"{stack.venue}/_fake/stats").json()
    assert venue["http_429"] == 0 and venue["http_418"] == 0
