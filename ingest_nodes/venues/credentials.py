"""A venue credential: a key id and its secret, which nothing may print or log."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import SecretStr


@dataclass(frozen=True, slots=True)
class Credential:
    """One API key of a venue. ``key_id`` is shown (shortened) in logs; ``secret`` never is."""

    key_id: SecretStr
    secret: SecretStr

    @property
    def label(self) -> str:
        """How logs and statuses name the key: its first four characters and its length."""
        key = self.key_id.get_secret_value()
        return f"{key[:4]}...({len(key)})"

    def __repr__(self) -> str:
        return f"Credential({self.label})"
