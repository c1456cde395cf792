"""The pool of venue credentials (Alpaca's API keys): read from settings, counted by the scheduler,
used by nodes.

Alpaca allows one stream connection per key, so the scheduler must know how many keys there are
to place replicas on at most that many nodes; the nodes need the secrets to connect. Both read the
same settings (``LADDER_ALPACA_KEY_ID`` + ``LADDER_ALPACA_SECRET_KEY``, and/or the pool
``LADDER_ALPACA_CREDENTIALS`` = ``KEY_ID:SECRET,KEY_ID:SECRET``; in AWS injected from Secrets
Manager). Errors name the entry, never its text.
"""

from __future__ import annotations

from pydantic import SecretStr

CredentialPair = tuple[SecretStr, SecretStr]


def credential_pool(
    key_id: SecretStr | None, secret: SecretStr | None, pool: SecretStr | None
) -> list[CredentialPair]:
    """Every configured key, the single pair first, each key id once."""
    if (key_id is None) != (secret is None):
        raise ValueError("set both LADDER_ALPACA_KEY_ID and LADDER_ALPACA_SECRET_KEY, or neither")
    keys: dict[str, CredentialPair] = {}
    if key_id is not None and secret is not None:
        keys[key_id.get_secret_value()] = (key_id, secret)
    text = "" if pool is None else pool.get_secret_value()
    for number, entry in enumerate((e.strip() for e in text.split(",")), start=1):
        if not entry:
            continue
        pool_key, _, pool_secret = entry.partition(":")
        if not pool_key or not pool_secret:
            raise ValueError(f"LADDER_ALPACA_CREDENTIALS entry {number} is not KEY_ID:SECRET")
        keys.setdefault(pool_key, (SecretStr(pool_key), SecretStr(pool_secret)))
    return list(keys.values())
