"""All venue connections of one exchange on this node: which replica rides on which, and rollovers.

Placement: a replica goes on the first connection with room that does not carry its symbol yet
(so two replicas of one book on one node always ride on different sockets), else on a new one.

Rollover (make-before-break): a connection that reaches its age limit, or hears ``serverShutdown``,
asks the feed to replace it. The feed opens a successor in its place, adds every route of the old
connection to it and tells each replica to hand over (``BookReplica.begin_handover``); replicas
leave the old connection as they splice onto the new one. When the old connection is empty, or
after ``handover_timeout_s`` (the remaining, quiet, replicas then move over as they are), it is
closed.
"""

from __future__ import annotations

import asyncio
import logging
import random

from ingest_nodes.connection import StreamConnection, rollover_age
from ingest_nodes.exchanges import ExchangeSpec
from ingest_nodes.replica import BookReplica
from ingest_nodes.stats import ConnectionStats

log = logging.getLogger(__name__)


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
    ) -> None:
        self.spec = spec
        self.closed_stats = ConnectionStats()
        """Totals of connections that are gone (so node-wide counters never go down)."""
        self._per_connection = streams_per_connection
        self._max_age_s = max_age_s
        self._jitter = rollover_jitter
        self._handover_timeout_s = handover_timeout_s
        self._rng = rng or random.Random()
        self._active: list[StreamConnection] = []
        self._retiring: dict[StreamConnection, asyncio.Task[None]] = {}
        self._closing: set[StreamConnection] = set()  # still counted until their stats are in
        self._opened = 0

    @property
    def connections(self) -> list[StreamConnection]:
        """Every open connection, retiring ones included."""
        return [*self._active, *self._retiring]

    def attach(self, replica: BookReplica) -> None:
        for connection in self._active:
            if connection.has_room and not connection.carries(replica.symbol):
                break
        else:
            connection = self._new_connection()
            self._active.append(connection)
            connection.start()
        connection.add(replica.symbol, replica)
        replica.source = connection

    async def detach(self, replica: BookReplica) -> None:
        for connection in replica.connections():
            connection.remove(replica.symbol)
            if not len(connection) and connection in self._active:
                self._active.remove(connection)
                await self._close(connection)
        replica.source = None

    async def close(self) -> None:
        """Close every connection at once (each may wait out a closing handshake)."""
        for task in self._retiring.values():
            task.cancel()
        await asyncio.gather(*self._retiring.values(), return_exceptions=True)
        connections = self.connections
        self._active.clear()
        self._retiring.clear()
        await asyncio.gather(*(self._close(connection) for connection in connections))

    def _new_connection(self) -> StreamConnection:
        self._opened += 1
        return StreamConnection(
            self.spec,
            name=f"{self.spec.id}#{self._opened}",
            max_streams=self._per_connection,
            max_age_s=rollover_age(self._max_age_s, self._jitter, self._rng),
            on_rollover=self._rollover,
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
            successor.add(symbol, route)
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
