"""Retry pacing as a pure policy: ``compute(attempt)`` is testable without sleeping."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with full jitter, capped; a venue's Retry-After always wins."""

    base_s: float = 0.25
    cap_s: float = 30.0

    def compute(
        self, attempt: int, retry_after_s: float | None = None, rng: random.Random | None = None
    ) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after_s is not None:
            return retry_after_s
        ceiling = min(self.cap_s, self.base_s * (2**attempt))
        return (rng or random).uniform(ceiling / 2, ceiling)
