"""A market's recorded motion: frames drawn once when it is built, then replayed for ever.

Theory of operation. ``record`` draws ``FORWARD`` frames from the market's generator on its seeded
book. A frame is one 100 ms window of the venue: the merge of as many generator operations as it
takes to change the number of levels drawn for it (a busy market's window merges many updates, which is
why its event spans many update ids), each level with its last quantity. The quantities each frame
replaced are kept, and the book is put back as it was. The cycle is the forward frames followed by
their inverses in reverse order (each level set back to what it was before its frame), so one turn
of the cycle leaves the book exactly where it started and the next turn replays the same frames,
while the levels per frame keep the profile's distribution (an inverse changes the levels its
frame changed). Each frame also says how many windows pass until the market's next frame
(geometric, with the market's busy share), so an idle window costs the venue nothing.

Replaying a frame applies its levels to the true book (so the truth endpoint and snapshots stay
exact) and sends bytes encoded once per frame (``Frame.body``, kept by the dialect that wrote it).
"""

from __future__ import annotations

import math
import random

from fake_venue.market.generator import ChangeSet, Generator
from fake_venue.market.profiles import SWEEP_LEVELS, Activity

FORWARD = 16
"""Frames drawn per market; the cycle replays them and their inverses (32 frames a turn)."""


class Frame:
    """One event of a replayed market: its levels, the update ids it spans, the windows until the next."""

    __slots__ = ("asks", "bids", "body", "gap", "span")

    def __init__(
        self, bids: tuple[tuple[int, int], ...], asks: tuple[tuple[int, int], ...], span: int, gap: int
    ) -> None:
        self.bids = bids
        """``(tick, qty)``, best first (qty 0 removes the level), as the venue orders an event.
        Tuples of numbers, which the cyclic collector stops tracking: a venue replaying thousands
        of markets holds hundreds of thousands of levels for as long as it runs."""
        self.asks = asks
        self.span = span
        """Update ids the event covers (``u - U + 1`` on a venue whose ids have no holes)."""
        self.gap = gap
        """Windows from this frame to the market's next one (1: the very next window)."""
        self.body: bytes | None = None
        """The levels as a dialect encoded them, kept for every later turn of the cycle."""

    @property
    def levels(self) -> int:
        return len(self.bids) + len(self.asks)


class Cycle:
    """The frames of one market in replay order, and where the replay is."""

    __slots__ = ("frames", "position")

    def __init__(self, frames: list[Frame]) -> None:
        self.frames = frames
        self.position = 0

    def next(self) -> Frame:
        frame = self.frames[self.position]
        self.position = (self.position + 1) % len(self.frames)
        return frame

    @property
    def played(self) -> int:
        """Where the frame just replayed is in ``frames`` (-1: the last one)."""
        return self.position - 1

    @property
    def last_gap(self) -> int:
        """Windows between the frame just replayed and the next."""
        return self.frames[self.played].gap


def record(generator: Generator, changes_of: ChangeSet, activity: Activity, rng: random.Random) -> Cycle:
    """Draw a cycle on the book ``changes_of`` wraps (an empty change set of it) and put the book back."""
    book, mid = changes_of.book, generator.mid
    forward: list[tuple[ChangeSet, int]] = []
    for _ in range(FORWARD):
        wanted = _levels_drawn(activity, rng)
        changes = ChangeSet(book)
        operations = generator.grow(changes, min(0.9, wanted / 100), wanted, 4 * wanted + 8)
        forward.append((changes, max(operations, len(changes.new))))
    frames = [_frame(changes.new, span, _gap(activity.share, rng)) for changes, span in forward]
    for changes, span in reversed(forward):
        for (is_bid, tick), old in changes.old.items():
            book.side(is_bid).set(tick, old)
        frames.append(_frame(changes.old, span, _gap(activity.share, rng)))
    generator.mid = mid
    return Cycle(frames)


def _levels_drawn(activity: Activity, rng: random.Random) -> int:
    """1 + a geometric count around the market's mean, or a sweep's count."""
    if activity.sweep_share and rng.random() < activity.sweep_share:
        return rng.randint(*SWEEP_LEVELS)
    extra = activity.mean_levels - 1
    if extra <= 0:
        return 1
    return 1 + int(math.log(1.0 - rng.random()) / math.log(extra / (extra + 1)))


def _gap(share: float, rng: random.Random) -> int:
    """Windows until the next busy one, when each is busy with probability ``share``."""
    if share >= 1 or share <= 0:
        return 1  # a market that never sends (share 0) is never scheduled: its rate is 0
    return 1 + int(math.log(1.0 - rng.random()) / math.log(1 - share))


def _frame(levels: dict[tuple[bool, int], int], span: int, gap: int) -> Frame:
    bids = sorted(((tick, qty) for (is_bid, tick), qty in levels.items() if is_bid), reverse=True)
    asks = sorted((tick, qty) for (is_bid, tick), qty in levels.items() if not is_bid)
    return Frame(tuple(bids), tuple(asks), span, gap)
