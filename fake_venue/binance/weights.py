"""Binance's request-weight rule: a budget per client IP per window, then 429, then a 418 ban.

Each request costs its weight. The count lives in a fixed window aligned to the clock (a minute on
the venue), and every answer reports it in ``X-MBX-USED-WEIGHT-1M``. A request that would exceed
the limit gets 429 with ``Retry-After`` = seconds to the window's end, and is not counted. A client
that sends anything before then is banned: 418 with ``Retry-After`` = the ban's length, which
starts at ``ban_base_s`` and doubles for each further ban of the same IP, up to ``ban_max_s``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Verdict:
    status: int
    """200 to serve the request, 429 or 418 to refuse it."""
    used: int
    retry_after: int = 0
    banned_until_ms: int = 0


@dataclass(slots=True)
class _Client:
    window: int = -1
    used: int = 0
    backoff_until: float = 0.0
    ban_until: float = 0.0
    bans: int = 0


class WeightLedger:
    """Weight used per client IP, for one venue."""

    def __init__(self, limit: int, window_s: float, ban_base_s: float, ban_max_s: float) -> None:
        self.limit = limit
        self.window_s = window_s
        self.ban_base_s = ban_base_s
        self.ban_max_s = ban_max_s
        self.refused_429 = 0
        self.refused_418 = 0
        self._clients: dict[str, _Client] = {}

    def charge(self, ip: str, weight: int, now: float) -> Verdict:
        """Decide one request of ``weight`` from ``ip`` at wall-clock time ``now``."""
        client = self._client(ip, now)
        if now < client.ban_until:
            self.refused_418 += 1
            return self._ban_verdict(client, now)
        if now < client.backoff_until:
            ban = min(self.ban_base_s * 2**client.bans, self.ban_max_s)
            client.bans += 1
            client.ban_until = now + ban
            self.refused_418 += 1
            return self._ban_verdict(client, now)
        if client.used + weight > self.limit:
            window_end = (client.window + 1) * self.window_s
            client.backoff_until = window_end
            self.refused_429 += 1
            return Verdict(429, client.used, max(1, math.ceil(window_end - now)))
        client.used += weight
        return Verdict(200, client.used)

    def used(self, ip: str, now: float) -> int:
        return self._client(ip, now).used

    def usage(self, now: float) -> dict[str, int]:
        return {ip: self._client(ip, now).used for ip in list(self._clients)}

    def clear(self) -> None:
        """Forget all counts, back-offs and bans."""
        self._clients.clear()

    def _client(self, ip: str, now: float) -> _Client:
        client = self._clients.get(ip)
        if client is None:
            client = self._clients[ip] = _Client()
        window = int(now // self.window_s)
        if window != client.window:
            client.window, client.used = window, 0
        return client

    def _ban_verdict(self, client: _Client, now: float) -> Verdict:
        return Verdict(
            418, client.used, max(1, math.ceil(client.ban_until - now)), int(client.ban_until * 1000)
        )
