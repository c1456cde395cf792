"""API key format: generation, offline pre-validation and peppered hashing.

A key is ``ldr_`` + 32 random base62 characters (~190 bits from ``secrets``) + a 6-character
base62 checksum (CRC32 of the 32-character body, zero-padded). The fixed prefix and the
checksum let secret scanners recognise a leaked key without asking us, and let the server
refuse typos and random strings before touching the store.

The server keeps only ``HMAC-SHA256(pepper, key)``: a copy of the store alone cannot be used to
test guesses. Hashes are compared with ``hmac.compare_digest`` wherever they are compared.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import zlib

KEY_PREFIX = "ldr_"
BODY_LENGTH = 32
CHECKSUM_LENGTH = 6
KEY_LENGTH = len(KEY_PREFIX) + BODY_LENGTH + CHECKSUM_LENGTH
MAX_PRESENTED_LENGTH = 256
"""The longest key any caller may present, the operator's key included (settings refuse a longer
admin key): anything longer is refused before it is hashed, looked up or kept anywhere."""

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_BASE62_SET = frozenset(BASE62)


def random_base62(length: int) -> str:
    """``length`` characters drawn uniformly from the base62 alphabet with ``secrets``."""
    return "".join(secrets.choice(BASE62) for _ in range(length))


def _checksum(body: str) -> str:
    value = zlib.crc32(body.encode("ascii"))
    digits = []
    for _ in range(CHECKSUM_LENGTH):
        value, digit = divmod(value, 62)
        digits.append(BASE62[digit])
    return "".join(reversed(digits))


def generate_key() -> str:
    """A new API key; show it to the caller once and store only :func:`hash_key` of it."""
    body = random_base62(BODY_LENGTH)
    return f"{KEY_PREFIX}{body}{_checksum(body)}"


def looks_like_key(candidate: str) -> bool:
    """True when ``candidate`` has the key format and a matching checksum (no store needed)."""
    if len(candidate) != KEY_LENGTH or not candidate.startswith(KEY_PREFIX):
        return False
    rest = candidate[len(KEY_PREFIX) :]
    if not _BASE62_SET.issuperset(rest):
        return False
    body, checksum = rest[:BODY_LENGTH], rest[BODY_LENGTH:]
    return hmac.compare_digest(_checksum(body), checksum)


def hash_key(key: str, pepper: bytes) -> str:
    """The hex HMAC-SHA256 of ``key`` under the server's ``pepper``."""
    return hmac.new(pepper, key.encode("utf-8"), hashlib.sha256).hexdigest()


def same_hash(a: str, b: str) -> bool:
    """Constant-time equality of two hex hashes."""
    return hmac.compare_digest(a.encode("ascii"), b.encode("ascii"))


def display_parts(key: str) -> tuple[str, str]:
    """``(prefix, last4)``: enough of a key for a person to tell their keys apart."""
    return key[: len(KEY_PREFIX) + 4], key[-4:]
