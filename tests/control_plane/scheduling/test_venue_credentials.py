"""The Alpaca key pool from settings: every key once, errors that never show a secret."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from control_plane.scheduling.venue_credentials import credential_pool
from control_plane.settings import ControlSettings
from ingest_nodes.settings import IngestSettings


def test_the_single_pair_and_the_pool_make_one_list() -> None:
    pool = credential_pool(SecretStr("AK1"), SecretStr("s1"), SecretStr("AK2:s2, AK1:other ,AK3:s:3"))
    assert [(k.get_secret_value(), s.get_secret_value()) for k, s in pool] == [
        ("AK1", "s1"),
        ("AK2", "s2"),
        ("AK3", "s:3"),
    ]
    assert credential_pool(None, None, None) == []


@pytest.mark.parametrize(
    ("key_id", "secret", "pool", "message"),
    [
        (SecretStr("AK1"), None, None, "set both"),
        (None, None, SecretStr("AK2:s2,AK3-no-secret-hunter2"), "entry 2 is not KEY_ID:SECRET"),
    ],
)
def test_bad_settings_name_the_problem_not_the_secret(
    key_id: SecretStr | None, secret: SecretStr | None, pool: SecretStr | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message) as raised:
        credential_pool(key_id, secret, pool)
    assert "hunter2" not in str(raised.value)


def test_nodes_get_credentials_and_the_control_plane_a_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LADDER_ALPACA_CREDENTIALS", "AKID1:secret-1,AKID2:secret-2")
    keys = IngestSettings(redis_url="redis://unused").alpaca_keys
    assert [k.key_id.get_secret_value() for k in keys] == ["AKID1", "AKID2"]
    assert "secret-1" not in repr(keys) and "AKID1" not in repr(keys)
    assert ControlSettings().keyed_exchanges == {"alpaca-crypto": 2}
