"""The requests a worker holds: counted by the dispatcher, which sheds past the limit."""

from __future__ import annotations


class Load:
    """Requests in progress in one worker, its bound, and how many were refused for it."""

    __slots__ = ("in_flight", "limit", "shed")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0
        self.shed = 0
