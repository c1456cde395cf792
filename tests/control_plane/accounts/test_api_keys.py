"""API key format, checksum, hashing and constant-time comparison."""

from __future__ import annotations

import hmac
import re
import zlib

import pytest

from control_plane.accounts.api_keys import (
    BASE62,
    display_parts,
    generate_key,
    hash_key,
    looks_like_key,
    same_hash,
)

KEY_SHAPE = re.compile(r"ldr_[0-9A-Za-z]{32}[0-9A-Za-z]{6}")


def test_generated_keys_have_the_documented_shape_and_pass_the_checksum() -> None:
    keys = {generate_key() for _ in range(200)}
    assert len(keys) == 200
    for key in keys:
        assert KEY_SHAPE.fullmatch(key)
        assert looks_like_key(key)


def _swap(text: str, index: int) -> str:
    replacement = BASE62[(BASE62.index(text[index]) + 1) % len(BASE62)]
    return text[:index] + replacement + text[index + 1 :]


@pytest.mark.parametrize("index", [4, 20, 35, 36, 41])
def test_any_changed_character_fails_the_checksum(index: int) -> None:
    key = generate_key()
    assert not looks_like_key(_swap(key, index))


@pytest.mark.parametrize(
    "candidate",
    [
        "",
        "ldr_",
        "sk_live_" + "a" * 34,
        "LDR_" + "a" * 38,
        "ldr_" + "a" * 37,
        "ldr_" + "a" * 39,
        "ldr_" + "-" * 38,
    ],
)
def test_non_keys_are_recognised_offline(candidate: str) -> None:
    assert not looks_like_key(candidate)


def test_checksum_is_crc32_of_the_body_in_base62() -> None:
    key = generate_key()
    body, checksum = key[4:36], key[36:]
    value = 0
    for ch in checksum:
        value = value * 62 + BASE62.index(ch)
    assert value == zlib.crc32(body.encode())


def test_hash_is_hmac_sha256_under_the_pepper() -> None:
    key = generate_key()
    digest = hash_key(key, b"pepper-one-0123456789")
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert digest == hash_key(key, b"pepper-one-0123456789")
    assert digest != hash_key(key, b"pepper-two-0123456789")
    assert key not in digest


def test_hash_comparison_is_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr("control_plane.accounts.api_keys.hmac.compare_digest", spy)
    assert same_hash("ab" * 32, "ab" * 32)
    assert not same_hash("ab" * 32, "cd" * 32)
    assert len(calls) == 2


def test_display_parts_are_a_short_prefix_and_the_last_four() -> None:
    key = generate_key()
    prefix, last4 = display_parts(key)
    assert key.startswith(prefix) and prefix.startswith("ldr_") and len(prefix) == 8
    assert key.endswith(last4) and len(last4) == 4
