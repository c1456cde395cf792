"""Identifiers of the control plane's objects: a type prefix and 16 random base62 characters.

The prefix tells a person (and a log reader) what an id names; ids are not secrets, but they are
random so that one tenant cannot guess another's object ids.
"""

from __future__ import annotations

from control_plane.accounts.api_keys import random_base62

TENANT_ID_PREFIX = "tnt_"
KEY_ID_PREFIX = "key_"
_RANDOM_LENGTH = 16


def new_id(prefix: str) -> str:
    return prefix + random_base62(_RANDOM_LENGTH)
