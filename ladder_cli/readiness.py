"""What ``ladder up`` says about the stack's readiness: one line each time it changes.

The read API's ``/readyz`` knows whether the stores answer and whether every served exchange has
its market list, and why not (the ingest nodes record each catalog fetch's outcome). ``ladder up``
polls it on loopback once a second and prints one line when the answer changes: ready, with what
was loaded, or not ready, with what failed and what to do about it. A venue out of reach is the
usual first-hour failure on a machine without internet, so that line names ``make demo``.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

OFFLINE_HINT = (
    "No internet here? `make demo` (ladder up --venue fake) runs the same stack against the built-in "
    "fake venue."
)

FIRST_FETCH_PATIENCE_S = 10.0


def probe(url: str, timeout_s: float = 2.0) -> tuple[int, dict[str, Any]]:
    """``(status, body)`` of ``GET url/readyz`` (status 0 when there was no answer)."""
    context = None
    if url.startswith("https:"):  # our own child on loopback, maybe with a self-signed certificate
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=timeout_s, context=context) as answer:  # noqa: S310 - our URL
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as refused:
        try:
            return refused.code, json.loads(refused.read() or b"{}")
        except ValueError:
            return refused.code, {}
    except (OSError, ValueError) as exc:
        return 0, {"error": {"message": f"no answer ({exc})"}}


def summary(status: int, body: dict[str, Any], venue: str) -> str:
    """The one line that says what ``/readyz`` answered, and what to do when it is not ready."""
    exchanges: dict[str, dict[str, Any]] = body.get("exchanges") or {}
    if status == 200:
        loaded = ", ".join(f"{e} ({s.get('markets', 0)} markets)" for e, s in sorted(exchanges.items()))
        return f"Ladder is ready: market lists loaded for {loaded or 'no exchange yet'}."
    error = body.get("error") or {}
    message = error.get("message") or f"/readyz answered {status}"
    if error.get("code") == "catalog_unavailable":
        failing = [e for e, s in sorted(exchanges.items()) if s.get("phase") == "unavailable"]
        hint = OFFLINE_HINT if venue == "binance" and failing else "The nodes retry with backoff."
        return f"Ladder is NOT ready: {message}. {hint}"
    return f"Ladder is NOT ready: {message}. See the log above."


class ReadinessWatch:
    """Prints :func:`summary` whenever it changes, from a daemon thread, until :meth:`stop`."""

    def __init__(
        self, url: str, venue: str, *, interval_s: float = 1.0, say: Callable[[str], None] | None = None
    ) -> None:
        self._url = url
        self._venue = venue
        self._interval_s = interval_s
        self._say = say or (lambda line: print(line, flush=True))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="readiness")

    def start(self) -> ReadinessWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        said = None
        started = time.monotonic()
        while True:
            status, body = probe(self._url)
            line = summary(status, body, self._venue)
            # No answer at all: the supervisor reports the child. A first fetch under way is no news
            # for the first seconds (it is usually over in one).
            news = status != 0 and line != said
            if news and (time.monotonic() - started > FIRST_FETCH_PATIENCE_S or not _fetching(body)):
                self._say(line)
                said = line
            if self._stop.wait(self._interval_s):
                return


def _fetching(body: dict[str, Any]) -> bool:
    """True when what keeps the stack from being ready is only first fetches on their way."""
    exchanges: dict[str, dict[str, Any]] = body.get("exchanges") or {}
    phases = {s.get("phase") for s in exchanges.values()}
    return (body.get("error") or {}).get("code") == "catalog_unavailable" and phases <= {"fetching", "loaded"}
