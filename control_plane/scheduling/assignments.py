"""The ingest node's side of the control plane: register, heartbeat, learn assignments, drain.

How a node learns of changes quickly: with the Redis control store, ``watch`` subscribes to the
node's assignment channel (the scheduler publishes there in the same transaction that rewrites the
set), so a change arrives within milliseconds; in case a message was lost while the connection was
down, it also reads the assignments' *generation* (a token every write of an assignment set
renews, read before the set) every ``resync_s`` and reads the set again when it moved, or
``reread_s`` after the last read in any case (for writers that keep no generation). A set of
thousands of replicas costs tens of milliseconds of the node's event loop to read; the token
costs one round trip. With any other store (DynamoDB) ``watch``
polls every ``poll_s``. Either way it yields the whole new set, never a diff, so a node that
missed a change simply converges on the next one.

A node that was forgotten by the registry (silent too long, e.g. after a network partition) is
registered again by its next ``heartbeat``, from the details it registered with.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import redis.asyncio as redis
from redis.asyncio.cluster import ClusterPubSub, RedisCluster
from redis.exceptions import RedisError

from book_store.connect import StoreClient
from control_plane.errors import InvalidRequestError, NotFoundError
from control_plane.models import NodeInfo, ReplicaAssignment
from control_plane.scheduling.runtime import SCHEDULER_LEASE
from control_plane.stores.base import ControlStore
from control_plane.stores.redis import RedisControlStore
from ladder_process.clock import Clock, now_ms
from ladder_process.errors import StoreUnavailableError

_NODE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def _checked_node_id(node_id: str) -> str:
    if not _NODE_ID.fullmatch(node_id):
        raise InvalidRequestError("a node id is 1-128 characters of [A-Za-z0-9._:-]")
    return node_id


class AssignmentClient:
    """What an ingest node calls; ``client`` is a Redis client (default store) or any ControlStore."""

    def __init__(
        self,
        client: StoreClient | ControlStore,
        *,
        prefix: str = "ladder:",
        clock: Clock = now_ms,
        poll_s: float = 0.5,
        resync_s: float = 5.0,
        reread_s: float = 60.0,
        registrations: dict[str, NodeInfo] | None = None,
    ) -> None:
        """``registrations``: the nodes registered through another client of the same process, shared
        (a node's heartbeat thread has a client of its own, and registers the node again from them)."""
        self._store: ControlStore = (
            RedisControlStore(client, prefix) if isinstance(client, (redis.Redis, RedisCluster)) else client
        )
        self._clock = clock
        self._poll_s = poll_s
        self._resync_s = resync_s
        self._reread_s = reread_s
        self.registrations: dict[str, NodeInfo] = {} if registrations is None else registrations
        """What each node registered through this client (or one sharing it) registered with."""

    async def register(self, node_id: str, address: str, capacity: int) -> None:
        """Announce the node (again, after a restart): live, not draining, no load yet."""
        if capacity < 1:
            raise InvalidRequestError("capacity must be at least 1")
        now = self._clock()
        node = NodeInfo(_checked_node_id(node_id), address, capacity, now, now, draining=False, load=0.0)
        await self._store.register_node(node)
        self.registrations[node_id] = node

    async def heartbeat(self, node_id: str, load: float = 0.0) -> None:
        """Say the node is alive; ``load`` is its work measure (messages/s, or replicas kept)."""
        now = self._clock()
        if await self._store.heartbeat_node(node_id, now, float(load)):
            return
        known = self.registrations.get(node_id)
        if known is None:
            raise NotFoundError(f"node {node_id} is not registered")
        await self._store.register_node(dataclasses.replace(known, heartbeat_at=now, load=float(load)))

    async def assignments(self, node_id: str) -> list[ReplicaAssignment]:
        """The replicas this node should keep now."""
        return await self._store.get_assignments(node_id)

    async def set_draining(self, node_id: str) -> None:
        """Ask the scheduler to move this node's replicas away (make-before-break)."""
        await self._store.set_draining(node_id, True)
        if node_id in self.registrations:
            self.registrations[node_id] = dataclasses.replace(self.registrations[node_id], draining=True)

    async def scheduler_running(self) -> bool:
        """Whether a control process holds the scheduler lease: only then is a drain carried out."""
        return await self._store.lease_held(SCHEDULER_LEASE, self._clock())

    async def deregister(self, node_id: str) -> None:
        """Leave the registry; whatever the node still had is reassigned on the next round."""
        self.registrations.pop(node_id, None)
        await self._store.remove_node(node_id)

    async def watch(self, node_id: str) -> AsyncIterator[list[ReplicaAssignment]]:
        """Yield the node's assignment set now and after every change (see the module docstring)."""
        if isinstance(self._store, RedisControlStore):
            changes = self._notified(self._store, node_id)
        else:
            changes = self._polled(node_id)
        last: list[ReplicaAssignment] | None = None
        async for current in changes:
            if current != last:
                last = current
                yield current

    async def _polled(self, node_id: str) -> AsyncIterator[list[ReplicaAssignment]]:
        while True:
            yield await self.assignments(node_id)
            await asyncio.sleep(self._poll_s)

    async def _notified(
        self, store: RedisControlStore, node_id: str
    ) -> AsyncIterator[list[ReplicaAssignment]]:
        pubsub = store.client.pubsub()
        next_message = pubsub.get_sharded_message if isinstance(pubsub, ClusterPubSub) else pubsub.get_message
        try:
            if isinstance(pubsub, ClusterPubSub):  # on a cluster the store announces with SPUBLISH
                await pubsub.ssubscribe(store.assignment_channel(node_id))
            else:
                await pubsub.subscribe(store.assignment_channel(node_id))
            while True:
                seen = (await store.generations()).assignments  # before the set: see the docstring
                read_at = time.monotonic()
                yield await self.assignments(node_id)
                while not await self._may_have_changed(next_message, store, seen, read_at):
                    pass
        except RedisError as exc:
            raise StoreUnavailableError("lost the assignment notifications (Redis)") from exc
        finally:
            await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]  # unannotated before redis 8

    async def _may_have_changed(
        self,
        next_message: Callable[..., Awaitable[object]],
        store: RedisControlStore,
        seen: str | None,
        read_at: float,
    ) -> bool:
        """Wait up to ``resync_s`` for a notification; True if the set may differ from the one read
        at ``read_at`` under generation ``seen``."""
        if await next_message(ignore_subscribe_messages=True, timeout=self._resync_s) is not None:
            while await next_message(ignore_subscribe_messages=True, timeout=0) is not None:
                pass  # several changes since the last read: one read covers them all
            return True
        if time.monotonic() - read_at >= self._reread_s:
            return True
        return (await store.generations()).assignments != seen
