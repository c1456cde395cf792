"""The replica scheduler: a pure function from what is wanted and what exists to a new plan.

Theory of operation. Inputs: ``desired`` (replicas and depth per book), the live ``nodes`` (the
caller drops nodes whose heartbeat is too old), the ``current`` assignments (possibly on nodes
that are no longer live) and the replicas whose snapshots are ``synced``. The plan is computed
in phases, each over all books in sorted order, so that the result is deterministic and a later
phase sees the load the earlier ones created:

1. Drop at once every replica on a node that is not live, and every replica of a book nobody
   wants. Nothing can be served from them.
2. Keep: each book keeps its existing replicas on eligible (live, not draining) nodes as
   *targets*, one per node, up to the desired count, preferring replicas on nodes that were
   least filled when the round started, then synced replicas, then the newest index.
3. Spread: missing replicas are created on eligible nodes that hold no replica of the book,
   the least filled first (targets / capacity, then the node's reported load, then its id).
4. Double up only when no free node has room: an existing second replica on a node is kept,
   then new second replicas are created.
5. Fall back to replicas on draining nodes only when eligible nodes have no room at all.
6. Rebalance: while moving one replica from the fullest node to the emptiest would lower the
   fullest fill, move one, at most ``max_moves`` moves in flight (surplus replicas still kept).
7. Release surplus (existing replicas that are not targets) make-before-break: an unsynced
   surplus replica is removed at once; synced ones are kept while the book's synced targets are
   fewer than desired, and removed once the targets have caught up.

A moved or replacement replica always gets a *new* index, larger than any index the book has
in ``current``, so "the new replica is synced" can never be confused with the old one. Phase 2's
preference is what makes a move stick across rounds: a move only goes to a node that stays less
filled than the source, and the source still carries the old replica, so next round the new
replica is the target and the old one the surplus until it is released.

Venue keys: a venue that allows one stream connection per key (Alpaca) can carry its books on at
most as many nodes as there are keys in the pool, one key a node. ``keyed`` names such exchanges
and their pool sizes: replicas of them go only to nodes that already carry the exchange, or to a
new node while a key is left; never two replicas of one book on one node (that would take a
second key there). What cannot be placed stays unplaced, and ``Plan.reasons`` says why.

Depth is not placement: every replica of a book, kept or new, target or surplus, carries the
book's wished depth. A replica whose depth changed keeps its node and its index (it is
``resized``, not added and removed), and its node's set is rewritten so the node adjusts it in
place; nothing moves and no new index is taken for a depth change alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from fractions import Fraction

from book_store.schema import BookKey, ReplicaId
from control_plane.models import BookWish, NodeInfo, ReplicaAssignment

DEFAULT_MAX_MOVES = 16


@dataclass(frozen=True)
class Plan:
    """The complete new assignment state, and how it differs from the current one.

    ``added`` and ``removed`` are replicas that appear and go (a move is one of each);
    ``resized`` are kept replicas (same book, index and node) at their new depth.
    """

    assignments: frozenset[ReplicaAssignment]
    added: frozenset[ReplicaAssignment]
    removed: frozenset[ReplicaAssignment]
    unplaced: Mapping[BookKey, int] = field(default_factory=dict)
    resized: frozenset[ReplicaAssignment] = frozenset()
    reasons: Mapping[BookKey, str] = field(default_factory=dict)
    """Why each unplaced book's replicas could not be placed, for its status."""
    unsettled: frozenset[BookKey] = frozenset()
    """Books with replicas beyond their targets: only for them did ``synced`` decide anything
    (which replicas to keep, and whether a surplus one may go yet)."""

    def for_node(self, node_id: str) -> list[ReplicaAssignment]:
        return sorted(a for a in self.assignments if a.node_id == node_id)

    def changed_nodes(self) -> set[str]:
        """Nodes whose assignment set must be rewritten (dead nodes included, to empty them)."""
        return {a.node_id for a in self.added | self.removed | self.resized}


class _Fleet:
    """Per-node counters while a plan is being built."""

    def __init__(
        self, nodes: Iterable[NodeInfo], kept: Iterable[ReplicaAssignment], keyed: Mapping[str, int]
    ) -> None:
        self.keyed = keyed
        self.carriers: dict[str, set[str]] = defaultdict(set)  # keyed exchange -> nodes carrying it
        self.nodes = {n.id: n for n in nodes}
        self.eligible = sorted(n.id for n in self.nodes.values() if not n.draining)
        self.eligible_set = frozenset(self.eligible)
        self.used: dict[str, int] = defaultdict(int)  # replicas the node will carry this round
        self.targets: dict[str, int] = defaultdict(int)  # replicas the node is meant to carry
        for replica in kept:
            self.used[replica.node_id] += 1
        self.start = {n: Fraction(self.used[n], max(node.capacity, 1)) for n, node in self.nodes.items()}

    def start_fill(self, node_id: str) -> Fraction:
        """How full the node was when the round started (phase 2 prefers replicas on emptier nodes)."""
        return self.start[node_id]

    def fill(self, node_id: str, extra: int = 0) -> Fraction:
        return Fraction(self.targets[node_id] + extra, max(self.nodes[node_id].capacity, 1))

    def has_room(self, node_id: str) -> bool:
        return self.used[node_id] < self.nodes[node_id].capacity

    def may_carry(self, exchange: str, node_id: str) -> bool:
        """Whether the node may take a replica of ``exchange``: it holds one of its keys, or one is left."""
        pool = self.keyed.get(exchange)
        carriers = self.carriers[exchange]
        return pool is None or node_id in carriers or len(carriers) < pool

    def carry(self, replica: ReplicaAssignment) -> None:
        if replica.exchange in self.keyed:
            self.carriers[replica.exchange].add(replica.node_id)

    def best_for_new(self, candidates: Iterable[str]) -> str | None:
        """The candidate with room that would be least filled after taking one more replica."""
        roomy = [n for n in candidates if self.has_room(n)]
        return min(roomy, key=lambda n: (self.fill(n, 1), self.nodes[n].load, n), default=None)


@dataclass
class _Book:
    """One book's replicas while a plan is being built (``existing`` already at ``depth``)."""

    ref: BookKey
    wanted: int
    depth: int
    existing: list[ReplicaAssignment]  # on live nodes, most worth keeping first
    next_index: int
    targets: list[ReplicaAssignment] = field(default_factory=list)

    def holds(self, node_id: str) -> bool:
        return any(r.node_id == node_id for r in (*self.existing, *self.targets))

    def holds_target(self, node_id: str) -> bool:
        return any(t.node_id == node_id for t in self.targets)

    def missing(self) -> int:
        return self.wanted - len(self.targets)

    def surplus(self) -> list[ReplicaAssignment]:
        return [r for r in self.existing if r not in self.targets]


def plan_assignments(
    desired: Mapping[BookKey, BookWish],
    nodes: Sequence[NodeInfo],
    current: Sequence[ReplicaAssignment],
    synced: Set[ReplicaId],
    *,
    max_moves: int = DEFAULT_MAX_MOVES,
    keyed: Mapping[str, int] | None = None,
) -> Plan:
    """Where every wanted replica should live next; see the module docstring for the rules.

    ``keyed``: exchanges whose connections each need a key of their own, and their pool sizes."""
    live = {n.id for n in nodes}
    by_book: dict[BookKey, list[ReplicaAssignment]] = defaultdict(list)
    for replica in current:
        by_book[replica.book].append(replica)
    kept = [  # phase 1
        r
        for ref, replicas in by_book.items()
        if ref in desired and desired[ref].replicas > 0
        for r in replicas
        if r.node_id in live
    ]
    keyed = keyed or {}
    fleet = _Fleet(nodes, kept, keyed)
    books = _books(desired, by_book, live, fleet, synced)

    for book in books:
        _keep_existing(book, fleet, lambda r: r.node_id in fleet.eligible_set, distinct=True)  # phase 2
    for book in books:
        _create(book, fleet, free_nodes_only=True)  # phase 3
    for book in books:
        _keep_existing(book, fleet, lambda r: r.node_id in fleet.eligible_set, distinct=False)  # phase 4
        _create(book, fleet, free_nodes_only=False)
    for book in books:
        _keep_existing(book, fleet, lambda r: r.node_id in live, distinct=False)  # phase 5

    in_flight = sum(len(_still_needed(b, synced)) for b in books)
    _rebalance(books, fleet, max_moves - in_flight)  # phase 6

    assignments = {r for book in books for r in (*book.targets, *_still_needed(book, synced))}  # phase 7
    before = set(current)
    places_before, places_after = {_place(r) for r in before}, {_place(r) for r in assignments}
    return Plan(
        assignments=frozenset(assignments),
        added=frozenset(r for r in assignments - before if _place(r) not in places_before),
        removed=frozenset(r for r in before - assignments if _place(r) not in places_after),
        unplaced={b.ref: b.missing() for b in books if b.missing() > 0},
        resized=frozenset(r for r in assignments - before if _place(r) in places_before),
        reasons={b.ref: _why_unplaced(b, fleet) for b in books if b.missing() > 0},
        unsettled=frozenset(b.ref for b in books if b.surplus()),
    )


def _why_unplaced(book: _Book, fleet: _Fleet) -> str:
    missing, exchange = book.missing(), book.ref.exchange
    pool = fleet.keyed.get(exchange)
    if pool is not None and len(fleet.carriers[exchange]) >= pool:
        return (
            f"{missing} replica(s) unplaced: {exchange} allows one connection per venue key and its "
            f"pool of {pool} key(s) is in use on {len(fleet.carriers[exchange])} node(s); add keys"
        )
    return f"{missing} replica(s) unplaced: no live node with room"


def _place(replica: ReplicaAssignment) -> tuple[str, str, int, str]:
    """Where a replica is, whatever its depth: book, index, node."""
    return replica.exchange, replica.market, replica.replica, replica.node_id


def _books(
    desired: Mapping[BookKey, BookWish],
    by_book: Mapping[BookKey, list[ReplicaAssignment]],
    live: Set[str],
    fleet: _Fleet,
    synced: Set[ReplicaId],
) -> list[_Book]:
    books = []
    for ref, (wanted, depth) in sorted(desired.items()):
        if wanted <= 0:
            continue
        replicas = by_book.get(ref, [])
        existing = sorted(
            (r if r.depth == depth else replace(r, depth=depth) for r in replicas if r.node_id in live),
            key=lambda r: (fleet.start_fill(r.node_id), (ref, r.replica) not in synced, -r.replica),
        )
        next_index = max((r.replica for r in replicas), default=0) + 1
        books.append(_Book(ref, wanted, depth, existing, next_index))
    return books


def _keep_existing(
    book: _Book, fleet: _Fleet, allowed: Callable[[ReplicaAssignment], bool], *, distinct: bool
) -> None:
    for replica in book.existing:
        if book.missing() <= 0:
            return
        if replica in book.targets or not allowed(replica):
            continue
        if (distinct or book.ref.exchange in fleet.keyed) and book.holds_target(replica.node_id):
            continue
        if not fleet.may_carry(book.ref.exchange, replica.node_id):
            continue
        book.targets.append(replica)
        fleet.targets[replica.node_id] += 1
        fleet.carry(replica)


def _create(book: _Book, fleet: _Fleet, *, free_nodes_only: bool) -> None:
    exchange = book.ref.exchange
    alone = free_nodes_only or exchange in fleet.keyed  # a keyed book twice on a node takes two keys
    while book.missing() > 0:
        candidates = [
            n for n in fleet.eligible if not (alone and book.holds(n)) and fleet.may_carry(exchange, n)
        ]
        node_id = fleet.best_for_new(candidates)
        if node_id is None:
            return
        _add(book, fleet, node_id)


def _add(book: _Book, fleet: _Fleet, node_id: str) -> None:
    replica = ReplicaAssignment(book.ref.exchange, book.ref.market, book.next_index, node_id, book.depth)
    book.targets.append(replica)
    fleet.carry(replica)
    book.next_index += 1
    fleet.targets[node_id] += 1
    fleet.used[node_id] += 1


def _rebalance(books: Sequence[_Book], fleet: _Fleet, budget: int) -> None:
    for _ in range(max(budget, 0)):
        if not _move_one(books, fleet):
            return


def _move_one(books: Sequence[_Book], fleet: _Fleet) -> bool:
    """Move one existing target replica from a fuller node to an emptier one, if that helps."""
    sources = sorted(fleet.eligible, key=lambda n: (-fleet.fill(n), n))
    destinations = sorted(fleet.eligible, key=lambda n: (fleet.fill(n, 1), fleet.nodes[n].load, n))
    for source in sources:
        movable: list[tuple[_Book, ReplicaAssignment]] | None = None
        for destination in destinations:
            if fleet.fill(destination, 1) >= fleet.fill(source):
                break  # destinations are sorted: no later one helps either
            if destination == source or not fleet.has_room(destination):
                continue
            if movable is None:
                movable = [
                    (b, r) for b in books for r in b.targets if r.node_id == source and r in b.existing
                ]
            for book, old in movable:
                if not book.holds(destination) and fleet.may_carry(book.ref.exchange, destination):
                    book.targets.remove(old)
                    fleet.targets[source] -= 1
                    _add(book, fleet, destination)
                    return True
    return False


def _still_needed(book: _Book, synced: Set[ReplicaId]) -> list[ReplicaAssignment]:
    """The surplus replicas that must stay until the book's targets are synced (phase 7)."""
    synced_targets = sum(1 for r in book.targets if (book.ref, r.replica) in synced)
    synced_surplus = [r for r in book.surplus() if (book.ref, r.replica) in synced]
    return synced_surplus[: max(0, book.wanted - synced_targets)]
