"""What a caller's request headers ask of an answer: revalidation (``If-None-Match``) and gzip."""

from __future__ import annotations


def etag_matches(if_none_match: str, etag: str) -> bool:
    """Weak comparison (RFC 9110 13.1.2): ``W/`` prefixes are ignored on both sides."""
    wanted = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") in (wanted, "*") for tag in if_none_match.split(","))


def accepts_gzip(accept_encoding: str) -> bool:
    for item in accept_encoding.split(","):
        coding, _, params = item.partition(";")
        if coding.strip().lower() in ("gzip", "x-gzip"):
            return params.replace(" ", "").lower() not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False
