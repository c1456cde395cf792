"""One symbol on one venue, and the lazily built set of them.

Theory of operation. A ``Market`` owns a book, the generator that moves it, its drift (``Walk``),
its update ids and its recent history, plus the faults that act on one symbol (rate, stall, gap,
cross). ``step`` makes one update: the drift and the generator change the book, the venue's
``IdSource`` gives it an id range, and the update's undo record goes to history, so the truth
endpoint can rebuild any recent state. An update is made once and then encoded once per stream
form, however many clients receive it. How a venue's books move (rate, drift, deep activity) is one
``Motion``
its markets share; a market's own setting, when a control action gave it one, overrides it.

``Markets`` holds a venue's catalogue. A symbol costs nothing until something touches it (a
subscription, a depth snapshot, the truth endpoint); only then is its book seeded and it starts
to move. So a catalogue of thousands of symbols is free until used. Seeding takes a millisecond
for a 1500-level book and several for a 6000-level one, so symbols subscribed by the thousand are
queued and built a few milliseconds of the event loop at a time (``request``), with other work in
between; a snapshot or the truth endpoint builds the one book it needs at once (``get``).
"""

from __future__ import annotations

import asyncio
import random
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from fake_venue.config import Drift, VenueConfig
from fake_venue.market.book import Book, Levels
from fake_venue.market.cycle import Cycle, Frame, record
from fake_venue.market.decimal_text import LevelStyle
from fake_venue.market.drift import Walk
from fake_venue.market.generator import ChangeSet, Generator
from fake_venue.market.history import History
from fake_venue.market.profiles import PROFILES, Activity
from fake_venue.market.symbols import TRADING, SymbolSpec

EVERY_UPDATE = Activity(1.0)
"""A market at the venue's rate, updates drawn as they go."""
UNAPPLIED_FIELDS = 5
"""A replayed frame not applied yet: its first, last and previous update ids, its time (ns) and
its place in the cycle. Numbers in one array, not ``Update`` objects: a busy venue keeps hundreds
of thousands of them, which the cyclic collector would walk at every full pass, holding every frame
back meanwhile."""
BUILD_SLICE_S = 0.005
"""Longest the event loop spends building requested markets before it does other work."""


@dataclass(slots=True)
class Update:
    """One event's worth of book changes, as ``(tick, qty)`` pairs; qty 0 removes the level."""

    first_id: int
    last_id: int
    prev_id: int
    """``last_id`` of the event before this one on the same stream (futures ``pu``)."""
    event_ms: int
    txn_ms: int
    t_ns: int
    bids: Levels
    asks: Levels
    frame: Frame | None = None
    """The recorded frame this update replays, whose encoding a dialect keeps (None: drawn now)."""


class IdSource(Protocol):
    """How a venue numbers updates."""

    def initial(self, rng: random.Random) -> int: ...

    def next_range(self, last_id: int, rng: random.Random, span: int = 0) -> tuple[int, int]:
        """The ids of the next event: ``span`` of them (0: as many as the venue's own draw)."""


class ContiguousIds:
    """Binance spot: per symbol, each event starts right after the previous one ends."""

    def initial(self, rng: random.Random) -> int:
        return rng.randrange(10**9, 6 * 10**10)

    def next_range(self, last_id: int, rng: random.Random, span: int = 0) -> tuple[int, int]:
        return last_id + 1, last_id + (span or 1 + rng.getrandbits(2))


class SharedIds:
    """Binance futures: one counter for every symbol of the venue, plus random holes.

    Other symbols' updates use up ids, so the next ``U`` of a symbol is not its previous ``u`` + 1;
    the extra holes make that true even when a single symbol is active.
    """

    def __init__(self, rng: random.Random) -> None:
        self.counter = rng.randrange(10**11, 9 * 10**11)

    def initial(self, rng: random.Random) -> int:
        self.counter += 1 + rng.randrange(50)
        return self.counter

    def next_range(self, last_id: int, rng: random.Random, span: int = 0) -> tuple[int, int]:
        first = self.counter + 2 + rng.getrandbits(5)
        self.counter = first + (span - 1 if span else rng.getrandbits(3))
        return first, self.counter


class Sequence:
    """Alpaca has no ids; a plain per-symbol sequence numbers updates for the truth endpoint only."""

    def initial(self, rng: random.Random) -> int:
        return 0

    def next_range(self, last_id: int, rng: random.Random, span: int = 0) -> tuple[int, int]:
        return last_id + 1, last_id + 1


class Motion:
    """How a venue moves its books, shared by all its markets; a market's own setting overrides it.

    Control actions change it at run time; ``reset`` puts back the start-up settings.
    """

    __slots__ = ("_config", "deep_share", "drift", "rate")

    def __init__(self, config: VenueConfig) -> None:
        self._config = config
        self.rate = config.rate
        """Updates per second per active symbol."""
        self.drift = config.drift
        """Where and how fast the mids walk (see ``drift.py``)."""
        self.deep_share = config.deep_share
        """Share of each update's operations at a uniformly random depth."""

    def reset(self) -> None:
        self.rate = self._config.rate
        self.drift = self._config.drift
        self.deep_share = self._config.deep_share


class Market:
    """One symbol's book, ids, history and per-symbol faults."""

    def __init__(
        self,
        spec: SymbolSpec,
        status: str,
        style: LevelStyle,
        ids: IdSource,
        config: VenueConfig,
        rng: random.Random,
        motion: Motion,
        levels: int,
        activity: Activity = EVERY_UPDATE,
        time_step_ns: int = 1,
    ) -> None:
        """``time_step_ns``: the least time between two updates' stamps (venues whose clients can
        only tell updates apart by their millisecond get 1 ms, so the truth can be asked by it)."""
        self.spec = spec
        self.name = spec.name
        self.style = style
        self.status = status
        self._book = Book()
        self.rng = rng
        self._ids = ids
        self.generator = Generator(rng, levels, spec.mean_qty, spec.mid_ticks)
        self.walk = Walk(rng, spec.mid_ticks)
        if status == TRADING:
            self.generator.seed(self._book)
        self.last_id = ids.initial(rng)
        self.last_txn_ms = int(time.time() * 1000)
        self.last_t_ns = time.time_ns()
        self._time_step_ns = time_step_ns
        self.history = History(
            self.last_id,
            self.last_t_ns,
            config.history_max_events,
            config.history_min_events,
            config.history_seconds,
        )
        self.motion = motion
        self.activity = activity.share
        """This symbol's share of the venue's rate (its place in the activity profile)."""
        self.cycle: Cycle | None = None
        """A replayed profile's recorded frames (``cycle.py``); None: updates drawn as they go."""
        if activity.replayed and status == TRADING:
            self.cycle = record(self.generator, ChangeSet(self._book), activity, rng)
        self._unapplied = array("q")
        """Replayed frames sent but not applied to the book yet (``book`` applies them), as
        ``UNAPPLIED_FIELDS`` numbers each."""
        self._disturbed = False
        """A fault changed the book of a replayed market: a turn of its cycle no longer leaves the
        book as it was, so every frame must be applied."""
        self.rate: float | None = None
        """Updates per second for this symbol; None follows the venue's rate times ``activity``."""
        self.drift: Drift | None = None
        """This symbol's drift; None follows the venue's."""
        self.deep_share: float | None = None
        """This symbol's share of operations at depth; None follows the venue's."""
        self.stall_until = 0.0
        """Monotonic time before which the symbol makes no updates (the stall fault)."""
        self.skip_next = 0
        """Updates still to be withheld from every client (the gap fault)."""
        self.withhold_until = 0.0
        """Monotonic time before which updates are made but sent to nobody (the withhold fault) ..."""
        self.withheld: list[Update] | None = None
        """... and kept to be sent when it ends (None: they are lost, the stream resumes with a gap)."""
        self.schedule_token = 0
        self.cross_pending: bool | None = None
        """A cross fault to apply on the next update: True = locked, False = crossed."""
        self.cross_updates = 0
        self._cross_tick: int | None = None
        self._cross_left = 0

    def withholding(self, update: Update) -> bool:
        """True if the withhold fault takes ``update`` (kept for later, or dropped). Kept ones are
        kept until they are released, even past the end of the fault: an update made between
        its end and the release must not overtake them."""
        if self.withheld is not None:
            self.withheld.append(update)
            return True
        return self.withhold_until > time.monotonic()

    def release_withheld(self) -> list[Update]:
        """The fault is over: the updates it kept, in order (none when it resumes with a gap)."""
        kept, self.withheld = self.withheld or [], None
        self.withhold_until = 0.0
        return kept

    @property
    def book(self) -> Book:
        """The true book after the last update made, replayed frames included."""
        if self._unapplied:
            self._apply_unapplied()
        return self._book

    @property
    def trading(self) -> bool:
        return self.status == TRADING

    @property
    def effective_rate(self) -> float:
        return self.rate if self.rate is not None else self.motion.rate * self.activity

    def period_s(self) -> float:
        """Seconds from the update just made to the next (the rate must be positive).

        A replayed market runs on windows (the venue's rate over its busy share) and skips the idle
        ones its last frame counted.
        """
        rate = self.effective_rate
        if self.cycle is None:
            return 1.0 / rate
        return self.cycle.last_gap * self.activity / rate

    @property
    def effective_drift(self) -> Drift:
        return self.drift if self.drift is not None else self.motion.drift

    @property
    def effective_deep_share(self) -> float:
        return self.deep_share if self.deep_share is not None else self.motion.deep_share

    def step(self, extra: Callable[[ChangeSet], None] | None = None, generate: bool = True) -> Update:
        """Make one update: the drift's and the generator's changes, then any fault's ``extra``
        changes, recorded. A sweep of the drift is the whole generated part of its update. A
        replayed market sends its next recorded frame instead; a fault's update of it carries only
        the fault's changes."""
        if self.cycle is not None and generate and extra is None and not self._crossing:
            return self._replay(self.cycle)
        self._disturbed = self.cycle is not None
        changes = ChangeSet(self.book)
        if generate and self.cycle is None:
            rate = self.effective_rate
            period_s = 1 / rate if rate > 0 else 0.0
            if not self.walk.step(changes, self.generator, self.effective_drift, period_s):
                self.generator.step(changes, self.effective_deep_share)
        self._apply_cross(changes)
        if extra is not None:
            extra(changes)
        return self._commit(changes)

    @property
    def _crossing(self) -> bool:
        return self.cross_pending is not None or self._cross_tick is not None

    def _replay(self, cycle: Cycle) -> Update:
        """The cycle's next recorded frame, numbered and timed; its levels reach the book when
        someone reads the book (``book``), so a frame costs the venue no work per level.

        Unread frames are kept up to two turns of the cycle (and the history's minimum); past that,
        as long as no fault disturbed the book, the oldest whole turn is dropped unapplied: a turn
        leaves the book as it found it, and the history forgets the states it skipped (410).
        """
        frame = cycle.next()
        update = self._stamp(frame.bids, frame.asks, frame)
        unapplied = self._unapplied
        unapplied.extend((update.first_id, update.last_id, update.prev_id, update.t_ns, cycle.played))
        turn = len(cycle.frames)
        if len(unapplied) > (2 * turn + self.history.min_events) * UNAPPLIED_FIELDS:
            if self._disturbed:
                self._apply_unapplied()
            else:
                del unapplied[: turn * UNAPPLIED_FIELDS]
                self.history.skip()
        return update

    def _apply_unapplied(self) -> None:
        """Apply the replayed frames not applied yet, each recorded in history as it is applied."""
        unapplied, self._unapplied = self._unapplied, array("q")
        assert self.cycle is not None  # only a replayed market leaves frames unapplied
        frames = self.cycle.frames
        bids, asks, at = self._book.bids.set, self._book.asks.set, time.monotonic()
        for start in range(0, len(unapplied), UNAPPLIED_FIELDS):
            first_id, last_id, prev_id, t_ns, played = unapplied[start : start + UNAPPLIED_FIELDS]
            frame = frames[played]
            undo = array("q")
            for tick, qty in frame.bids:
                undo.extend((1, tick, bids(tick, qty)))
            for tick, qty in frame.asks:
                undo.extend((0, tick, asks(tick, qty)))
            self.history.record(first_id, last_id, prev_id, t_ns, at, undo)

    def empty_side(self, changes: ChangeSet, bids: bool, asks: bool) -> None:
        """Delete every level of the chosen sides (the empty-book fault)."""
        for is_bid, wanted in ((True, bids), (False, asks)):
            if wanted:
                for tick, _ in self.book.side(is_bid).levels():
                    changes.set(is_bid, tick, 0)

    def _apply_cross(self, changes: ChangeSet) -> None:
        if self.cross_pending is not None:
            self._cross_tick = self.generator.force_cross(changes, self.book, locked=self.cross_pending)
            self._cross_left = self.cross_updates
            self.cross_pending = None
        elif self._cross_tick is not None:
            self._cross_left -= 1
            if self._cross_left <= 0:
                changes.set(True, self._cross_tick, 0)
                self._cross_tick = None

    def _commit(self, changes: ChangeSet) -> Update:
        undo = array("q")
        for (is_bid, tick), old in changes.old.items():
            undo.extend((int(is_bid), tick, old))
        update = self._stamp(changes.side_changes(True), changes.side_changes(False), None)
        self.history.record(
            update.first_id, update.last_id, update.prev_id, update.t_ns, time.monotonic(), undo
        )
        return update

    def _stamp(self, bids: Levels, asks: Levels, frame: Frame | None) -> Update:
        """Number and time the next update."""
        rng = self.rng
        first_id, last_id = self._ids.next_range(self.last_id, rng, frame.span if frame else 0)
        now_ns = time.time_ns()
        t_ns = max(now_ns, self.last_t_ns + self._time_step_ns)
        event_ms = now_ns // 1_000_000
        txn_ms = max(event_ms - 1 - rng.getrandbits(1), self.last_txn_ms)
        update = Update(
            first_id,
            last_id,
            self.last_id,
            event_ms,
            txn_ms,
            t_ns,
            bids,
            asks,
            frame,
        )
        self.last_id, self.last_t_ns, self.last_txn_ms = last_id, t_ns, txn_ms
        return update


class Markets:
    """A venue's catalogue, with a market built for a symbol the first time it is used."""

    def __init__(
        self,
        venue: str,
        specs: list[SymbolSpec],
        ids: IdSource,
        style_for: Callable[[SymbolSpec], LevelStyle],
        config: VenueConfig,
        on_activate: Callable[[Market], None],
        deep_symbols: int = 0,
        time_step_ns: int = 1,
    ) -> None:
        self.venue = venue
        self._time_step_ns = time_step_ns
        self.specs = {spec.name: spec for spec in specs}
        self.by_lower = {spec.name.lower(): spec.name for spec in specs}
        self._rank = {spec.name: rank for rank, spec in enumerate(specs, 1)}
        self.active: dict[str, Market] = {}
        self.statuses = {spec.name: spec.status for spec in specs}
        self.catalogue_version = 0
        """Bumped when a status changes, so cached exchangeInfo bodies know to rebuild."""
        self.motion = Motion(config)
        self._profile = PROFILES[config.profile]
        self._start_levels = {spec.name: config.deep_levels for spec in specs[:deep_symbols]}
        self.levels = dict(self._start_levels)
        """Levels a side of the books not built yet whose depth is not ``config.levels``."""
        self._ids = ids
        self._style_for = style_for
        self._config = config
        self._on_activate = on_activate
        self._requested: dict[str, None] = {}

    def request(self, name: str) -> None:
        """Build the market for a listed ``name`` soon, in slices of the event loop."""
        if name in self.active or name in self._requested:
            return
        self._requested[name] = None
        if len(self._requested) == 1:
            asyncio.get_running_loop().call_soon(self._build_requested)

    def _build_requested(self) -> None:
        deadline = time.perf_counter() + BUILD_SLICE_S
        while self._requested and time.perf_counter() < deadline:
            self.get(next(iter(self._requested)))
        if self._requested:
            asyncio.get_running_loop().call_soon(self._build_requested)

    def get(self, name: str) -> Market | None:
        """The market for ``name``, built and started on first use; None if not listed."""
        market = self.active.get(name)
        if market is not None:
            return market
        spec = self.specs.get(name)
        if spec is None:
            return None
        self._requested.pop(name, None)
        rng = random.Random(f"{self._config.seed}:{self.venue}:{name}")
        market = Market(
            spec,
            self.statuses[name],
            self._style_for(spec),
            self._ids,
            self._config,
            rng,
            self.motion,
            self.levels.get(name, self._config.levels),
            self._profile.activity(self._rank[name], self.venue == "futures", self._config.rate_skew),
            self._time_step_ns,
        )
        self.active[name] = market
        self._on_activate(market)
        return market

    def reset(self) -> None:
        """Back to the start-up settings (a book already built keeps its depth)."""
        self.motion.reset()
        self.levels = dict(self._start_levels)

    def set_status(self, name: str, status: str) -> None:
        self.statuses[name] = status
        market = self.active.get(name)
        if market is not None:
            market.status = status
        self.catalogue_version += 1
