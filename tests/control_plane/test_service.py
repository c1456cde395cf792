"""The control service over both real stores: validation, authentication, keys, tenant isolation."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from book_store.schema import BookKey
from control_plane.accounts.audit import WRITE_BURST, WRITES_PER_S
from control_plane.accounts.keys import MAX_USABLE_KEYS_PER_TENANT
from control_plane.accounts.subscriptions import SubscriptionOutcome
from control_plane.errors import (
    ConflictError,
    ForbiddenError,
    InvalidRequestError,
    LimitExceededError,
    NotFoundError,
    RateLimitedError,
    UnauthorizedError,
    UnknownExchangeError,
    UnknownMarketError,
)
from control_plane.models import OPERATOR, NodeInfo, Principal, ReplicaAssignment, Subscription
from control_plane.scheduling.markets import StaticMarketValidator
from control_plane.service import ControlService
from control_plane.stores.base import ControlStore
from tests.control_plane.helpers import PEPPER

ADMIN_KEY = "admin-key-for-tests-0123456789"
MARKETS = StaticMarketValidator(
    {
        "binance.com": [f"COIN{i}USDT" for i in range(30)] + ["BTCUSDT", "ETHUSDT"],
        "alpaca-crypto": ["BTC/USD"],
        "binance.com-futures": ["BTCUSDT"],
    }
)


@dataclass
class ManualClock:
    now: int = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def service(store: ControlStore, clock: ManualClock) -> ControlService:
    return ControlService(store, PEPPER, ADMIN_KEY, MARKETS, clock=clock)


async def new_tenant(service: ControlService, name: str = "Acme", **fields: object) -> str:
    tenant = await service.tenants.create({"name": name, **fields}, actor=OPERATOR)
    return tenant.id


async def tenant_key(service: ControlService, tenant_id: str, **kwargs: object) -> tuple[Principal, str]:
    record, secret = await service.keys.create(tenant_id, actor=OPERATOR, **kwargs)
    return Principal(tenant_id, record.id, False), secret


# -- tenants -------------------------------------------------------------------------------


async def test_create_tenant_fills_defaults_and_checks_every_field(service: ControlService) -> None:
    tenant = await service.tenants.create({"name": "  Acme  ", "max_markets": 3}, actor=OPERATOR)
    assert (tenant.name, tenant.max_markets, tenant.max_replicas, tenant.disabled) == ("Acme", 3, 2, False)
    assert tenant.id.startswith("tnt_")
    assert await service.tenants.get(tenant.id) == tenant
    assert await service.tenants.list_all() == [tenant]

    bad_bodies: list[object] = [
        {},
        {"name": ""},
        {"name": 5},
        {"name": "B", "max_markets": True},
        {"name": "B", "max_markets": 1.5},
        {"name": "B", "max_replicas": 0},
        {"name": "B", "rate_limit_rps": "fast"},
        {"name": "B", "rate_limit_rps": float("nan")},
        {"name": "B", "burst": -1},
        {"name": "B", "disabled": True},
        {"name": "B", "colour": "blue"},
        ["name", "B"],
    ]
    for body in bad_bodies:
        with pytest.raises(InvalidRequestError):
            await service.tenants.create(body, actor=OPERATOR)  # type: ignore[arg-type]
    with pytest.raises(ConflictError):
        await service.tenants.create({"name": "acme"}, actor=OPERATOR)


async def test_update_tenant(service: ControlService) -> None:
    tenant_id = await new_tenant(service)
    updated = await service.tenants.update(
        tenant_id, {"max_replicas": 4, "rate_limit_rps": 2}, actor=OPERATOR
    )
    assert (updated.max_replicas, updated.rate_limit_rps) == (4, 2.0)
    assert await service.tenants.get(tenant_id) == updated

    with pytest.raises(InvalidRequestError):
        await service.tenants.update(tenant_id, {"max_replicas": 99}, actor=OPERATOR)
    with pytest.raises(NotFoundError):
        await service.tenants.update("tnt_doesnotexist", {"burst": 5}, actor=OPERATOR)
    with pytest.raises(NotFoundError):
        await service.tenants.get("../../etc/passwd")


async def test_max_depth_defaults_to_1000_and_is_checked(service: ControlService) -> None:
    tenant = await service.tenants.create({"name": "Acme"}, actor=OPERATOR)
    assert tenant.max_depth == 1000
    deep = await service.tenants.create({"name": "Deep", "max_depth": 5000}, actor=OPERATOR)
    assert deep.max_depth == 5000
    updated = await service.tenants.update(tenant.id, {"max_depth": 20}, actor=OPERATOR)
    assert updated.max_depth == 20 and (await service.tenants.get(tenant.id)).max_depth == 20

    for bad in (0, 5001, True, "1000", 10.0, None):
        with pytest.raises(InvalidRequestError, match="max_depth"):
            await service.tenants.create({"name": "B", "max_depth": bad}, actor=OPERATOR)
        with pytest.raises(InvalidRequestError, match="max_depth"):
            await service.tenants.update(tenant.id, {"max_depth": bad}, actor=OPERATOR)
    events = await service.audit.recent()
    assert (events[0].action, events[0].detail) == ("tenant.update", {"max_depth": 20})


# -- authentication ------------------------------------------------------------------------


async def test_a_new_key_authenticates_as_its_tenant(service: ControlService) -> None:
    tenant_id = await new_tenant(service)
    record, secret = await service.keys.create(tenant_id, actor=OPERATOR)

    assert await service.auth.authenticate(secret) == Principal(tenant_id, record.id, False)
    assert await service.auth.authenticate(ADMIN_KEY) == OPERATOR
    assert [k.id for k in await service.keys.list_for(tenant_id)] == [record.id]


@pytest.mark.parametrize(
    "presented", [None, "", "nonsense", "ldr_" + "a" * 38, ADMIN_KEY + "x", "x" * 10_000]
)
async def test_unknown_keys_are_unauthorized(service: ControlService, presented: str | None) -> None:
    await new_tenant(service)
    with pytest.raises(UnauthorizedError):
        await service.auth.authenticate(presented)


async def test_a_well_formed_key_that_was_never_issued_is_unauthorized(service: ControlService) -> None:
    from control_plane.accounts.api_keys import generate_key

    with pytest.raises(UnauthorizedError):
        await service.auth.authenticate(generate_key())


async def test_expired_key(service: ControlService, clock: ManualClock) -> None:
    tenant_id = await new_tenant(service)
    _, secret = await tenant_key(service, tenant_id, expires_in_s=60)
    await service.auth.authenticate(secret)

    clock.now += 60_000
    with pytest.raises(UnauthorizedError):
        await service.auth.authenticate(secret)


async def test_revoked_key_stops_at_once_and_grace_keeps_it_for_a_while(
    service: ControlService, clock: ManualClock
) -> None:
    tenant_id = await new_tenant(service)
    now_principal, now_secret = await tenant_key(service, tenant_id)
    later_principal, later_secret = await tenant_key(service, tenant_id)
    for secret in (now_secret, later_secret):
        await service.auth.authenticate(secret)  # cached from here on

    await service.keys.revoke(tenant_id, now_principal.key_id, actor=now_principal)
    revoked = await service.keys.revoke(None, later_principal.key_id, grace_s=30, actor=OPERATOR)
    assert revoked.revoked_at == clock.now + 30_000

    with pytest.raises(UnauthorizedError):
        await service.auth.authenticate(now_secret)
    assert await service.auth.authenticate(later_secret) == later_principal
    clock.now += 30_000
    with pytest.raises(UnauthorizedError):
        await service.auth.authenticate(later_secret)


async def test_revocation_by_another_process_takes_effect_within_the_cache_ttl(
    store: ControlStore, service: ControlService, clock: ManualClock
) -> None:
    other_process = ControlService(store, PEPPER, ADMIN_KEY, MARKETS, clock=clock)
    tenant_id = await new_tenant(service)
    principal, secret = await tenant_key(service, tenant_id)
    await service.auth.authenticate(secret)

    await other_process.keys.revoke(None, principal.key_id, actor=OPERATOR)
    clock.now += 999
    assert await service.auth.authenticate(secret) == principal  # still cached
    clock.now += 1
    with pytest.raises(UnauthorizedError):
        await service.auth.authenticate(secret)


async def test_disabled_tenant_is_forbidden(service: ControlService) -> None:
    tenant_id = await new_tenant(service)
    _, secret = await tenant_key(service, tenant_id)
    await service.tenants.update(tenant_id, {"disabled": True}, actor=OPERATOR)
    with pytest.raises(ForbiddenError):
        await service.auth.authenticate(secret)


async def test_last_used_is_written_in_batches(service: ControlService, clock: ManualClock) -> None:
    tenant_id = await new_tenant(service)
    _, secret = await tenant_key(service, tenant_id)
    await service.auth.authenticate(secret)
    clock.now += 5_000
    await service.auth.authenticate(secret)
    assert (await service.keys.list_for(tenant_id))[0].last_used_at is None

    await service.auth.flush_last_used()
    assert (await service.keys.list_for(tenant_id))[0].last_used_at == clock.now


async def test_a_key_minted_with_a_tenant_key_dies_with_it(
    service: ControlService, clock: ManualClock
) -> None:
    tenant_id = await new_tenant(service)
    parent, _ = await tenant_key(service, tenant_id, expires_in_s=60)
    minted, minted_secret = await service.keys.create(tenant_id, actor=parent)
    assert (minted.parent_id, minted.expires_at) == (parent.key_id, clock.now + 60_000)
    minted_principal = Principal(tenant_id, minted.id, False)
    grandchild, grandchild_secret = await service.keys.create(tenant_id, 3600, actor=minted_principal)
    assert grandchild.expires_at == clock.now + 60_000
    for secret in (minted_secret, grandchild_secret):
        await service.auth.authenticate(secret)  # cached from here on

    await service.keys.revoke(tenant_id, parent.key_id, actor=parent)
    for secret in (minted_secret, grandchild_secret):
        with pytest.raises(UnauthorizedError):
            await service.auth.authenticate(secret)
    with pytest.raises(UnauthorizedError):
        await service.keys.create(tenant_id, actor=parent)
    events = await service.audit.recent(3)
    assert events[1].detail["parent_id"] == minted.id


async def test_rotation_spares_the_successor_and_nothing_else(
    service: ControlService, clock: ManualClock
) -> None:
    tenant_id = await new_tenant(service)
    old, _ = await tenant_key(service, tenant_id)
    successor, successor_secret = await service.keys.create(tenant_id, actor=old)
    _, planted_secret = await service.keys.create(tenant_id, actor=old)  # minted by whoever had the old key
    new = Principal(tenant_id, successor.id, False)

    await service.keys.revoke(tenant_id, old.key_id, grace_s=60, actor=new)
    clock.now += 60_000
    assert await service.auth.authenticate(successor_secret) == new
    with pytest.raises(UnauthorizedError):
        await service.auth.authenticate(planted_secret)


async def test_parallel_key_creation_never_passes_the_limit(service: ControlService) -> None:
    tenant_id = await new_tenant(service)
    actor, _ = await tenant_key(service, tenant_id)
    outcomes = await asyncio.gather(
        *(service.keys.create(tenant_id, actor=actor) for _ in range(60)), return_exceptions=True
    )
    # A key's changes are also rate-bounded (control_plane/accounts/audit.py): its burst of 50 lets
    # more through than the 49 keys the tenant has room for.
    assert all(isinstance(o, tuple | LimitExceededError | ConflictError | RateLimitedError) for o in outcomes)
    assert any(isinstance(o, LimitExceededError | ConflictError) for o in outcomes)
    usable = [k for k in await service.keys.list_for(tenant_id) if k.revoked_at is None]
    assert len(usable) <= MAX_USABLE_KEYS_PER_TENANT
    assert sum(isinstance(o, tuple) for o in outcomes) == len(usable) - 1


async def test_key_creation_limits(service: ControlService) -> None:
    tenant_id = await new_tenant(service)
    for bad in (0, -5, "60", 1.5, True):
        with pytest.raises(InvalidRequestError):
            await service.keys.create(tenant_id, bad, actor=OPERATOR)
    with pytest.raises(NotFoundError):
        await service.keys.create("tnt_nobody", actor=OPERATOR)


# -- subscriptions -------------------------------------------------------------------------


def placed(outcome: SubscriptionOutcome) -> tuple[Subscription, bool]:
    """A successful subscribe's subscription and whether it was created."""
    assert outcome.subscription is not None and outcome.error is None
    return outcome.subscription, outcome.created


async def test_subscribe_validates_the_book_and_the_limits(service: ControlService) -> None:
    tenant_id = await new_tenant(service, max_markets=1, max_replicas=2)
    actor = Principal(tenant_id, "key_x", False)

    with pytest.raises(UnknownExchangeError):
        await service.subscriptions.subscribe(tenant_id, "kraken.com", "BTCUSD", actor=actor)
    with pytest.raises(UnknownMarketError):
        await service.subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDX", actor=actor)
    with pytest.raises(InvalidRequestError):
        await service.subscriptions.subscribe(tenant_id, "binance.com", "BTC|USDT", actor=actor)
    with pytest.raises(InvalidRequestError):
        await service.subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", 0, actor=actor)
    with pytest.raises(LimitExceededError):
        await service.subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", 3, actor=actor)

    sub, created = placed(
        await service.subscriptions.subscribe(tenant_id, "alpaca-crypto", "BTC/USD", actor=actor)
    )
    assert created and (sub.market, sub.replicas) == ("BTC/USD", 1)
    sub, created = placed(
        await service.subscriptions.subscribe(tenant_id, "alpaca-crypto", "BTC/USD", 2, actor=actor)
    )
    assert not created and sub.replicas == 2
    with pytest.raises(LimitExceededError):
        await service.subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", actor=actor)

    assert await service.subscriptions.is_entitled(tenant_id, "alpaca-crypto", "BTC/USD")
    await service.subscriptions.unsubscribe(tenant_id, "alpaca-crypto", "BTC/USD", actor=actor)
    assert not await service.subscriptions.is_entitled(tenant_id, "alpaca-crypto", "BTC/USD")
    with pytest.raises(NotFoundError):
        await service.subscriptions.unsubscribe(tenant_id, "alpaca-crypto", "BTC/USD", actor=actor)


async def test_subscribe_takes_a_depth_within_the_venue_and_the_tenant_limits(
    service: ControlService,
) -> None:
    tenant_id = await new_tenant(service, max_depth=2000)
    actor = Principal(tenant_id, "key_x", False)

    sub, created = placed(
        await service.subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", actor=actor)
    )
    assert created and sub.depth == 100  # the default
    sub, created = placed(
        await service.subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", 2, 2000, actor=actor)
    )
    assert not created and (sub.replicas, sub.depth) == (2, 2000)
    assert [(s.replicas, s.depth) for s in await service.subscriptions.list_for(tenant_id)] == [(2, 2000)]
    sub, _ = placed(
        await service.subscriptions.subscribe(
            tenant_id, "binance.com-futures", "BTCUSDT", depth=1000, actor=actor
        )
    )
    assert sub.depth == 1000

    with pytest.raises(LimitExceededError, match="depth may be at most 2000 for this tenant"):
        await service.subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", depth=2001, actor=actor)
    with pytest.raises(InvalidRequestError, match=r"at most 1000 on binance\.com-futures"):
        await service.subscriptions.subscribe(
            tenant_id, "binance.com-futures", "BTCUSDT", depth=1001, actor=actor
        )
    with pytest.raises(InvalidRequestError, match="between 1 and 5000"):
        await service.subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", depth=5001, actor=actor)
    for bad in (0, -1, True, False, "100", 100.0, [100]):
        with pytest.raises(InvalidRequestError, match="depth"):
            await service.subscriptions.subscribe(
                tenant_id, "alpaca-crypto", "BTC/USD", depth=bad, actor=actor
            )
    with pytest.raises(UnknownExchangeError):  # an unknown exchange is named before its depth
        await service.subscriptions.subscribe(tenant_id, "kraken.com", "BTCUSD", depth=4000, actor=actor)
    # Nothing refused was stored.
    assert [(s.market, s.depth) for s in await service.subscriptions.list_for(tenant_id)] == [
        ("BTCUSDT", 2000),
        ("BTCUSDT", 1000),
    ]


async def test_subscribing_again_changes_only_what_it_names_and_says_what_changed(
    service: ControlService,
) -> None:
    tenant_id = await new_tenant(service, max_replicas=2, max_depth=1000)
    actor = Principal(tenant_id, "key_x", False)
    subscriptions = service.subscriptions
    await subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", 2, 500, actor=actor)
    await subscriptions.subscribe(tenant_id, "binance.com", "ETHUSDT", 1, 300, actor=actor)

    # The case: a bulk call by list without a depth leaves a depth-500 subscription at 500.
    outcomes = await subscriptions.subscribe_many(
        tenant_id, "binance.com", ["BTCUSDT", "ETHUSDT", "COIN1USDT"], actor=actor
    )
    assert [(o.market, o.created, o.changes()) for o in outcomes] == [
        ("BTCUSDT", False, {}),
        ("ETHUSDT", False, {}),
        ("COIN1USDT", True, {}),
    ]
    held = {s.market: (s.replicas, s.depth) for s in await subscriptions.list_for(tenant_id)}
    assert held == {"BTCUSDT": (2, 500), "ETHUSDT": (1, 300), "COIN1USDT": (1, 100)}

    # A field named is changed for every market; a lowering says from what to what.
    outcomes = await subscriptions.subscribe_many(
        tenant_id, "binance.com", ["BTCUSDT", "ETHUSDT"], depth=400, actor=actor
    )
    assert [o.changes() for o in outcomes] == [
        {"depth": {"from": 500, "to": 400}},
        {"depth": {"from": 300, "to": 400}},
    ]
    outcome = await subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", replicas=1, actor=actor)
    assert outcome.changes() == {"replicas": {"from": 2, "to": 1}}
    assert outcome.subscription is not None and outcome.subscription.depth == 400

    # A value kept from before is not checked against a limit lowered since (the scheduler caps it).
    await service.tenants.update(tenant_id, {"max_depth": 200}, actor=OPERATOR)
    outcome = await subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", replicas=2, actor=actor)
    assert outcome.subscription is not None and (
        outcome.subscription.replicas,
        outcome.subscription.depth,
    ) == (2, 400)


async def test_concurrent_subscribes_respect_max_markets(service: ControlService) -> None:
    tenant_id = await new_tenant(service, max_markets=4)
    actor = Principal(tenant_id, "key_x", False)
    outcomes = await asyncio.gather(
        *(
            service.subscriptions.subscribe(tenant_id, "binance.com", f"COIN{i}USDT", actor=actor)
            for i in range(16)
        ),
        return_exceptions=True,
    )
    assert sum(isinstance(o, SubscriptionOutcome) for o in outcomes) == 4
    assert all(isinstance(o, SubscriptionOutcome | LimitExceededError) for o in outcomes)
    assert len(await service.subscriptions.list_for(tenant_id)) == 4


async def test_subscribe_many_answers_per_market_and_refuses_bad_common_fields(
    service: ControlService,
) -> None:
    tenant_id = await new_tenant(service, max_markets=5, max_replicas=2, max_depth=500)
    actor = Principal(tenant_id, "key_x", False)
    await service.subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", actor=actor)

    markets = ["BTCUSDT", "COIN1USDT", "NOSUCHUSDT", "BAD|NAME", "COIN1USDT", "COIN2USDT"]
    outcomes = await service.subscriptions.subscribe_many(
        tenant_id, "binance.com", markets, 2, 300, actor=actor
    )

    assert [(o.market, o.created, o.error.code if o.error else None) for o in outcomes] == [
        ("BTCUSDT", False, None),
        ("COIN1USDT", True, None),
        ("NOSUCHUSDT", False, "unknown_market"),
        ("BAD|NAME", False, "invalid_request"),
        ("COIN2USDT", True, None),  # a repeated market is answered once
    ]
    assert all(o.subscription is not None and (o.subscription.replicas, o.subscription.depth) == (2, 300)
               for o in outcomes if o.error is None)  # fmt: skip
    assert [(s.market, s.replicas) for s in await service.subscriptions.list_for(tenant_id)] == [
        ("BTCUSDT", 2),
        ("COIN1USDT", 2),
        ("COIN2USDT", 2),
    ]
    assert await service.subscriptions.is_entitled(tenant_id, "binance.com", "COIN2USDT")

    # What applies to every market refuses the whole call, before anything is written.
    refusals: list[tuple[type[Exception], object, object, object, object]] = [
        (UnknownExchangeError, "kraken.com", ["BTCUSD"], 1, 100),
        (InvalidRequestError, "binance.com", "COIN3USDT", 1, 100),
        (InvalidRequestError, "binance.com", ["COIN3USDT", 7], 1, 100),
        (InvalidRequestError, "binance.com", ["COIN3USDT"], 0, 100),
        (LimitExceededError, "binance.com", ["COIN3USDT"], 3, 100),
        (LimitExceededError, "binance.com", ["COIN3USDT"], 1, 501),
        (InvalidRequestError, "binance.com", [f"C{i}" for i in range(5001)], 1, 100),
        # three new markets where two fit: none of them, and not the update either
        (LimitExceededError, "binance.com", ["BTCUSDT", "COIN3USDT", "COIN4USDT", "COIN5USDT"], 1, 100),
    ]
    for error, exchange, names, replicas, depth in refusals:
        with pytest.raises(error):
            await service.subscriptions.subscribe_many(
                tenant_id, exchange, names, replicas, depth, actor=actor
            )
    assert [(s.market, s.replicas) for s in await service.subscriptions.list_for(tenant_id)] == [
        ("BTCUSDT", 2),
        ("COIN1USDT", 2),
        ("COIN2USDT", 2),
    ]
    assert await service.subscriptions.subscribe_many(tenant_id, "binance.com", [], actor=actor) == []
    assert (await service.audit.recent(1))[0].action == "subscription.put_many"


async def test_subscribe_books_spans_exchanges_and_counts_each_book(service: ControlService) -> None:
    tenant_id = await new_tenant(service, max_markets=3, max_depth=2000)
    actor = Principal(tenant_id, "key_x", False)
    books = [
        BookKey("binance.com", "BTCUSDT"),
        BookKey("alpaca-crypto", "BTC/USD"),
        BookKey("binance.com", "BTCUSDT"),  # named twice, subscribed once
        BookKey("alpaca-crypto", "ETH/USD"),  # not trading: fails alone
    ]
    outcomes = await service.subscriptions.subscribe_books(tenant_id, books, 1, 200, actor=actor)
    assert [(o.exchange, o.market, o.created, o.error.code if o.error else None) for o in outcomes] == [
        ("binance.com", "BTCUSDT", True, None),
        ("alpaca-crypto", "BTC/USD", True, None),
        ("alpaca-crypto", "ETH/USD", False, "unknown_market"),
    ]
    futures = [BookKey("binance.com-futures", "BTCUSDT")]
    # A depth one exchange of the call cannot keep refuses it all (binance.com-futures: 1000 at most).
    with pytest.raises(InvalidRequestError, match=r"binance\.com-futures"):
        await service.subscriptions.subscribe_books(tenant_id, [*books[:1], *futures], 1, 1500, actor=actor)
    # Two new books where one fits: neither, and not the update either.
    with pytest.raises(LimitExceededError):
        await service.subscriptions.subscribe_books(
            tenant_id, [*books[:1], *futures, BookKey("binance.com", "ETHUSDT")], 2, 100, actor=actor
        )
    assert {
        (s.exchange, s.market, s.replicas, s.depth) for s in await service.subscriptions.list_for(tenant_id)
    } == {
        ("binance.com", "BTCUSDT", 1, 200),
        ("alpaca-crypto", "BTC/USD", 1, 200),
    }
    assert await service.subscriptions.is_entitled(tenant_id, "alpaca-crypto", "BTC/USD")
    event = (await service.audit.recent(1))[0]
    assert (event.action, event.detail["markets"]) == ("subscription.put_books", 2)


async def test_unsubscribe_many_answers_per_market(service: ControlService) -> None:
    tenant_id = await new_tenant(service, max_markets=3)
    actor = Principal(tenant_id, "key_x", False)
    await service.subscriptions.subscribe_many(
        tenant_id, "binance.com", ["COIN1USDT", "COIN2USDT", "COIN3USDT"], actor=actor
    )
    assert await service.subscriptions.is_entitled(tenant_id, "binance.com", "COIN1USDT")

    outcomes = await service.subscriptions.unsubscribe_many(
        tenant_id, "binance.com", ["COIN1USDT", "COIN9USDT", "B|D", "COIN3USDT"], actor=actor
    )

    assert [(o.market, o.error.code if o.error else None) for o in outcomes] == [
        ("COIN1USDT", None),
        ("COIN9USDT", "not_found"),
        ("B|D", "invalid_request"),
        ("COIN3USDT", None),
    ]
    assert [s.market for s in await service.subscriptions.list_for(tenant_id)] == ["COIN2USDT"]
    assert not await service.subscriptions.is_entitled(tenant_id, "binance.com", "COIN1USDT")
    # The freed markets count again.
    await service.subscriptions.subscribe_many(
        tenant_id, "binance.com", ["COIN5USDT", "COIN6USDT"], actor=actor
    )


# -- tenant isolation ----------------------------------------------------------------------


async def test_tenants_cannot_see_or_touch_each_other(service: ControlService) -> None:
    alice_id, bob_id = await new_tenant(service, "Alice"), await new_tenant(service, "Bob")
    alice, alice_secret = await tenant_key(service, alice_id)
    bob, bob_secret = await tenant_key(service, bob_id)
    await service.subscriptions.subscribe(bob_id, "binance.com", "ETHUSDT", actor=bob)

    with pytest.raises(NotFoundError):
        await service.keys.revoke(alice_id, bob.key_id, actor=alice)
    assert await service.auth.authenticate(bob_secret) == bob

    assert await service.subscriptions.list_for(alice_id) == []
    assert not await service.subscriptions.is_entitled(alice_id, "binance.com", "ETHUSDT")
    with pytest.raises(NotFoundError):
        await service.subscriptions.unsubscribe(alice_id, "binance.com", "ETHUSDT", actor=alice)
    assert await service.subscriptions.is_entitled(bob_id, "binance.com", "ETHUSDT")
    assert [k.id for k in await service.keys.list_for(alice_id)] == [alice.key_id]
    assert await service.auth.authenticate(alice_secret) == alice


# -- operator views ------------------------------------------------------------------------


async def test_audit_names_the_actor_and_never_the_key(service: ControlService) -> None:
    tenant_id = await new_tenant(service)
    principal, secret = await tenant_key(service, tenant_id)
    await service.subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", actor=principal)
    await service.keys.revoke(tenant_id, principal.key_id, actor=principal)

    events = await service.audit.recent()
    assert [(e.action, e.actor) for e in events] == [
        ("key.revoke", f"key:{principal.key_id}"),
        ("subscription.put", f"key:{principal.key_id}"),
        ("key.create", "operator"),
        ("tenant.create", "operator"),
    ]
    assert secret not in repr(events)
    assert events[1].detail == {"exchange": "binance.com", "market": "BTCUSDT", "replicas": 1, "depth": 100}
    with pytest.raises(InvalidRequestError):
        await service.audit.recent(0)


async def test_a_tenant_s_no_op_changes_record_nothing_and_its_events_stay_in_its_scope(
    service: ControlService, clock: ManualClock
) -> None:
    """The issue's attack: a tenant key mints a key, which sends deletes of subscriptions it does
    not have. They record nothing, and what the tenant records is in its own scope."""
    tenant_id = await new_tenant(service)
    principal, _ = await tenant_key(service, tenant_id)
    minted, _ = await service.keys.create(tenant_id, actor=principal)
    minted_key = Principal(tenant_id, minted.id, False)
    for _ in range(30):
        clock.now += 100  # within the key's budget
        await service.subscriptions.unsubscribe_many(tenant_id, "binance.com", ["BTCUSDT"], actor=minted_key)
        await service.subscriptions.subscribe_many(tenant_id, "binance.com", ["NOPE"], actor=minted_key)
    assert [(e.action, e.scope) for e in await service.audit.recent()] == [
        ("key.create", tenant_id),
        ("key.create", "operator"),
        ("tenant.create", "operator"),
    ]
    assert [e.action for e in await service.audit.recent(scope="operator")] == ["key.create", "tenant.create"]


async def test_a_key_s_changes_are_rate_bounded_before_they_act(
    service: ControlService, clock: ManualClock
) -> None:
    tenant_id = await new_tenant(service, max_markets=100)
    principal, _ = await tenant_key(service, tenant_id)
    for _ in range(WRITE_BURST):
        await service.subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", actor=principal)
    with pytest.raises(RateLimitedError) as refused:
        await service.subscriptions.unsubscribe(tenant_id, "binance.com", "BTCUSDT", actor=principal)
    assert refused.value.retry_after_s == pytest.approx(1 / WRITES_PER_S)
    assert len(await service.subscriptions.list_for(tenant_id)) == 1, "refused before it acted"
    clock.now += 1000  # a second brings WRITES_PER_S changes back
    await service.subscriptions.unsubscribe(tenant_id, "binance.com", "BTCUSDT", actor=principal)
    for _ in range(3 * WRITE_BURST):  # the operator is not bounded
        await service.subscriptions.subscribe(tenant_id, "binance.com", "BTCUSDT", actor=OPERATOR)


async def test_nodes_view_shows_liveness_and_assignments(
    store: ControlStore, service: ControlService, clock: ManualClock
) -> None:
    await store.register_node(NodeInfo("node-1", "", 10, clock.now, clock.now, False, 0.0))
    await store.register_node(NodeInfo("node-2", "", 10, clock.now, clock.now - 10_000, False, 0.0))
    await store.replace_assignments("node-1", [ReplicaAssignment("binance.com", "BTCUSDT", 1, "node-1")])

    view = await service.nodes()
    assert [(n["id"], n["live"]) for n in view] == [("node-1", True), ("node-2", False)]
    assert view[0]["assignments"] == [
        {"exchange": "binance.com", "market": "BTCUSDT", "replica": 1, "node_id": "node-1"}
    ]
