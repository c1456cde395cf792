"""One contract, two stores: every test runs against Redis (Valkey) and DynamoDB (moto server)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from book_store.schema import BookKey
from control_plane.depth import DEFAULT_DEPTH
from control_plane.errors import (
    ConflictError,
    InvalidRequestError,
    LimitExceededError,
    NotFoundError,
    UnauthorizedError,
)
from control_plane.models import ApiKey, AuditEvent, BookWish, ReplicaAssignment, Subscription
from control_plane.stores.base import ControlStore, Generations
from control_plane.stores.dynamodb import DynamoControlStore
from ladder_process.clock import now_ms
from tests.control_plane.helpers import make_key, make_node, make_tenant

BTC = BookKey("binance.com", "BTCUSDT")
ETH = BookKey("binance.com", "ETHUSDT")
ALPACA_BTC = BookKey("alpaca-crypto", "BTC/USD")


def sub(
    tenant_id: str, book: BookKey, replicas: int = 1, created_at: int = 1_000, depth: int = DEFAULT_DEPTH
) -> Subscription:
    return Subscription(tenant_id, book.exchange, book.market, replicas, created_at, depth)


# -- tenants -------------------------------------------------------------------------------


async def test_tenant_round_trip_and_listing_order(store: ControlStore) -> None:
    older = make_tenant("Acme", created_at=1_000, rate_limit_rps=2.5)
    newer = make_tenant("Globex", created_at=2_000, disabled=True)
    await store.create_tenant(newer)
    await store.create_tenant(older)

    assert await store.get_tenant(older.id) == older
    assert await store.get_tenant("tnt_missing") is None
    assert await store.list_tenants() == [older, newer]


async def test_tenant_names_are_unique_regardless_of_case(store: ControlStore) -> None:
    await store.create_tenant(make_tenant("Acme"))
    with pytest.raises(ConflictError):
        await store.create_tenant(make_tenant("ACME"))
    assert len(await store.list_tenants()) == 1


async def test_update_tenant_overwrites_fields_and_moves_the_name(store: ControlStore) -> None:
    acme = make_tenant("Acme")
    globex = make_tenant("Globex")
    await store.create_tenant(acme)
    await store.create_tenant(globex)

    renamed = dataclasses.replace(acme, name="Acme Corp", max_markets=50, disabled=True)
    assert await store.update_tenant(renamed)
    assert await store.get_tenant(acme.id) == renamed

    # The old name is free again; the other tenant's name is not.
    await store.create_tenant(make_tenant("acme"))
    with pytest.raises(ConflictError):
        await store.update_tenant(dataclasses.replace(renamed, name="GLOBEX"))
    assert await store.get_tenant(acme.id) == renamed
    assert not await store.update_tenant(make_tenant("Nobody"))


async def test_tenant_max_depth_is_kept_and_updated(store: ControlStore) -> None:
    deep = make_tenant("Deep", max_depth=5000)
    await store.create_tenant(deep)
    assert await store.get_tenant(deep.id) == deep

    shallow = dataclasses.replace(deep, max_depth=20)
    assert await store.update_tenant(shallow)
    assert await store.get_tenant(deep.id) == shallow
    assert await store.list_tenants() == [shallow]


# -- API keys ------------------------------------------------------------------------------


async def mint(
    store: ControlStore,
    tenant_id: str,
    *,
    limit: int,
    created_at: int,
    expires_at: int | None = None,
    parent_id: str | None = None,
) -> ApiKey:
    """Create a new key under a usable-key limit; the stored record."""
    key, _ = make_key(tenant_id, created_at=created_at, expires_at=expires_at, parent_id=parent_id)
    return await store.create_key(key, max_usable=limit)


async def test_key_lookup_by_id_hash_and_tenant(store: ControlStore) -> None:
    tenant = make_tenant()
    await store.create_tenant(tenant)
    first, _ = make_key(tenant.id, created_at=1_000, expires_at=9_000)
    second, _ = make_key(tenant.id, created_at=2_000)
    other, _ = make_key("tnt_other")
    for key in (second, first, other):
        await store.create_key(key, max_usable=50)

    assert await store.get_key(first.id) == first
    assert await store.get_key_by_hash(second.key_hash) == second
    assert await store.get_key_by_hash("0" * 64) is None
    assert await store.list_keys(tenant.id) == [first, second]


async def test_revocation_only_moves_earlier(store: ControlStore) -> None:
    key, _ = make_key("tnt_a")
    await store.create_key(key, max_usable=50)

    revoked = await store.revoke_key(key.id, at=5_000)
    assert revoked is not None and revoked.revoked_at == 5_000
    later = await store.revoke_key(key.id, at=9_000)
    assert later is not None and later.revoked_at == 5_000
    earlier = await store.revoke_key(key.id, at=3_000)
    assert earlier is not None and earlier.revoked_at == 3_000
    assert await store.revoke_key("key_missing", at=1) is None


async def test_the_usable_key_limit_counts_only_usable_keys(store: ControlStore) -> None:
    expiring, _ = make_key("tnt_a", created_at=1_000, expires_at=2_000)
    revoked, _ = make_key("tnt_a", created_at=1_000)
    lasting, _ = make_key("tnt_a", created_at=1_000)
    for key in (expiring, revoked, lasting):
        await store.create_key(key, max_usable=3)
    with pytest.raises(LimitExceededError):
        await mint(store, "tnt_a", created_at=1_500, limit=3)
    await store.revoke_key(revoked.id, at=1_800)

    # At 1_900 the revoked key is gone and the expiring one not yet: one slot.
    await mint(store, "tnt_a", created_at=1_900, limit=3)
    with pytest.raises(LimitExceededError):
        await mint(store, "tnt_a", created_at=1_950, limit=3)
    # At 2_000 the expiring key stopped working: one slot again, for this tenant only.
    await mint(store, "tnt_a", created_at=2_000, limit=3)
    await mint(store, "tnt_b", created_at=2_000, limit=1)
    assert len(await store.list_keys("tnt_a")) == 5


async def test_parallel_creates_never_pass_the_usable_key_limit(store: ControlStore) -> None:
    """Check-then-create would let every request of a burst see room; the store counts atomically."""

    async def create() -> bool:
        try:
            await mint(store, "tnt_a", created_at=1_000, limit=5)
        except (LimitExceededError, ConflictError):
            return False
        return True

    created = await asyncio.gather(*(create() for _ in range(20)))
    assert 1 <= sum(created) <= 5
    assert len(await store.list_keys("tnt_a")) == sum(created)


async def test_a_minted_key_never_outlives_its_parent(store: ControlStore) -> None:
    parent, _ = make_key("tnt_a", created_at=1_000, expires_at=61_000)
    await store.create_key(parent, max_usable=50)

    forever = await mint(store, "tnt_a", created_at=2_000, parent_id=parent.id, limit=50)
    assert (forever.expires_at, forever.parent_id) == (61_000, parent.id)
    assert await store.get_key(forever.id) == forever
    short = await store.create_key(
        make_key("tnt_a", created_at=2_000, expires_at=5_000, parent_id=parent.id)[0], max_usable=50
    )
    assert short.expires_at == 5_000

    # A parent in its grace period mints keys that end with the grace period.
    await store.revoke_key(parent.id, at=30_000)
    graced = await mint(store, "tnt_a", created_at=3_000, parent_id=parent.id, limit=50)
    assert graced.expires_at == 30_000
    # A parent that no longer works mints nothing; nor does an unknown one.
    for parent_id in (parent.id, "key_missing"):
        with pytest.raises(UnauthorizedError):
            await mint(store, "tnt_a", created_at=30_000, parent_id=parent_id, limit=50)


async def test_revoking_a_key_revokes_every_key_minted_from_it(store: ControlStore) -> None:
    root, _ = make_key("tnt_a", created_at=1_000)
    await store.create_key(root, max_usable=3)
    child = await mint(store, "tnt_a", created_at=1_001, parent_id=root.id, limit=3)
    grandchild = await mint(store, "tnt_a", created_at=1_002, parent_id=child.id, limit=3)
    assert grandchild.expires_at is None
    with pytest.raises(LimitExceededError):
        await mint(store, "tnt_a", created_at=1_000, limit=3)

    revoked = await store.revoke_key(root.id, at=5_000)
    assert revoked is not None and revoked.revoked_at == 5_000
    for key in (child, grandchild):
        stored = await store.get_key(key.id)
        assert stored is not None and stored.revoked_at == 5_000
    # Revoking the child earlier moves only its own subtree; a later time moves nothing.
    await store.revoke_key(child.id, at=4_000)
    await store.revoke_key(root.id, at=9_000)
    assert [(k.id, k.revoked_at) for k in await store.list_keys("tnt_a")] == [
        (root.id, 5_000),
        (child.id, 4_000),
        (grandchild.id, 4_000),
    ]
    # Once they stopped working, they no longer count against the limit.
    for _ in range(3):
        await mint(store, "tnt_a", created_at=5_000, limit=3)


async def test_the_successor_that_revokes_its_parent_is_spared_and_detached(store: ControlStore) -> None:
    root, _ = make_key("tnt_a", created_at=1_000)
    await store.create_key(root, max_usable=50)
    successor = await mint(store, "tnt_a", created_at=1_001, parent_id=root.id, limit=50)
    its_child = await mint(store, "tnt_a", created_at=1_002, parent_id=successor.id, limit=50)
    sibling = await mint(store, "tnt_a", created_at=1_003, parent_id=root.id, limit=50)

    await store.revoke_key(root.id, at=60_000, spare=successor.id)
    revoked = {k.id: k.revoked_at for k in await store.list_keys("tnt_a")}
    assert revoked == {root.id: 60_000, successor.id: None, its_child.id: None, sibling.id: 60_000}
    await store.revoke_key(root.id, at=5_000)  # detached: a later, earlier revocation passes it by
    revoked = {k.id: k.revoked_at for k in await store.list_keys("tnt_a")}
    assert revoked == {root.id: 5_000, successor.id: None, its_child.id: None, sibling.id: 5_000}


async def test_touch_only_moves_last_used_later(store: ControlStore) -> None:
    key, _ = make_key("tnt_a")
    await store.create_key(key, max_usable=50)

    await store.touch_keys({key.id: 7_000, "key_missing": 1})
    await store.touch_keys({key.id: 6_000})
    stored = await store.get_key(key.id)
    assert stored is not None and stored.last_used_at == 7_000
    assert await store.get_key("key_missing") is None


# -- subscriptions -------------------------------------------------------------------------


async def test_put_subscription_creates_then_updates_keeping_created_at(store: ControlStore) -> None:
    tenant = make_tenant()
    await store.create_tenant(tenant)

    stored, created = await store.put_subscription(sub(tenant.id, BTC, replicas=1, created_at=1_000))
    assert created and stored == sub(tenant.id, BTC, 1, 1_000)
    stored, created = await store.put_subscription(sub(tenant.id, BTC, replicas=2, created_at=5_000))
    assert not created and stored == sub(tenant.id, BTC, 2, 1_000)
    assert await store.list_subscriptions(tenant.id) == [sub(tenant.id, BTC, 2, 1_000)]


async def test_put_subscription_keeps_and_updates_the_depth(store: ControlStore) -> None:
    tenant = make_tenant()
    await store.create_tenant(tenant)

    stored, created = await store.put_subscription(sub(tenant.id, BTC, replicas=2, depth=500))
    assert created and stored.depth == 500
    stored, created = await store.put_subscription(sub(tenant.id, BTC, replicas=1, created_at=9, depth=20))
    assert not created and stored == sub(tenant.id, BTC, 1, 1_000, depth=20)
    await store.put_subscription(sub(tenant.id, ETH))
    assert await store.list_subscriptions(tenant.id) == [
        sub(tenant.id, BTC, 1, 1_000, depth=20),
        sub(tenant.id, ETH, 1, 1_000, depth=DEFAULT_DEPTH),
    ]


async def test_max_markets_counts_markets_not_updates(store: ControlStore) -> None:
    tenant = make_tenant(max_markets=2)
    await store.create_tenant(tenant)
    await store.put_subscription(sub(tenant.id, BTC))
    await store.put_subscription(sub(tenant.id, ALPACA_BTC))

    with pytest.raises(LimitExceededError):
        await store.put_subscription(sub(tenant.id, ETH))
    _, created = await store.put_subscription(sub(tenant.id, BTC, replicas=3))
    assert not created

    assert await store.delete_subscription(tenant.id, BTC)
    assert not await store.delete_subscription(tenant.id, BTC)
    _, created = await store.put_subscription(sub(tenant.id, ETH))
    assert created
    assert [s.book for s in await store.list_subscriptions(tenant.id)] == [ALPACA_BTC, ETH]
    assert await store.subscribed_books(tenant.id) == {ALPACA_BTC, ETH}


async def test_subscribing_needs_an_existing_tenant(store: ControlStore) -> None:
    with pytest.raises(NotFoundError):
        await store.put_subscription(sub("tnt_missing", BTC))


async def test_concurrent_subscribes_never_exceed_max_markets(store: ControlStore) -> None:
    tenant = make_tenant(max_markets=5)
    await store.create_tenant(tenant)
    books = [BookKey("binance.com", f"COIN{i}USDT") for i in range(20)]

    outcomes = await asyncio.gather(
        *(store.put_subscription(sub(tenant.id, book)) for book in books), return_exceptions=True
    )

    accepted = [o for o in outcomes if isinstance(o, tuple)]
    refused = [o for o in outcomes if isinstance(o, LimitExceededError)]
    assert (len(accepted), len(refused)) == (5, 15)
    assert len(await store.list_subscriptions(tenant.id)) == 5


async def test_concurrent_creates_of_one_market_count_once(store: ControlStore) -> None:
    tenant = make_tenant(max_markets=2)
    await store.create_tenant(tenant)

    outcomes = await asyncio.gather(
        *(store.put_subscription(sub(tenant.id, BTC, replicas=r)) for r in (1, 2, 3))
    )

    assert sorted(created for _, created in outcomes) == [False, False, True]
    # Only one market was counted, so a second market still fits.
    _, created = await store.put_subscription(sub(tenant.id, ETH))
    assert created


async def test_put_subscriptions_creates_and_updates_in_order(store: ControlStore) -> None:
    tenant = make_tenant(max_markets=3)
    await store.create_tenant(tenant)
    await store.put_subscription(sub(tenant.id, BTC, replicas=1, created_at=1_000))

    outcomes = await store.put_subscriptions(
        [
            sub(tenant.id, ETH, 2, 7_000, depth=500),
            sub(tenant.id, BTC, 2, 7_000),
            sub(tenant.id, ALPACA_BTC, 1, 7_000),
        ]
    )

    assert outcomes == [
        (sub(tenant.id, ETH, 2, 7_000, depth=500), True),
        (sub(tenant.id, BTC, 2, 1_000), False),  # an update keeps created_at
        (sub(tenant.id, ALPACA_BTC, 1, 7_000), True),
    ]
    assert await store.list_subscriptions(tenant.id) == [
        sub(tenant.id, ALPACA_BTC, 1, 7_000),
        sub(tenant.id, BTC, 2, 1_000),
        sub(tenant.id, ETH, 2, 7_000, depth=500),
    ]
    assert await store.put_subscriptions([]) == []
    assert (await store.desired_books())[ETH] == BookWish(2, 500)


async def test_put_subscriptions_checks_max_markets_once_for_all_it_adds(store: ControlStore) -> None:
    tenant = make_tenant(max_markets=3)
    await store.create_tenant(tenant)
    await store.put_subscription(sub(tenant.id, BTC))
    books = [BookKey("binance.com", f"COIN{i}USDT") for i in range(3)]

    with pytest.raises(LimitExceededError, match=r"add 3 markets .* room for 2"):
        await store.put_subscriptions([sub(tenant.id, BTC, replicas=2), *(sub(tenant.id, b) for b in books)])
    # Nothing changed, not even the update that came first.
    assert await store.list_subscriptions(tenant.id) == [sub(tenant.id, BTC)]

    # Updates need no room; two new markets fit exactly.
    outcomes = await store.put_subscriptions(
        [sub(tenant.id, BTC, replicas=2), *(sub(tenant.id, b) for b in books[:2])]
    )
    assert [created for _, created in outcomes] == [False, True, True]
    with pytest.raises(LimitExceededError):
        await store.put_subscription(sub(tenant.id, books[2]))
    assert len(await store.list_subscriptions(tenant.id)) == 3


async def test_put_subscriptions_needs_an_existing_tenant(store: ControlStore) -> None:
    with pytest.raises(NotFoundError):
        await store.put_subscriptions([sub("tnt_missing", BTC), sub("tnt_missing", ETH)])


async def test_concurrent_bulk_and_single_subscribes_never_exceed_max_markets(store: ControlStore) -> None:
    tenant = make_tenant(max_markets=10)
    await store.create_tenant(tenant)
    books = [BookKey("binance.com", f"COIN{i}USDT") for i in range(24)]
    batches = [books[i : i + 4] for i in range(0, 16, 4)]

    outcomes = await asyncio.gather(
        *(store.put_subscriptions([sub(tenant.id, b) for b in batch]) for batch in batches),
        *(store.put_subscription(sub(tenant.id, b)) for b in books[16:]),
        return_exceptions=True,
    )

    assert all(isinstance(o, list | tuple | LimitExceededError | ConflictError) for o in outcomes), outcomes
    subscribed = await store.list_subscriptions(tenant.id)
    assert 8 <= len(subscribed) <= 10 or any(isinstance(o, ConflictError) for o in outcomes)
    # A bulk call is all or nothing: each of its batches is in entirely or not at all.
    names = {s.book for s in subscribed}
    assert all(set(batch) <= names or not set(batch) & names for batch in batches)
    # What the store counted is what it holds: exactly the room that is left fits.
    room = 10 - len(subscribed)
    spare = [BookKey("binance.com", f"SPARE{i}USDT") for i in range(room + 1)]
    with pytest.raises(LimitExceededError):
        await store.put_subscriptions([sub(tenant.id, b) for b in spare])
    await store.put_subscriptions([sub(tenant.id, b) for b in spare[:room]])


async def test_delete_subscriptions_answers_per_book(store: ControlStore) -> None:
    tenant = make_tenant(max_markets=3)
    await store.create_tenant(tenant)
    await store.put_subscriptions([sub(tenant.id, BTC), sub(tenant.id, ETH)])

    assert await store.delete_subscriptions(tenant.id, [ETH, ALPACA_BTC, BTC]) == [True, False, True]
    assert await store.list_subscriptions(tenant.id) == []
    assert await store.book_subscriber_count(BTC) == 0
    assert BTC not in await store.desired_books()
    assert await store.delete_subscriptions(tenant.id, []) == []
    # The freed markets count again.
    await store.put_subscriptions([sub(tenant.id, b) for b in (BTC, ETH, ALPACA_BTC)])


async def test_desired_replicas_takes_the_largest_capped_wish(store: ControlStore) -> None:
    small = make_tenant(max_replicas=1)
    big = make_tenant(max_replicas=3)
    disabled = make_tenant(max_replicas=5, disabled=True)
    for tenant in (small, big, disabled):
        await store.create_tenant(tenant)
    await store.put_subscription(sub(small.id, BTC, replicas=4))  # capped to 1
    await store.put_subscription(sub(big.id, BTC, replicas=2))
    await store.put_subscription(sub(big.id, ETH, replicas=9))  # capped to 3
    await store.put_subscription(sub(small.id, ALPACA_BTC, replicas=1))
    await store.put_subscription(sub(disabled.id, ALPACA_BTC, replicas=5))  # disabled: ignored
    await store.put_subscription(sub(disabled.id, BookKey("binance.com", "DOGEUSDT"), replicas=5))

    assert {b: w.replicas for b, w in (await store.desired_books()).items()} == {
        BTC: 2,
        ETH: 3,
        ALPACA_BTC: 1,
    }
    assert await store.book_subscriber_count(BTC) == 2
    assert await store.book_subscriber_count(ALPACA_BTC) == 2

    await store.delete_subscription(big.id, BTC)
    await store.delete_subscription(small.id, BTC)
    assert BTC not in await store.desired_books()
    assert await store.book_subscriber_count(BTC) == 0


async def test_desired_depth_follows_the_deepest_subscriber_up_and_back_down(store: ControlStore) -> None:
    alice = make_tenant(max_depth=1000)
    bob = make_tenant(max_depth=5000)
    off = make_tenant(max_depth=5000, disabled=True)
    for tenant in (alice, bob, off):
        await store.create_tenant(tenant)
    await store.put_subscription(sub(alice.id, BTC, depth=500))
    await store.put_subscription(sub(bob.id, BTC, depth=50))
    assert (await store.desired_books())[BTC] == BookWish(1, 500)

    await store.put_subscription(sub(bob.id, BTC, depth=4000))  # up with the deepest subscriber
    await store.put_subscription(sub(off.id, BTC, replicas=3, depth=5000))  # disabled: no say
    await store.put_subscription(sub(off.id, ETH, depth=5000))
    await store.put_subscription(sub(alice.id, ALPACA_BTC, depth=3000))  # capped to max_depth
    assert await store.desired_books() == {BTC: BookWish(1, 4000), ALPACA_BTC: BookWish(1, 1000)}

    await store.delete_subscription(bob.id, BTC)  # back down when the deepest subscriber leaves
    assert (await store.desired_books())[BTC] == BookWish(1, 500)
    await store.update_tenant(dataclasses.replace(alice, max_depth=200))  # a lower limit caps at once
    assert await store.desired_books() == {BTC: BookWish(1, 200), ALPACA_BTC: BookWish(1, 200)}
    await store.update_tenant(dataclasses.replace(off, disabled=False))  # enabled again: counts again
    assert await store.desired_books() == {
        BTC: BookWish(3, 5000),
        ETH: BookWish(1, 5000),
        ALPACA_BTC: BookWish(1, 200),
    }


async def test_replicas_and_depth_are_each_the_largest_wish(store: ControlStore) -> None:
    many_shallow = make_tenant(max_replicas=3)
    one_deep = make_tenant(max_replicas=3, max_depth=5000)
    for tenant in (many_shallow, one_deep):
        await store.create_tenant(tenant)
    await store.put_subscription(sub(many_shallow.id, BTC, replicas=3, depth=10))
    await store.put_subscription(sub(one_deep.id, BTC, replicas=1, depth=5000))
    assert await store.desired_books() == {BTC: BookWish(3, 5000)}


# -- nodes and assignments -----------------------------------------------------------------


async def test_node_registry(store: ControlStore) -> None:
    await store.register_node(make_node("node-b"))
    await store.register_node(make_node("node-a", capacity=7))

    assert await store.heartbeat_node("node-a", at=2_000_000_000_000, load=12.5)
    assert await store.set_draining("node-b", True)
    assert not await store.heartbeat_node("node-x", at=1, load=0.0)
    assert not await store.set_draining("node-x", True)

    nodes = await store.list_nodes()
    assert [n.id for n in nodes] == ["node-a", "node-b"]
    assert (nodes[0].heartbeat_at, nodes[0].load, nodes[0].capacity) == (2_000_000_000_000, 12.5, 7)
    assert nodes[1].draining

    # A node that registers again starts from its new record.
    await store.register_node(make_node("node-b"))
    assert not (await store.list_nodes())[1].draining


async def test_assignment_sets_are_replaced_whole(store: ControlStore) -> None:
    first = [
        ReplicaAssignment("binance.com", "BTCUSDT", 1, "node-a"),
        ReplicaAssignment("alpaca-crypto", "BTC/USD", 3, "node-a"),
    ]
    await store.register_node(make_node("node-a"))
    await store.register_node(make_node("node-b"))
    await store.replace_assignments("node-a", first)
    await store.replace_assignments("node-b", [ReplicaAssignment("binance.com", "BTCUSDT", 2, "node-b")])
    assert await store.get_assignments("node-a") == sorted(first)

    second = [ReplicaAssignment("binance.com", "ETHUSDT", 7, "node-a")]
    await store.replace_assignments("node-a", second)
    assert await store.get_assignments("node-a") == second
    assert await store.list_assignments() == sorted(
        [*second, ReplicaAssignment("binance.com", "BTCUSDT", 2, "node-b")]
    )

    await store.replace_assignments("node-a", [])
    assert await store.get_assignments("node-a") == []
    await store.remove_node("node-b")
    assert await store.list_assignments() == []
    assert [n.id for n in await store.list_nodes()] == ["node-a"]


async def test_assignments_carry_their_depth(store: ControlStore) -> None:
    deep = ReplicaAssignment("binance.com", "BTCUSDT", 1, "node-a", 5000)
    shallow = ReplicaAssignment("binance.com-futures", "BTCUSDT", 2, "node-a", 20)
    await store.register_node(make_node("node-a"))
    await store.replace_assignments("node-a", [deep, shallow])
    assert await store.get_assignments("node-a") == sorted([deep, shallow])
    assert await store.list_assignments() == sorted([deep, shallow])

    # The same replica at another depth replaces the old entry; it is not a second replica.
    resized = dataclasses.replace(deep, depth=DEFAULT_DEPTH)
    await store.replace_assignments("node-a", [resized, shallow])
    assert await store.get_assignments("node-a") == sorted([resized, shallow])


# -- generations ---------------------------------------------------------------------------


@pytest.fixture(params=["redis", "redis_cluster"])
def tracked_store(request: pytest.FixtureRequest) -> ControlStore:
    """The stores that keep generations."""
    fixture: ControlStore = request.getfixturevalue(f"{request.param}_store")
    return fixture


async def test_each_write_the_control_loop_reads_moves_its_generation_and_no_other(
    tracked_store: ControlStore,
) -> None:
    store = tracked_store
    seen = [await store.generations()]
    assert seen[0].desired is not None and seen[0].assignments is not None
    assert await store.generations() == seen[0]  # a store that had none keeps the names it gave

    async def moved() -> tuple[bool, bool]:
        """Which generations moved since the last call; neither may come back to an earlier one."""
        now = await store.generations()
        desired, assignments = now.desired != seen[-1].desired, now.assignments != seen[-1].assignments
        assert not desired or now.desired not in {g.desired for g in seen}
        assert not assignments or now.assignments not in {g.assignments for g in seen}
        seen.append(now)
        return desired, assignments

    tenant = make_tenant(max_markets=2)
    await store.create_tenant(tenant)  # no subscriptions yet: no book's wish changes
    assert await moved() == (False, False)
    await store.put_subscription(sub(tenant.id, BTC))
    assert await moved() == (True, False)
    await store.put_subscription(sub(tenant.id, BTC, replicas=2))  # an update
    assert await moved() == (True, False)
    with pytest.raises(LimitExceededError):
        await store.put_subscriptions([sub(tenant.id, ETH), sub(tenant.id, ALPACA_BTC)])
    assert await moved() == (False, False)  # refused: nothing changed
    await store.put_subscriptions([sub(tenant.id, ETH)])
    assert await moved() == (True, False)
    assert await store.delete_subscriptions(tenant.id, [ETH, ALPACA_BTC]) == [True, False]
    assert await moved() == (True, False)
    assert await store.delete_subscriptions(tenant.id, [ETH, ALPACA_BTC]) == [False, False]
    assert await moved() == (False, False)
    assert await store.update_tenant(dataclasses.replace(tenant, max_replicas=1))
    assert await moved() == (True, False)
    assert not await store.update_tenant(make_tenant())  # unknown
    assert await moved() == (False, False)

    await store.register_node(make_node("node-a"))  # nodes are read every round anyway
    assert await store.heartbeat_node("node-a", at=2_000_000_000_000, load=1.0)
    assert await store.set_draining("node-a", True)
    key, _ = make_key(tenant.id)
    await store.create_key(key, max_usable=5)
    await store.append_audit(AuditEvent(1_000, "operator", "tenant.create", tenant.id))
    assert await store.try_lease("scheduler", "a", now_ms(), ttl_ms=200)
    assert await moved() == (False, False)
    replica = ReplicaAssignment("binance.com", "BTCUSDT", 1, "node-a")
    await store.replace_assignments("node-a", [replica])
    assert await moved() == (False, True)
    await store.replace_assignments("node-a", [dataclasses.replace(replica, depth=500)])
    assert await moved() == (False, True)
    await store.replace_assignments("node-a", [])
    assert await moved() == (False, True)
    await store.replace_assignments("node-a", [replica])
    assert await moved() == (False, True)
    await store.remove_node("node-a")
    assert await moved() == (False, True)
    assert await store.list_assignments() == []


async def test_dynamodb_cannot_tell_generations(dynamodb_store: DynamoControlStore) -> None:
    """Its reads come from an eventually consistent index (the store's docstring says why)."""
    assert await dynamodb_store.generations() == Generations(None, None)


# -- audit and lease -----------------------------------------------------------------------


async def test_audit_is_newest_first_and_limited(store: ControlStore) -> None:
    for i in range(5):
        await store.append_audit(AuditEvent(1_000 + i, "operator", "tenant.create", f"tnt_{i}", {"n": i}))

    events = await store.list_audit(limit=3)
    assert [e.target for e in events] == ["tnt_4", "tnt_3", "tnt_2"]
    assert events[0].detail == {"n": 4}
    assert await store.list_audit(limit=0) == []


async def test_audit_pages_by_cursor_over_every_scope_or_one(store: ControlStore) -> None:
    scopes = ["operator", "tnt_a", "tnt_b", "tnt_a", "operator", "tnt_a", "tnt_b"]
    for i, scope in enumerate(scopes):
        await store.append_audit(AuditEvent(1_000 + i, "someone", "x.do", f"t{i}", scope=scope))
    first = await store.list_audit(limit=3)
    assert [e.target for e in first] == ["t6", "t5", "t4"] and all(e.id for e in first)
    second = await store.list_audit(limit=3, before=first[-1].id)
    assert [(e.target, e.scope) for e in second] == [("t3", "tnt_a"), ("t2", "tnt_b"), ("t1", "tnt_a")]
    assert [e.target for e in await store.list_audit(limit=3, before=second[-1].id)] == ["t0"]
    tenant_a = await store.list_audit(limit=2, scope="tnt_a")
    assert [e.target for e in tenant_a] == ["t5", "t3"]
    assert [e.target for e in await store.list_audit(limit=2, scope="tnt_a", before=tenant_a[-1].id)] == [
        "t1"
    ]
    assert await store.list_audit(limit=5, scope="tnt_none") == []
    for cursor in ("nope", "ldr_pasted_key"):
        with pytest.raises(InvalidRequestError) as refused:
            await store.list_audit(limit=1, before=cursor)
        assert cursor not in str(refused.value)


async def test_lease_is_exclusive_until_released_or_expired(store: ControlStore) -> None:
    now = now_ms()
    assert not await store.lease_held("scheduler", now)
    assert await store.try_lease("scheduler", "a", now, ttl_ms=200)
    assert await store.lease_held("scheduler", now)
    assert not await store.try_lease("scheduler", "b", now, ttl_ms=200)
    assert await store.try_lease("scheduler", "a", now, ttl_ms=200)  # the holder extends

    await store.release_lease("scheduler", "b")  # not the holder: no effect
    assert not await store.try_lease("scheduler", "b", now, ttl_ms=200)
    await store.release_lease("scheduler", "a")
    assert not await store.lease_held("scheduler", now)
    assert await store.try_lease("scheduler", "b", now, ttl_ms=100)

    await asyncio.sleep(0.25)
    assert not await store.lease_held("scheduler", now_ms())
    assert await store.try_lease("scheduler", "a", now_ms(), ttl_ms=100)


async def test_subscribed_books_are_every_book_of_a_large_tenant(store: ControlStore) -> None:
    tenant = make_tenant(max_markets=2000)
    await store.create_tenant(tenant)
    books = [BookKey("binance.com", f"COIN{i}USDT") for i in range(1200)]  # pages of the store's scan
    await store.put_subscriptions([sub(tenant.id, book) for book in books])
    other = make_tenant("Other")
    await store.create_tenant(other)
    await store.put_subscription(sub(other.id, ETH))
    assert await store.subscribed_books(tenant.id) == frozenset(books)
    assert await store.subscribed_books(other.id) == {ETH}
    assert await store.subscribed_books("tnt_missing") == frozenset()
