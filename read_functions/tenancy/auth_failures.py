"""Failed authentications per source address, so that guessing keys cannot tie up the store.

A well-formed key is cheap to make (its checksum is public), and one nobody holds costs a store
look-up before it can be refused. So each source address has a token bucket of failures:
``burst`` at most, refilled at ``rate_per_s``. While a source's bucket is empty, a key from it
that would need the store is refused at once (429 with ``Retry-After``); keys this worker already
knows, good or bad, are still answered from memory, so a tenant sharing the address (a NAT, a
load balancer) keeps working. Every failure counts, cheap or not: a client that sends garbage is
the one that would send random well-formed keys next.

An IPv6 source is its /64, the block one host is given, so that a host cannot get a fresh bucket
from each of its addresses. Memory stays bounded: at most ``max_sources`` buckets, the oldest
dropped first (a dropped source starts over with a full bucket: ``burst`` more look-ups at most).
"""

from __future__ import annotations

import ipaddress
import time

from control_plane.errors import RateLimitedError


class AuthenticationsLimitedError(RateLimitedError):
    """A source over its budget of failed authentications; it may try again after ``retry_after_s``."""

    code = "too_many_failed_authentications"


class FailedAuthentications:
    """Token buckets of failed authentications, one per source (see the module docstring)."""

    def __init__(self, *, rate_per_s: float = 1.0, burst: int = 20, max_sources: int = 10_000) -> None:
        self._rate = rate_per_s
        self._burst = float(burst)
        self._max_sources = max_sources
        self._buckets: dict[str, tuple[float, float]] = {}  # source -> (tokens, at)

    def __len__(self) -> int:
        return len(self._buckets)

    def check(self, address: str) -> None:
        """Raise AuthenticationsLimitedError while ``address`` has no failure left to spend."""
        bucket = self._buckets.get(_source(address))
        if bucket is None:
            return
        tokens = self._refilled(bucket, time.monotonic())
        if tokens < 1:
            raise AuthenticationsLimitedError(
                "too many failed authentications from this address; retry later",
                (1 - tokens) / self._rate,
            )

    def failed(self, address: str) -> None:
        """Spend one failure of ``address``'s budget."""
        source = _source(address)
        now = time.monotonic()
        bucket = self._buckets.pop(source, None)
        tokens = self._burst if bucket is None else self._refilled(bucket, now)
        self._buckets[source] = (max(tokens - 1, 0.0), now)  # reinserted: the newest to be dropped
        if len(self._buckets) > self._max_sources:
            del self._buckets[next(iter(self._buckets))]

    def _refilled(self, bucket: tuple[float, float], now: float) -> float:
        tokens, at = bucket
        return min(self._burst, tokens + (now - at) * self._rate)


def _source(address: str) -> str:
    """The bucket of an address: itself, or for IPv6 its /64 (an IPv4-mapped one: the IPv4)."""
    if ":" not in address:
        return address
    try:
        ip = ipaddress.IPv6Address(address.partition("%")[0])
    except ValueError:
        return address
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.IPv6Network((ip, 64), strict=False))
