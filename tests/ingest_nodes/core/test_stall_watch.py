"""Each book's rhythm, the suspect silence, and what a check's answer means."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ingest_nodes.core.stall_watch import Rhythm, StallPolicy, Verdict, judge

POLICY = StallPolicy()
FLOOR_MS, CEILING_MS, GRACE_MS = POLICY.floor_ms, POLICY.ceiling_ms, POLICY.grace_ms


def busy(every_ms: int, events: int = 40) -> Rhythm:
    rhythm = Rhythm(0)
    for i in range(1, events + 1):
        rhythm.event(i * every_ms)
    return rhythm


def test_a_busy_book_is_suspect_after_the_floor() -> None:
    rhythm = busy(100)  # ten events a second
    assert rhythm.suspect_at() == rhythm.last_event_ms + FLOOR_MS


def test_a_book_that_showed_no_gap_yet_waits_the_unknown_silence() -> None:
    rhythm = Rhythm(5000)
    assert rhythm.suspect_at() == 5000 + POLICY.unknown_ms
    rhythm.event(5200)
    assert rhythm.suspect_at() == 5200 + FLOOR_MS  # 3 x 200 ms is less than the floor


def test_a_slow_book_is_suspect_after_three_of_its_long_gaps_and_one_odd_pause_does_not_count() -> None:
    rhythm = busy(2000)
    rhythm.event(rhythm.last_event_ms + 60_000)  # one long pause among them
    rhythm.event(rhythm.last_event_ms + 2000)
    assert rhythm.suspect_at() == rhythm.last_event_ms + 6000
    for _ in range(4):
        rhythm.event(rhythm.last_event_ms + 5000)  # a slower spell: the rhythm follows it
    assert rhythm.suspect_at() == rhythm.last_event_ms + 15_000


def test_quiet_confirmations_back_off_and_the_next_event_resets_them() -> None:
    rhythm = busy(100)
    first = rhythm.suspect_at()
    rhythm.quiet(first)
    assert rhythm.confirmed_ms == first
    assert rhythm.suspect_at() == first + 2 * FLOOR_MS
    rhythm.quiet(first + 2 * FLOOR_MS)
    assert rhythm.suspect_at() == first + 2 * FLOOR_MS + 4 * FLOOR_MS
    rhythm.event(first + 2 * FLOOR_MS + 100)  # the long quiet gap is one odd pause
    assert rhythm.suspect_at() == rhythm.last_event_ms + FLOOR_MS


def test_a_restart_forgets_the_silence_and_the_confirmations() -> None:
    rhythm = busy(100)
    rhythm.quiet(rhythm.suspect_at())
    rhythm.restart(100_000)
    assert rhythm.confirmed_ms is None and rhythm.suspect_at() == 100_000 + FLOOR_MS


def test_silence_is_always_checked_within_the_ceiling() -> None:
    rhythm = busy(10_000_000, events=3)  # months between events
    assert rhythm.suspect_at() == rhythm.last_event_ms + CEILING_MS
    for _ in range(30):
        rhythm.quiet(rhythm.suspect_at())
    assert rhythm.suspect_at() - rhythm.confirmed_ms <= CEILING_MS  # type: ignore[operator]


def test_a_check_is_quiet_at_our_id_and_stalled_only_after_the_grace() -> None:
    assert judge(venue_id=100, book_id=100, asked_ms=0, now_ms=0, grace_ms=GRACE_MS) is Verdict.QUIET
    assert judge(venue_id=99, book_id=100, asked_ms=0, now_ms=0, grace_ms=GRACE_MS) is Verdict.QUIET
    assert (
        judge(venue_id=105, book_id=100, asked_ms=0, now_ms=GRACE_MS - 1, grace_ms=GRACE_MS)
        is Verdict.CATCHING_UP
    )
    assert judge(venue_id=105, book_id=100, asked_ms=0, now_ms=GRACE_MS, grace_ms=GRACE_MS) is Verdict.STALLED
    assert (
        judge(venue_id=105, book_id=105, asked_ms=0, now_ms=GRACE_MS, grace_ms=GRACE_MS) is Verdict.QUIET
    )  # it caught up


def test_the_suspect_time_is_worked_out_again_after_every_event_check_and_restart() -> None:
    rhythm = busy(2000)
    first = rhythm.suspect_at()
    assert rhythm.suspect_at() == first  # asked again: the same answer
    rhythm.quiet(first)
    confirmed = rhythm.suspect_at()
    assert confirmed == first + 2 * 6000  # from the confirmation, backed off once
    rhythm.event(first + 1000)
    assert rhythm.suspect_at() == first + 1000 + 6000
    rhythm.restart(first + 5000)
    assert rhythm.suspect_at() == first + 5000 + 6000 and rhythm.confirmed_ms is None


@given(
    st.builds(
        StallPolicy,
        factor=st.integers(1, 5),
        floor_ms=st.integers(0, 5000),
        unknown_ms=st.integers(0, 20_000),
        ceiling_ms=st.integers(0, 50_000),
    ),
    st.lists(
        st.tuples(st.sampled_from(["event", "quiet", "restart", "ask"]), st.integers(0, 30_000)), max_size=60
    ),
)
def test_suspect_answers_as_suspect_at_does_however_the_silence_came(
    policy: StallPolicy, steps: list[tuple[str, int]]
) -> None:
    now = 0
    rhythm = Rhythm(now, policy)
    for action, step in steps:
        now += step
        if action == "event":
            rhythm.event(now)
        elif action == "quiet":
            rhythm.quiet(now)
        elif action == "restart":
            rhythm.restart(now)
        for at in (now, now + policy.floor_ms - 1, now + policy.floor_ms, now + step):
            assert rhythm.suspect(at) is (at >= rhythm.suspect_at())
