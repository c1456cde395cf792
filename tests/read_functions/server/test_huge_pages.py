"""The read server asks glibc for huge pages by re-executing itself once with the tunable set."""

from __future__ import annotations

import pytest

from read_functions.server.huge_pages import TUNABLE, environment_with_huge_pages

MADVISE = "always [madvise] never\n"


def test_the_tunable_is_added_to_the_environment() -> None:
    env = environment_with_huge_pages({"PATH": "/bin"}, MADVISE)
    assert env == {"PATH": "/bin", "GLIBC_TUNABLES": TUNABLE}


def test_other_tunables_are_kept() -> None:
    tunables = {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}
    env = environment_with_huge_pages(tunables, "[always] madvise never")
    assert env is not None
    assert env["GLIBC_TUNABLES"] == f"glibc.malloc.arena_max=2:{TUNABLE}"


@pytest.mark.parametrize(
    ("tunables", "thp_mode"),
    [
        ("", None),  # no transparent huge pages in this kernel
        ("", "always madvise [never]\n"),  # switched off
        (TUNABLE, MADVISE),  # already re-executed: never loops
        ("glibc.malloc.hugetlb=0", MADVISE),  # the operator chose otherwise
    ],
)
def test_no_restart_when_it_would_change_nothing(tunables: str, thp_mode: str | None) -> None:
    env = {"GLIBC_TUNABLES": tunables} if tunables else {}
    assert environment_with_huge_pages(env, thp_mode) is None
