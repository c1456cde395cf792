"""Node heartbeats: how a quiet replica stays servable without being republished.

Theory of operation
-------------------
A reader must tell a quiet book from a book whose ingest node died. Republishing every quiet
replica every second would tell it, at the price of a store write, a change message and a decode
in every reader per quiet book and second; with thousands of quiet books that is most of a node's
work. So each ingest node writes one heartbeat instead, every ``keepalive_ms``, through its book
writer (keys in :mod:`book_store.schema`: ``NODES_ALIVE`` is both a hash, node id -> its latest
heartbeat, and a channel on which every heartbeat is published):

    <B Q q q> + node id   version, the node's tag, time, since; then the node id in UTF-8

A heartbeat at ``time`` says: every snapshot this node wrote (tagged with the node's tag, see
:mod:`book_store.codec`) at or after ``since`` still stands for what the node holds. The writer
sends it after every snapshot recorded before it, in order on one connection, and sends nothing
at all while fenced, so a heartbeat never vouches for a state the node has already left behind.
``since`` is never more than two quiet keepalives back (the node still republishes a synced quiet
replica every ``quiet_keepalive_ms``, and a replica that is not synced as before), so a snapshot the
node no longer keeps, by a fault nobody saw, loses the node's word within that time. A node's tag
is new with every process, so a restarted node never vouches for what an earlier one wrote.

A reader takes a replica as heard at the later of its own ``publish_time`` and, when the node
vouches for it, the node's heartbeat (:meth:`Heartbeats.heard`); a replica heard from within
``max_silence_ms`` may be served. What a reader knows of heartbeats only ages (a missed heartbeat
leaves an older one), so missing one can only make a replica look silent sooner, never keep a dead
one alive; a reader that may have missed heartbeats forgets them, as it forgets the books whose
messages it may have missed, and falls back to each replica's own ``publish_time`` until it has
read them again.

Node ids are per process, so the hash would keep a field for every node that ever crashed; a
starting node removes those older than an hour (:func:`prune_heartbeats`), and a node that leaves
removes its own.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple, cast

from book_store.connect import StoreClient
from book_store.schema import NODES_ALIVE
from ladder_process.errors import StoreError

VERSION = 1
_HEARTBEAT = struct.Struct("<BQqq")


class NodeHeartbeat(NamedTuple):
    """One heartbeat of one ingest node (see the module docstring)."""

    node: int
    """The node's tag (the ``node`` of every snapshot it writes)."""
    time: int
    since: int
    """The oldest publish time of a snapshot the heartbeat vouches for."""


def encode_heartbeat(node_id: str, heartbeat: NodeHeartbeat) -> bytes:
    return _HEARTBEAT.pack(VERSION, *heartbeat) + node_id.encode()


def decode_heartbeat(raw: bytes | memoryview) -> tuple[str, NodeHeartbeat]:
    """The node id and its heartbeat; a heartbeat that cannot be read is a StoreError."""
    try:
        version, node, time, since = _HEARTBEAT.unpack_from(raw)
        node_id = bytes(raw[_HEARTBEAT.size :]).decode()
    except (struct.error, UnicodeDecodeError) as exc:
        raise StoreError("a node heartbeat cannot be read") from exc
    if version != VERSION:
        raise StoreError(f"a node heartbeat has version {version}, this reader knows {VERSION}")
    return node_id, NodeHeartbeat(node, time, since)


class Heartbeats:
    """The latest heartbeat a reader knows of each node, by tag."""

    __slots__ = ("_by_node",)

    def __init__(self) -> None:
        self._by_node: dict[int, NodeHeartbeat] = {}

    def __len__(self) -> int:
        return len(self._by_node)

    def learn(self, heartbeat: NodeHeartbeat) -> None:
        """Keep ``heartbeat`` unless a later one of its node is known (stored and published ones
        can arrive in either order)."""
        known = self._by_node.get(heartbeat.node)
        if known is None or known.time < heartbeat.time:
            self._by_node[heartbeat.node] = heartbeat

    def learn_stored(self, values: Iterable[bytes]) -> None:
        """Learn the values of the ``NODES_ALIVE`` hash (an unreadable one is skipped: it vouches
        for nothing)."""
        for raw in values:
            try:
                self.learn(decode_heartbeat(raw)[1])
            except StoreError:
                continue

    def clear(self) -> None:
        self._by_node.clear()

    def heard(self, publish_time: int, node: int) -> int:
        """When a replica whose snapshot was published at ``publish_time`` by ``node`` was last known
        to be kept: its node's latest heartbeat when that vouches for the snapshot, else the
        snapshot's own publish time."""
        heartbeat = self._by_node.get(node)
        if heartbeat is None or publish_time < heartbeat.since or heartbeat.time < publish_time:
            return publish_time
        return heartbeat.time


async def prune_heartbeats(client: StoreClient, older_than_ms: int) -> int:
    """Remove the heartbeats written before ``older_than_ms`` (nodes long gone); how many."""
    stored = cast(dict[bytes, bytes], await client.hgetall(NODES_ALIVE))
    old = []
    for node_id, raw in stored.items():
        try:
            if decode_heartbeat(raw)[1].time < older_than_ms:
                old.append(node_id)
        except StoreError:
            old.append(node_id)
    if old:
        await client.hdel(NODES_ALIVE, *old)
    return len(old)
