"""The replica scheduler, rule by rule (it is pure: no servers needed)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from book_store.schema import BookKey, ReplicaId
from control_plane.depth import DEFAULT_DEPTH
from control_plane.models import BookWish, NodeInfo, ReplicaAssignment
from control_plane.scheduling.scheduler import Plan, plan_assignments
from tests.control_plane.helpers import make_node


def book(i: int) -> BookKey:
    return BookKey("binance.com", f"COIN{i:03d}USDT")


def ra(b: BookKey, replica: int, node_id: str, depth: int = DEFAULT_DEPTH) -> ReplicaAssignment:
    return ReplicaAssignment(b.exchange, b.market, replica, node_id, depth)


def wants(replicas: Mapping[BookKey, int], depth: int = DEFAULT_DEPTH) -> dict[BookKey, BookWish]:
    """What the store would report for these replica counts, every book ``depth`` deep."""
    return {b: BookWish(count, depth) for b, count in replicas.items()}


def synced_all(assignments: Iterable[ReplicaAssignment]) -> set[ReplicaId]:
    return {(a.book, a.replica) for a in assignments}


def per_node(assignments: Iterable[ReplicaAssignment]) -> Counter[str]:
    return Counter(a.node_id for a in assignments)


def converge(
    desired: Mapping[BookKey, int],
    nodes: Sequence[NodeInfo],
    current: Iterable[ReplicaAssignment] = (),
    *,
    max_rounds: int = 50,
    max_moves: int = 16,
) -> frozenset[ReplicaAssignment]:
    """Apply plans, marking every replica synced after each round, until nothing changes."""
    state = frozenset(current)
    for _ in range(max_rounds):
        plan = plan_assignments(wants(desired), nodes, sorted(state), synced_all(state), max_moves=max_moves)
        if plan.assignments == state:
            return state
        state = plan.assignments
    raise AssertionError("the plan did not settle")


# -- placement -----------------------------------------------------------------------------


def test_nothing_wanted_means_nothing_assigned() -> None:
    plan = plan_assignments(wants({}), [make_node("a")], [ra(book(1), 1, "a")], set())
    assert plan.assignments == frozenset()
    assert plan.removed == {ra(book(1), 1, "a")}
    assert plan.changed_nodes() == {"a"}


def test_replicas_of_a_book_go_to_different_nodes() -> None:
    desired = {book(i): 2 for i in range(4)}
    plan = plan_assignments(wants(desired), [make_node("a"), make_node("b")], [], set())

    for i in range(4):
        mine = [a for a in plan.assignments if a.book == book(i)]
        assert sorted(a.node_id for a in mine) == ["a", "b"]
        assert sorted(a.replica for a in mine) == [1, 2]
    assert plan.added == plan.assignments
    assert plan.unplaced == {}


def test_books_are_spread_evenly() -> None:
    desired = {book(i): 1 for i in range(10)}
    plan = plan_assignments(wants(desired), [make_node(n) for n in "abc"], [], set())
    assert sorted(per_node(plan.assignments).values()) == [3, 3, 4]


def test_fill_is_relative_to_capacity() -> None:
    desired = {book(i): 1 for i in range(20)}
    plan = plan_assignments(
        wants(desired), [make_node("small", capacity=10), make_node("big", capacity=30)], [], set()
    )
    assert per_node(plan.assignments) == {"small": 5, "big": 15}


def test_reported_load_breaks_ties() -> None:
    nodes = [make_node("a", load=500.0), make_node("b", load=20.0)]
    plan = plan_assignments(wants({book(1): 1}), nodes, [], set())
    assert plan.assignments == {ra(book(1), 1, "b")}


def test_capacity_is_never_exceeded_and_the_rest_is_reported_unplaced() -> None:
    desired = {book(i): 1 for i in range(5)}
    plan = plan_assignments(
        wants(desired), [make_node("a", capacity=2), make_node("b", capacity=2)], [], set()
    )
    assert per_node(plan.assignments) == {"a": 2, "b": 2}
    assert plan.unplaced == {book(4): 1}


def test_two_replicas_share_a_node_only_when_no_other_node_is_free() -> None:
    two_nodes = plan_assignments(wants({book(1): 3}), [make_node("a"), make_node("b")], [], set())
    assert sorted(per_node(two_nodes.assignments).values()) == [1, 2]

    full_c = make_node("c", capacity=0)
    three_nodes = plan_assignments(wants({book(1): 3}), [make_node("a"), make_node("b"), full_c], [], set())
    assert sorted(per_node(three_nodes.assignments).values()) == [1, 2]
    free_c = plan_assignments(
        wants({book(1): 3}), [make_node("a"), make_node("b"), make_node("c")], [], set()
    )
    assert per_node(free_c.assignments) == {"a": 1, "b": 1, "c": 1}


def test_existing_replicas_stay_where_they_are() -> None:
    current = [ra(book(1), 4, "b"), ra(book(2), 9, "a")]
    plan = plan_assignments(wants({book(1): 1, book(2): 1}), [make_node("a"), make_node("b")], current, set())
    assert plan.assignments == set(current)
    assert plan.changed_nodes() == set()


def test_books_nobody_wants_lose_their_replicas_at_once() -> None:
    current = [ra(book(1), 1, "a"), ra(book(2), 1, "a")]
    plan = plan_assignments(wants({book(1): 1, book(2): 0}), [make_node("a")], current, synced_all(current))
    assert plan.assignments == {ra(book(1), 1, "a")}
    assert plan.removed == {ra(book(2), 1, "a")}


# -- failures and draining -----------------------------------------------------------------


def test_dead_nodes_replicas_are_replaced_at_once_with_new_indexes() -> None:
    current = [ra(book(1), 1, "dead"), ra(book(1), 2, "a"), ra(book(2), 5, "dead")]
    plan = plan_assignments(
        wants({book(1): 2, book(2): 1}), [make_node("a"), make_node("b")], current, synced_all(current)
    )

    assert plan.removed == {ra(book(1), 1, "dead"), ra(book(2), 5, "dead")}
    assert ra(book(1), 3, "b") in plan.added  # not index 1 again: its old snapshot may linger
    assert {a.replica for a in plan.assignments if a.book == book(2)} == {6}
    assert "dead" in plan.changed_nodes()


def test_draining_node_is_replaced_make_before_break() -> None:
    nodes = [make_node("a"), make_node("b"), make_node("old", draining=True)]
    current = [ra(book(1), 1, "old"), ra(book(1), 2, "a")]

    first = plan_assignments(wants({book(1): 2}), nodes, current, synced_all(current))
    assert first.added == {ra(book(1), 3, "b")}
    assert first.removed == frozenset()  # the draining replica serves until its successor is synced

    still_syncing = plan_assignments(
        wants({book(1): 2}), nodes, sorted(first.assignments), synced_all(current)
    )
    assert still_syncing.assignments == first.assignments

    done = plan_assignments(
        wants({book(1): 2}), nodes, sorted(first.assignments), synced_all(first.assignments)
    )
    assert done.removed == {ra(book(1), 1, "old")}
    assert all(a.node_id != "old" for a in done.assignments)


def test_draining_node_keeps_its_replicas_when_nobody_else_has_room() -> None:
    nodes = [make_node("a", capacity=0), make_node("old", draining=True)]
    current = [ra(book(1), 1, "old")]
    plan = plan_assignments(wants({book(1): 1}), nodes, current, set())
    assert plan.assignments == set(current)


def test_draining_node_gets_no_new_replicas() -> None:
    nodes = [make_node("a", capacity=1), make_node("old", draining=True)]
    plan = plan_assignments(wants({book(1): 1, book(2): 1}), nodes, [], set())
    assert per_node(plan.assignments) == {"a": 1}
    assert plan.unplaced == {book(2): 1}


def test_unsynced_surplus_is_removed_at_once() -> None:
    nodes = [make_node("a"), make_node("b"), make_node("old", draining=True)]
    current = [ra(book(1), 1, "old")]
    plan = plan_assignments(wants({book(1): 1}), nodes, current, synced=set())
    assert ra(book(1), 1, "old") in plan.removed
    assert len(plan.added) == 1


# -- rebalancing ---------------------------------------------------------------------------


def test_new_node_is_filled_make_before_break() -> None:
    desired = {book(i): 1 for i in range(10)}
    current = [ra(book(i), 1, "a") for i in range(10)]
    nodes = [make_node("a"), make_node("b")]

    first = plan_assignments(wants(desired), nodes, current, synced_all(current))
    moved = {a.book for a in first.added}
    assert len(moved) == 5
    assert all(a.node_id == "b" and a.replica == 2 for a in first.added)
    assert first.removed == frozenset()  # the old replicas serve until the new ones are synced

    # Next round, nothing new is synced yet: the plan holds, no further moves start.
    waiting = plan_assignments(wants(desired), nodes, sorted(first.assignments), synced_all(current))
    assert waiting.assignments == first.assignments

    done = plan_assignments(wants(desired), nodes, sorted(first.assignments), synced_all(first.assignments))
    assert done.removed == {ra(b, 1, "a") for b in moved}
    assert per_node(done.assignments) == {"a": 5, "b": 5}

    settled = plan_assignments(wants(desired), nodes, sorted(done.assignments), synced_all(done.assignments))
    assert settled.changed_nodes() == set()


def test_moves_in_flight_are_limited() -> None:
    desired = {book(i): 1 for i in range(20)}
    current = [ra(book(i), 1, "a") for i in range(20)]
    nodes = [make_node("a"), make_node("b")]

    first = plan_assignments(wants(desired), nodes, current, synced_all(current), max_moves=3)
    assert len(first.added) == 3
    # While those three are unsynced, no further move starts.
    second = plan_assignments(
        wants(desired), nodes, sorted(first.assignments), synced_all(current), max_moves=3
    )
    assert second.added == frozenset()


def test_balanced_fleet_is_left_alone() -> None:
    current = [ra(book(i), 1, "ab"[i % 2]) for i in range(9)]
    plan = plan_assignments(
        wants({book(i): 1 for i in range(9)}), [make_node("a"), make_node("b")], current, set()
    )
    assert plan.changed_nodes() == set()


def test_duplicate_on_one_node_is_spread_when_a_node_frees_up() -> None:
    current = [ra(book(1), 1, "a"), ra(book(1), 2, "a")]
    nodes = [make_node("a"), make_node("b")]
    first = plan_assignments(wants({book(1): 2}), nodes, current, synced_all(current))
    assert first.added == {ra(book(1), 3, "b")}
    assert first.removed == frozenset()

    done = plan_assignments(
        wants({book(1): 2}), nodes, sorted(first.assignments), synced_all(first.assignments)
    )
    assert per_node(done.assignments) == {"a": 1, "b": 1}


def test_fewer_replicas_wanted_keeps_the_synced_ones_until_the_rest_catch_up() -> None:
    nodes = [make_node("a"), make_node("b"), make_node("c")]
    current = [ra(book(1), 1, "a"), ra(book(1), 2, "b"), ra(book(1), 3, "c")]
    # Only replica 1 is synced: it must survive the reduction to one replica.
    plan = plan_assignments(wants({book(1): 1}), nodes, current, {(book(1), 1)})
    assert plan.assignments == {ra(book(1), 1, "a")}


# -- depth ---------------------------------------------------------------------------------


def test_new_replicas_are_created_at_the_wished_depth() -> None:
    desired = {book(1): BookWish(2, 5000), book(2): BookWish(1, 20)}
    plan = plan_assignments(desired, [make_node("a"), make_node("b")], [], set())
    assert {(a.book, a.depth) for a in plan.assignments} == {(book(1), 5000), (book(2), 20)}
    assert len(plan.assignments) == 3 and plan.resized == frozenset()


def test_a_deeper_wish_resizes_the_replicas_in_place() -> None:
    nodes = [make_node("a"), make_node("b")]
    current = [ra(book(1), 4, "a"), ra(book(1), 7, "b"), ra(book(2), 1, "a")]

    plan = plan_assignments({book(1): BookWish(2, 1000), book(2): BookWish(1, 100)}, nodes, current, set())

    deeper = {ra(book(1), 4, "a", 1000), ra(book(1), 7, "b", 1000)}
    assert plan.assignments == deeper | {ra(book(2), 1, "a")}
    assert plan.resized == deeper
    assert plan.added == frozenset() and plan.removed == frozenset()
    assert plan.changed_nodes() == {"a", "b"}
    assert plan.for_node("a") == [ra(book(1), 4, "a", 1000), ra(book(2), 1, "a")]


def test_depth_falls_back_when_the_deepest_subscriber_leaves() -> None:
    nodes = [make_node("a"), make_node("b")]
    deep = [ra(book(1), 1, "a", 5000), ra(book(1), 2, "b", 5000)]
    synced = synced_all(deep)

    # The store's wish for the book drops from 5000 to the remaining subscriber's 100 levels.
    plan = plan_assignments({book(1): BookWish(2, 100)}, nodes, deep, synced)

    assert plan.assignments == {ra(book(1), 1, "a", 100), ra(book(1), 2, "b", 100)}
    assert plan.resized == plan.assignments
    assert plan.added == frozenset() and plan.removed == frozenset()
    settled = plan_assignments({book(1): BookWish(2, 100)}, nodes, sorted(plan.assignments), synced)
    assert settled.changed_nodes() == set()


def test_a_depth_change_is_not_a_move() -> None:
    """Every replica keeps its node and index, unsynced and surplus ones included; none is new."""
    nodes = [make_node("a"), make_node("b"), make_node("old", draining=True)]
    current = [ra(book(1), 1, "old"), ra(book(1), 2, "a"), ra(book(1), 3, "b")]
    synced = {(book(1), 1), (book(1), 2)}  # replica 3 is still syncing: 1 must stay for now

    plan = plan_assignments({book(1): BookWish(2, 2000)}, nodes, current, synced)

    assert plan.assignments == {ra(b.book, b.replica, b.node_id, 2000) for b in current}
    assert plan.added == frozenset() and plan.removed == frozenset()
    assert {(a.replica, a.node_id) for a in plan.resized} == {(1, "old"), (2, "a"), (3, "b")}
    assert max(a.replica for a in plan.assignments) == 3  # no new index was taken
    assert plan.unplaced == {}


def test_a_move_and_a_depth_change_in_one_round() -> None:
    nodes = [make_node("a"), make_node("b")]
    current = [ra(book(1), 1, "dead"), ra(book(1), 2, "a")]

    plan = plan_assignments({book(1): BookWish(2, 500)}, nodes, current, synced_all(current))

    assert plan.removed == {ra(book(1), 1, "dead")}
    assert plan.added == {ra(book(1), 3, "b", 500)}  # the replacement is born at the new depth
    assert plan.resized == {ra(book(1), 2, "a", 500)}
    assert plan.changed_nodes() == {"dead", "a", "b"}


def test_depth_plans_are_deterministic() -> None:
    desired = {book(i): BookWish(2, 100 * (i + 1)) for i in range(8)}
    current = [ra(book(i), 1, "abc"[i % 3]) for i in range(8)]
    nodes = [make_node(n) for n in "abc"]
    plans = [plan_assignments(desired, nodes, current, synced_all(current)) for _ in range(3)]
    assert plans[0] == plans[1] == plans[2]
    assert all(a.depth == 100 * (int(a.market[4:7]) + 1) for a in plans[0].assignments)


# -- whole-fleet properties ----------------------------------------------------------------


def _check_invariants(
    state: frozenset[ReplicaAssignment], desired: Mapping[BookKey, int], nodes: Sequence[NodeInfo]
) -> None:
    capacity = {n.id: n.capacity for n in nodes}
    counts = per_node(state)
    assert all(counts[n] <= capacity[n] for n in counts)
    eligible = [n.id for n in nodes if not n.draining]
    for b, wanted in desired.items():
        mine = [a for a in state if a.book == b]
        assert len(mine) == wanted
        assert len({a.replica for a in mine}) == wanted
        if wanted <= len(eligible):
            assert len({a.node_id for a in mine}) == wanted
    # Balanced: no single move would lower a fuller node's fill (unless anti-affinity forbids it).
    for source in eligible:
        for target in eligible:
            if (counts[target] + 1) * capacity[source] < counts[source] * capacity[target]:
                on_target = {a.book for a in state if a.node_id == target}
                assert {a.book for a in state if a.node_id == source} <= on_target


def test_random_fleets_settle_into_valid_balanced_plans() -> None:
    rng = random.Random(7)
    for _ in range(30):
        nodes = [make_node(f"n{i}", capacity=rng.choice([40, 60])) for i in range(rng.randint(2, 5))]
        desired = {book(i): rng.randint(1, 3) for i in range(rng.randint(1, 40))}
        state = converge(desired, nodes)
        _check_invariants(state, desired, nodes)

        # A node dies, another joins: the fleet settles again.
        survivors = [*nodes[1:], make_node("fresh", capacity=60)]
        state = converge(desired, survivors, state)
        _check_invariants(state, desired, survivors)


def test_plan_is_deterministic() -> None:
    desired = {book(i): 2 for i in range(12)}
    nodes = [make_node(n) for n in "abcd"]
    plans: list[Plan] = [plan_assignments(wants(desired), nodes, [], set()) for _ in range(3)]
    assert plans[0] == plans[1] == plans[2]


def test_moves_of_multi_replica_books_stick() -> None:
    desired = {book(i): 2 for i in range(6)}
    current = [ra(book(i), r, node) for i in range(6) for r, node in ((1, "a"), (2, "b"))]
    nodes = [make_node("a"), make_node("b"), make_node("c")]

    state = converge(desired, nodes, current)

    assert per_node(state) == {"a": 4, "b": 4, "c": 4}
    _check_invariants(state, desired, nodes)


# -- venue credentials (Alpaca: one stream connection per key) --------------------------------------


def pair(i: int) -> BookKey:
    return BookKey("alpaca-crypto", f"C{i:02d}/USD")


def test_a_keyed_exchange_goes_to_at_most_one_node_per_key() -> None:
    nodes = [make_node(n) for n in "abc"]
    desired = wants({pair(1): 2, pair(2): 2, book(1): 3})
    plan = plan_assignments(desired, nodes, [], set(), keyed={"alpaca-crypto": 2})
    alpaca = [a for a in plan.assignments if a.exchange == "alpaca-crypto"]
    assert len(alpaca) == 4 and len({a.node_id for a in alpaca}) == 2
    for ref in (pair(1), pair(2)):  # two replicas of a book never on one node: that takes two keys
        assert len({a.node_id for a in alpaca if a.book == ref}) == 2
    assert len([a for a in plan.assignments if a.book == book(1)]) == 3, "other exchanges unaffected"
    assert not plan.unplaced and not plan.reasons


def test_a_pool_too_small_leaves_replicas_unplaced_with_a_reason() -> None:
    nodes = [make_node(n) for n in "abc"]
    plan = plan_assignments(wants({pair(1): 2}), nodes, [], set(), keyed={"alpaca-crypto": 1})
    assert len(plan.assignments) == 1
    assert plan.unplaced == {pair(1): 1}
    assert "pool of 1 key(s)" in plan.reasons[pair(1)] and "add keys" in plan.reasons[pair(1)]
    empty = plan_assignments(wants({pair(1): 1}), nodes, [], set(), keyed={"alpaca-crypto": 0})
    assert not empty.assignments and "pool of 0 key(s)" in empty.reasons[pair(1)]


def test_a_keyed_book_follows_its_key_when_a_node_dies() -> None:
    nodes = [make_node(n) for n in "abc"]
    keyed = {"alpaca-crypto": 2}
    first = plan_assignments(wants({pair(1): 1, pair(2): 1}), nodes, [], set(), keyed=keyed)
    holders = {a.node_id for a in first.assignments}
    assert len(holders) == 2
    dead = sorted(holders)[0]
    live = [n for n in nodes if n.id != dead]
    second = plan_assignments(
        wants({pair(1): 1, pair(2): 1}),
        live,
        sorted(first.assignments),
        synced_all(first.assignments),
        keyed=keyed,
    )
    assert len(second.assignments) == 2 and dead not in {a.node_id for a in second.assignments}
    assert len({a.node_id for a in second.assignments}) <= 2 and not second.unplaced
