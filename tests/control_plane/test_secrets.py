"""No key, key hash or pepper ever shows in a repr, a str, a JSON rendering or an error."""

from __future__ import annotations

import pytest

from control_plane.accounts.api_keys import generate_key
from control_plane.errors import ApiError
from control_plane.models import OPERATOR
from control_plane.scheduling.markets import StaticMarketValidator
from control_plane.service import ControlService
from control_plane.settings import ControlSettings
from control_plane.stores.base import ControlStore
from tests.control_plane.helpers import PEPPER

ADMIN_KEY = "admin-key-for-tests-0123456789"


def _renderings(obj: object) -> str:
    to_json = getattr(obj, "to_json", None)
    return " ".join([repr(obj), str(obj), repr(to_json()) if callable(to_json) else ""])


async def test_models_and_audit_never_show_the_key_or_its_hash(store: ControlStore) -> None:
    service = ControlService(store, PEPPER, ADMIN_KEY, StaticMarketValidator({}))
    tenant = await service.tenants.create({"name": "Acme"}, actor=OPERATOR)
    record, secret = await service.keys.create(tenant.id, actor=OPERATOR)
    principal = await service.auth.authenticate(secret)
    await service.keys.revoke(None, record.id, grace_s=60, actor=OPERATOR)

    shown = " ".join(
        _renderings(obj)
        for obj in [
            tenant,
            record,
            principal,
            *await service.keys.list_for(tenant.id),
            *await service.audit.recent(),
        ]
    )
    for secret_part in (secret, secret[8:-4], record.key_hash, PEPPER.decode(), ADMIN_KEY):
        assert secret_part not in shown


async def test_errors_never_echo_a_presented_key(store: ControlStore) -> None:
    service = ControlService(store, PEPPER, ADMIN_KEY, StaticMarketValidator({}))
    tenant = await service.tenants.create({"name": "Acme"}, actor=OPERATOR)
    unknown = generate_key()
    attempts = [
        service.auth.authenticate(unknown),
        service.auth.authenticate(unknown[:-1] + "x"),
        service.auth.authenticate(ADMIN_KEY[:-1]),
        service.keys.revoke(None, unknown, actor=OPERATOR),  # a key pasted where an id belongs
        service.tenants.get(unknown),
        service.keys.create(unknown, actor=OPERATOR),
        service.tenants.update(tenant.id, {unknown: 1}, actor=OPERATOR),
    ]
    for attempt in attempts:
        with pytest.raises(ApiError) as caught:
            await attempt
        for text in (str(caught.value), repr(caught.value)):
            assert unknown[4:-6] not in text and ADMIN_KEY[:-1] not in text


def test_settings_hide_their_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LADDER_ADMIN_KEY", ADMIN_KEY)
    monkeypatch.setenv("LADDER_PEPPER", PEPPER.decode())
    settings = ControlSettings()
    for text in (repr(settings), str(settings), settings.model_dump_json()):
        assert ADMIN_KEY not in text and PEPPER.decode() not in text
