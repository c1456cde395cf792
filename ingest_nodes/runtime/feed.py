"""All venue connections of one exchange on this node: which replica rides on which, and rollovers.

Placement: a replica goes on the first connection with room that does not carry its venue book
yet (so two replicas of one book on one node always ride on different sockets), else on a new one.
A market the catalogue lists as another name of a venue book (``aliases``: Coinbase's BTC-USDC is
BTC-USD's book) rides under that book's name, so it is placed apart from the book's own replicas
too (``connection.py`` says why).

Rollover (make-before-break): a connection that reaches its age limit, or hears ``serverShutdown``,
asks the feed to replace it. The feed opens a successor in its place, adds every route of the old
connection to it and tells each replica to hand over (``BookReplica.begin_handover``); replicas
leave the old connection as they splice onto the new one. When the old connection is empty, or
after ``handover_timeout_s`` (the remaining, quiet, replicas then move over as they are), it is
closed.

Venues that authenticate each connection with a key and allow one connection per key (Alpaca) get
``credentials``: every connection holds one of them, so the feed opens at most one connection per
key and never rolls connections over (a successor would need a second key for the same books; the
venue names no age limit). A replica that finds no connection with room and no free key waits,
told why (``credentials_missing``), until a key is free.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from typing import Literal

from ingest_nodes.ops.stats import ConnectionStats
from ingest_nodes.runtime.connection import ConnectPacer, StreamConnection, rollover_age
from ingest_nodes.runtime.replica import BookReplica
from ingest_nodes.venues.credentials import Credential
from ingest_nodes.venues.registry import ExchangeSpec
from ingest_nodes.venues.stream import Refused

log = logging.getLogger(__name__)

_NO_FREE_KEY = Refused("credentials_missing", None, "no free venue key on this node for another connection")


class ExchangeFeed:
    """Places replicas on connections and replaces connections that must go (module docstring)."""

    def __init__(
        self,
        spec: ExchangeSpec,
        *,
        streams_per_connection: int,
        max_age_s: float,
        rollover_jitter: float,
        handover_timeout_s: float,
        rng: random.Random | None = None,
        credentials: Sequence[Credential] | None = None,
    ) -> None:
        """``credentials``: the keys this node may connect with, one connection each (None: the
        venue needs none, and connections are opened as needed)."""
        self.spec = spec
        self.closed_stats = ConnectionStats()
        """Totals of connections that are gone (so node-wide counters never go down)."""
        self._per_connection = min(
            streams_per_connection, spec.streams_per_connection or streams_per_connection
        )
        self._pacer = None if spec.connects_per_s is None else ConnectPacer(spec.connects_per_s)
        self._max_age_s = max_age_s
        self._jitter = rollover_jitter
        self._handover_timeout_s = handover_timeout_s
        self._rng = rng or random.Random()
        self._active: list[StreamConnection] = []
        self._retiring: dict[StreamConnection, asyncio.Task[None]] = {}
        self._closing: set[StreamConnection] = set()  # still counted until their stats are in
        self._opened = 0
        self._credentials = None if credentials is None else list(credentials)
        self._waiting: dict[BookReplica, None] = {}
        self.aliases: dict[str, str] = {}
        """Market -> the market whose venue book it is, from the catalogue (the node keeps it current)."""

    @property
    def connections(self) -> list[StreamConnection]:
        """Every open connection, retiring ones included."""
        return [*self._active, *self._retiring]

    def venue_name(self, symbol: str) -> str:
        """The name the venue gives ``symbol``'s book: the book it is an alias of, or its own."""
        return self.aliases.get(symbol, symbol)

    def attach(self, replica: BookReplica) -> None:
        name = self.venue_name(replica.symbol)
        for connection in self._active:
            if connection.has_room and not connection.carries(name):
                break
        else:
            credential = self._free_credential()
            if credential is False:
                self._waiting[replica] = None
                replica.on_refused(None, _NO_FREE_KEY)
                return
            connection = self._new_connection(credential)
            self._active.append(connection)
            connection.start()
        connection.add(replica.symbol, replica, name)
        replica.source = connection

    def set_credentials(self, credentials: Sequence[Credential]) -> None:
        """The keys this node may use now (its leases); replicas waiting for a key try again."""
        self._credentials = list(credentials)
        for waiting in list(self._waiting):
            del self._waiting[waiting]
            self.attach(waiting)

    def _free_credential(self) -> Credential | Literal[False] | None:
        """A key no connection holds (None: the venue needs none; False: every key is taken)."""
        if self._credentials is None:
            return None
        held = {c.credential for c in self.connections}
        return next((c for c in self._credentials if c not in held), False)

    async def detach(self, replica: BookReplica) -> None:
        if replica in self._waiting:
            del self._waiting[replica]
            return
        for connection in replica.connections():
            connection.remove(replica.symbol)
            if not len(connection) and connection in self._active:
                self._active.remove(connection)
                await self._close(connection)
        replica.source = None
        for waiting in list(self._waiting):
            del self._waiting[waiting]
            self.attach(waiting)

    async def close(self) -> None:
        """Close every connection at once (each may wait out a closing handshake)."""
        for task in self._retiring.values():
            task.cancel()
        await asyncio.gather(*self._retiring.values(), return_exceptions=True)
        connections = self.connections
        self._waiting.clear()
        self._active.clear()
        self._retiring.clear()
        await asyncio.gather(*(self._close(connection) for connection in connections))

    def _new_connection(self, credential: Credential | None = None) -> StreamConnection:
        self._opened += 1
        keyed = self._credentials is not None
        return StreamConnection(
            self.spec,
            name=f"{self.spec.id}#{self._opened}",
            max_streams=self._per_connection,
            max_age_s=None if keyed else rollover_age(self._max_age_s, self._jitter, self._rng),
            on_rollover=None if keyed else self._rollover,
            credential=credential,
            pacer=self._pacer,
        )

    def _rollover(self, old: StreamConnection, reason: str) -> None:
        if old not in self._active:
            return
        successor = self._new_connection()
        self._active[self._active.index(old)] = successor
        old.retire()
        old.stats.rollovers += 1
        log.info("%s: handing %d books over to %s (%s)", old.name, len(old), successor.name, reason)
        routes = old.routes()
        for symbol, route in routes:
            successor.add(symbol, route, old.venue_name(symbol))
        successor.start()
        for _symbol, route in routes:
            route.begin_handover(old, successor)
        self._retiring[old] = asyncio.get_running_loop().create_task(self._retire(old))

    async def _retire(self, old: StreamConnection) -> None:
        if not await old.wait_empty(self._handover_timeout_s):
            log.info(
                "%s: %d quiet books reached no splice point; they move over as they are", old.name, len(old)
            )
            for _symbol, route in old.routes():
                route.finish_handover(old)
        self._retiring.pop(old, None)
        await self._close(old)

    async def _close(self, connection: StreamConnection) -> None:
        self._closing.add(connection)
        try:
            await connection.close()
        finally:
            self.closed_stats.add(connection.stats)
            self._closing.discard(connection)

    def connection_totals(self) -> ConnectionStats:
        """Counters summed over every connection this feed ever opened (they never go down)."""
        totals = ConnectionStats()
        totals.add(self.closed_stats)
        for connection in (*self.connections, *self._closing):
            totals.add(connection.stats)
        return totals
