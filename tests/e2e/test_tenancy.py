"""Tenant isolation, revocation within a second, and secrets that never leak, over the real stack."""

from __future__ import annotations

import time

import pytest

from tests.e2e.stack import ADMIN_KEY, Stack, stored_bytes

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("stack")]


def test_no_route_lets_a_tenant_see_or_change_another_tenants_data(stack: Stack) -> None:
    alice = stack.tenant_key("iso-alice")
    bob = stack.tenant_key("iso-bob")
    assert stack.call(alice, "POST", "/v1/subscriptions",
                      json={"exchange": "binance.com", "market": "XRPUSDT"}).status_code == 201  # fmt: skip
    alice_keys = stack.call(alice, "GET", "/v1/keys").json()["keys"]
    alice_key_id = alice_keys[0]["id"]

    # Bob sees none of Alice's subscriptions, keys or usage, and cannot change them.
    assert stack.call(bob, "GET", "/v1/subscriptions").json()["subscriptions"] == []
    assert alice_key_id not in [k["id"] for k in stack.call(bob, "GET", "/v1/keys").json()["keys"]]
    assert stack.call(bob, "DELETE", f"/v1/keys/{alice_key_id}").status_code == 404
    assert stack.call(bob, "DELETE", "/v1/subscriptions/binance.com/XRPUSDT").status_code == 404
    assert stack.call(bob, "GET", "/v1/books/binance.com/XRPUSDT").status_code == 403
    assert (
        stack.call(bob, "GET", "/v1/usage").json()["tenant_id"]
        != stack.call(alice, "GET", "/v1/usage").json()["tenant_id"]
    )
    # Operator routes are the operator's alone.
    assert stack.call(bob, "GET", "/v1/admin/tenants").status_code == 403
    assert stack.call(bob, "POST", "/v1/admin/tenants", json={"name": "evil"}).status_code == 403
    # Alice's subscription survived Bob's attempts.
    subs = stack.call(alice, "GET", "/v1/subscriptions").json()["subscriptions"]
    assert [(s["exchange"], s["market"]) for s in subs] == [("binance.com", "XRPUSDT")]


def test_revocation_takes_effect_within_a_second(stack: Stack) -> None:
    key = stack.tenant_key("revoke")
    assert stack.call(key, "GET", "/v1/subscriptions").status_code == 200  # now cached by the reader
    key_id = stack.call(key, "GET", "/v1/keys").json()["keys"][0]["id"]
    assert stack.admin("DELETE", f"/v1/admin/keys/{key_id}").status_code == 204
    revoked_at = time.monotonic()
    while stack.call(key, "GET", "/v1/subscriptions").status_code != 401:
        assert time.monotonic() - revoked_at < 1.0, "a revoked key still works after a second"
        time.sleep(0.02)


def test_rotation_with_grace_keeps_the_old_key_working_for_a_while(stack: Stack) -> None:
    old = stack.tenant_key("rotate")
    new = stack.call(old, "POST", "/v1/keys", json={}).json()["key"]
    old_id = next(
        k["id"] for k in stack.call(new, "GET", "/v1/keys").json()["keys"] if old.endswith(k["last4"])
    )
    assert stack.call(new, "DELETE", f"/v1/keys/{old_id}", params={"grace_s": 2}).status_code == 204
    assert stack.call(old, "GET", "/v1/subscriptions").status_code == 200
    time.sleep(3.2)
    assert stack.call(old, "GET", "/v1/subscriptions").status_code == 401
    assert stack.call(new, "GET", "/v1/subscriptions").status_code == 200


def test_keys_and_pepper_never_appear_in_responses_or_logs(stack: Stack) -> None:
    key = stack.tenant_key("secrets")
    responses = [
        stack.call(key, "GET", "/v1/keys"),
        stack.call(key, "GET", "/v1/subscriptions"),
        stack.call(key, "GET", "/v1/books/binance.com/NOPE"),
        stack.call(key + "x", "GET", "/v1/subscriptions"),
        stack.call(key, "POST", "/v1/subscriptions", content=b"{not json"),
        stack.admin("GET", "/v1/admin/tenants"),
        stack.admin("GET", "/v1/admin/audit"),
        stack.call(None, "GET", "/test"),
        stack.call(key, "GET", "/get_cluster_info"),
    ]
    client = stack.store(stack.control_url)
    pepper_values = [stored_bytes(v) for k in client.scan_iter("*pepper*") for v in [client.get(k)] if v]
    client.close()
    assert pepper_values, "the pepper lives in the control store"
    secrets = [
        key,
        ADMIN_KEY,
        stack.store_password,
        *(p.hex() for p in pepper_values),
        *(p.decode("latin-1") for p in pepper_values),
    ]
    for response in responses:
        for secret in secrets:
            assert secret not in response.text, f"{response.request.url.path} leaked a secret"
            assert all(secret not in v for v in response.headers.values())
    logs = stack.logs()
    assert logs, "the stack's processes log something"
    for secret in secrets:
        assert secret not in logs, "a secret reached a log"
