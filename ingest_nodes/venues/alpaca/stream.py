"""Alpaca's crypto market-data stream (v1beta3) behind the venue boundary.

The session: the venue says ``connected``; the client authenticates within 10 s with
``{"action":"auth","key":...,"secret":...}`` and hears ``authenticated`` (``Ready``), or an error:
402 auth failed, 404 auth timeout, 406 connection limit exceeded (usually one connection per key),
409/411 a plan without this feed; all of them end the session (``Refused``). Books are added with
``{"action":"subscribe","orderbooks":[...]}`` (many pairs in one message); the venue answers each
subscribe or unsubscribe, in order and naming no request, with the full subscription set, or
with an error such as 405 symbol limit exceeded (``Rejected``: the set is unchanged). Data frames
are arrays that may carry messages of several pairs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Final

import orjson

from ingest_nodes.core.events import DepthUpdate
from ingest_nodes.venues.alpaca.parse import parse_alpaca_frame
from ingest_nodes.venues.alpaca.schemas import AlpacaError, AlpacaSubscription, AlpacaSuccess
from ingest_nodes.venues.credentials import Credential
from ingest_nodes.venues.stream import Acked, Ready, Refused, Rejected, StreamEvent

LOCATIONS: Final = ("us", "us-1", "eu-1")
"""Alpaca's own exchange, Kraken US, Kraken EU."""
SESSION_ERRORS: Final = frozenset({401, 402, 404, 406, 409, 411})
"""Errors that are about the session (its key, its plan), not about one request."""
CONTROL_MESSAGES_PER_S: Final = 10
"""Alpaca names no client message limit; subscriptions are few and batched anyway."""


def stream_url(base_url: str, location: str) -> str:
    """``wss://stream.data.alpaca.markets`` + ``us`` -> ``.../v1beta3/crypto/us``."""
    if location not in LOCATIONS:
        raise ValueError(f"Alpaca crypto location must be one of {', '.join(LOCATIONS)}, not {location!r}")
    return f"{base_url.rstrip('/')}/v1beta3/crypto/{location}"


class AlpacaStream:
    """One connection's view of the Alpaca stream, with the one key it authenticates with."""

    sequenced = False
    handshake = True
    keepalive = None  # the venue pings; the client library answers
    requests_per_hour = None
    topics_per_request = None
    control_messages_per_s = CONTROL_MESSAGES_PER_S

    def __init__(self, url: str, credential: Credential | None) -> None:
        self.url = url
        self._credential = credential
        self._pending: deque[int] = deque()

    def topic(self, symbol: str, depth: int) -> str:
        """The pair: a reset is the whole book, whatever the depth."""
        return symbol

    def opening(self) -> list[str]:
        """The auth message (a new socket: no request is pending any more)."""
        self._pending.clear()
        if self._credential is None:
            # The venue answers 402 (or 404 after its timeout): the books then say why.
            return [orjson.dumps({"action": "auth", "key": "", "secret": ""}).decode()]
        auth = {
            "action": "auth",
            "key": self._credential.key_id.get_secret_value(),
            "secret": self._credential.secret.get_secret_value(),
        }
        return [orjson.dumps(auth).decode()]

    def requests(self, subscribe: bool, topics: Sequence[str], request_id: int) -> list[str]:
        self._pending.append(request_id)
        action = "subscribe" if subscribe else "unsubscribe"
        return [orjson.dumps({"action": action, "orderbooks": list(topics)}).decode()]

    def read(self, raw: str | bytes, ingest_time: int) -> Sequence[StreamEvent]:
        events: list[StreamEvent] = []
        for message in parse_alpaca_frame(raw, ingest_time):
            if type(message) is DepthUpdate:
                events.append(message)
            elif isinstance(message, AlpacaSubscription):
                events.append(Acked(self._answered()))
            elif isinstance(message, AlpacaSuccess):
                if message.msg == "authenticated":
                    events.append(Ready())
            elif isinstance(message, AlpacaError):
                if message.code in SESSION_ERRORS:
                    reason = "connection_limit" if message.code == 406 else "credentials_refused"
                    events.append(Refused(reason, message.code, message.msg))
                elif message.code in (400, 405, 410):
                    events.append(Rejected(self._answered(), message.code, message.msg))
        return events

    def _answered(self) -> int | None:
        """The request an answer belongs to: the oldest one pending (Alpaca answers in order)."""
        return self._pending.popleft() if self._pending else None
