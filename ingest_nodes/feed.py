"""All venue connections of one exchange on this node, and which replica rides on which."""

from __future__ import annotations

from ingest_nodes.connection import StreamConnection
from ingest_nodes.exchanges import ExchangeSpec
from ingest_nodes.replica import BookReplica


class ExchangeFeed:
    """Places replicas on connections: a connection with room that does not carry the symbol yet.

    So two replicas of one book on one node always ride on different sockets.
    """

    def __init__(self, spec: ExchangeSpec, *, streams_per_connection: int) -> None:
        self.spec = spec
        self._per_connection = streams_per_connection
        self._connections: list[StreamConnection] = []
        self._placed: dict[int, StreamConnection] = {}
        self._opened = 0

    @property
    def connections(self) -> list[StreamConnection]:
        return list(self._connections)

    def attach(self, replica: BookReplica) -> None:
        for connection in self._connections:
            if connection.has_room and not connection.carries(replica.symbol):
                break
        else:
            self._opened += 1
            connection = StreamConnection(
                self.spec, name=f"{self.spec.id}#{self._opened}", max_streams=self._per_connection
            )
            self._connections.append(connection)
            connection.start()
        connection.add(replica.symbol, replica)
        self._placed[id(replica)] = connection

    async def detach(self, replica: BookReplica) -> None:
        connection = self._placed.pop(id(replica), None)
        if connection is None:
            return
        connection.remove(replica.symbol)
        if not len(connection):
            self._connections.remove(connection)
            await connection.close()

    async def close(self) -> None:
        for connection in self._connections:
            await connection.close()
        self._connections.clear()
        self._placed.clear()
