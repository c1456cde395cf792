"""Activity profiles: how often each market of a catalogue sends an event, and how many levels it carries.

A profile gives every market, by its rank in its catalogue (1 = the busiest), an ``Activity``:

- ``skewed`` (the default): the k-th market updates ``rate * k ** -rate_skew`` times a second, a
  few levels an update, each update made as it is sent (``--rate``, ``--rate-skew``);
- ``binance-real``: Binance's diff streams (``<symbol>@depth@100ms``) send one event per 100 ms
  window in which the book changed, so every market runs on the 100 ms cadence (``--rate`` 10
  windows a second) and sends in a share of its windows: ``k ** -0.15`` (the busiest in every
  window, the 100th in half of them, the 1000th in a third), ~15,000 events/s for 2013 + 2013
  markets. An event is all of a window's changes merged, so busy markets carry tens of levels:
  ``50 * k ** -0.2`` on average (50, 20 at the 100th, 12.6 at the 1000th), drawn per frame from a
  geometric distribution around it, and the ten busiest futures markets sweep 150-400 levels in
  2 % of their frames. The evidence is in ``docs/scale.md`` (real load);
- ``venue-max``: every market in every window (40,260 events/s for 4026 markets), levels as
  ``binance-real``: the most a venue on the 100 ms cadence can send.

Markets of the replayed profiles do not draw their updates as they go: each records a cycle of
frames when it is built (``cycle.py``) and replays it, so the venue's cost per event is applying
a few levels to its true book and writing bytes it encoded once.
"""

from __future__ import annotations

from dataclasses import dataclass

WINDOWS_PER_S = 10.0
"""The 100 ms cadence of ``@depth@100ms``: the replayed profiles' default ``rate``."""
SWEEP_MARKETS = 10
"""The busiest futures markets of ``binance-real`` and ``venue-max`` sweep many levels at times ..."""
SWEEP_SHARE = 0.02
"""... in this share of their frames ..."""
SWEEP_LEVELS = (150, 400)
"""... changing this many levels (uniformly between the two)."""


@dataclass(frozen=True, slots=True)
class Activity:
    """One market's part of a profile."""

    share: float
    """Of the venue's rate this market makes: skewed, its updates; replayed, the share of windows
    in which it sends an event."""
    mean_levels: float = 0.0
    """Replayed profiles: the mean levels an event changes (0: not replayed)."""
    sweep_share: float = 0.0
    """Replayed profiles: the share of events that sweep ``SWEEP_LEVELS`` levels."""

    @property
    def replayed(self) -> bool:
        return self.mean_levels > 0


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    busy_exponent: float | None
    """Replayed: market k sends in ``k ** -busy_exponent`` of its windows; None: the skewed profile."""

    def activity(self, rank: int, futures: bool, rate_skew: float) -> Activity:
        if self.busy_exponent is None:
            return Activity(rank**-rate_skew)
        sweeps = SWEEP_SHARE if futures and rank <= SWEEP_MARKETS else 0.0
        return Activity(rank**-self.busy_exponent, 50.0 * rank**-0.2, sweeps)


PROFILES = {
    profile.name: profile
    for profile in (Profile("skewed", None), Profile("binance-real", 0.15), Profile("venue-max", 0.0))
}
