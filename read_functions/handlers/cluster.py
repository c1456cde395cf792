"""Operator views of the running cluster: ingest nodes, every book's replicas, the weight budgets,
and the last hour of all that (the history the control plane samples, and each tenant's minutes).

Each view joins what the control plane assigned with what the ingest nodes last wrote to the
store (their counters documents, each replica's head snapshot and counters, the shared weight
counts), so an operator sees in one answer which replica runs where and how it is doing. None of
this is a hot path (a console polls it every few seconds), so it reads the store directly, with
one pipelined round trip per kind of key.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, cast

import orjson

from book_store.codec import Snapshot
from book_store.connect import get_many
from book_store.history import SAMPLE_S, History
from book_store.liveness import Heartbeats
from book_store.reader import BookReader, heard, store_errors
from book_store.schema import BookKey, node_stats_key, weight_key_prefix
from ladder_process.clock import now_ms
from read_functions.app.messages import Request, Response, json_response
from read_functions.app.params import int_param
from read_functions.deps import Deps
from read_functions.handlers.reads.book_info import COUNTERS
from read_functions.handlers.reads.rules import best_status

WINDOW_MS = 60_000
"""The venue's weight window (one minute, on the store's clock; see ingest_nodes.venues.budget)."""
_REFUSALS = ("429", "418")


async def nodes(request: Request, deps: Deps) -> Response:
    """``GET /v1/admin/nodes``: each node's registration, assignments and last counters document."""
    listed = await deps.control.nodes()
    documents = await _node_documents(deps, [str(n["id"]) for n in listed])
    return json_response({"nodes": [{**n, "stats": documents.get(str(n["id"]))} for n in listed]})


async def books(request: Request, deps: Deps) -> Response:
    """``GET /v1/admin/books``: every assigned book, replica by replica, and the disagreements."""
    assignments = await deps.control.assignments()
    placed: dict[BookKey, dict[int, str]] = defaultdict(dict)
    for a in assignments:
        placed[BookKey(a.exchange, a.market)][a.replica] = a.node_id
    keys = sorted(placed, key=lambda b: (b.exchange, b.market))
    reader = BookReader(deps.redis)
    heartbeats = Heartbeats()
    heads = await reader.many(keys, heartbeats)
    counters = await reader.counters_many(keys)
    now, silence = now_ms(), deps.settings.max_silence_ms
    listed, disagreements = [], []
    for book in keys:
        replicas = []
        for replica in sorted(placed[book].keys() | heads[book].keys()):
            head = heads[book].get(replica)
            counted = counters[book].get(replica, {})
            entry = {
                "replica": replica,
                "node_id": placed[book].get(replica),
                **_head_state(head, now, silence, heartbeats),
                **{name: counted.get(name) for name in COUNTERS},
            }
            entry.update(_why(entry, head, heartbeats))
            replicas.append(entry)
            if counted.get("mismatches") or counted.get("audit_mismatches"):
                disagreements.append({"exchange": book.exchange, "market": book.market, **{
                    k: entry[k] for k in ("replica", "node_id", "update_id", "mismatches",
                                          "audit_mismatches", "last_audit_ms")}})  # fmt: skip
        listed.append({
            "exchange": book.exchange,
            "market": book.market,
            "status": best_status(heads[book], now, silence, heartbeats),
            "replicas": replicas,
        })  # fmt: skip
    return json_response({"books": listed, "disagreements": disagreements})


async def egress(request: Request, deps: Deps) -> Response:
    """``GET /v1/admin/egress``: each egress IP's weight pools, used / limit this minute, refusals."""
    listed = await deps.control.nodes()
    documents = await _node_documents(deps, [str(n["id"]) for n in listed])
    pools: dict[tuple[str, str], dict[str, Any]] = {}
    for node_id, document in sorted(documents.items()):
        egress_id = str(document.get("egress_id", "default"))
        for exchange, state in cast(dict[str, dict[str, Any]], document.get("exchanges", {})).items():
            pool = state.get("weight_pool")
            if not isinstance(pool, str):
                continue
            entry = pools.setdefault((egress_id, pool), {
                "egress_id": egress_id, "pool": pool, "limit": 0, "exchanges": [], "nodes": [],
                "weight_spent": 0, "refusals": dict.fromkeys(_REFUSALS, 0),
            })  # fmt: skip
            entry["limit"] = max(entry["limit"], int(state.get("weight_limit") or 0))
            entry["exchanges"] = sorted({*entry["exchanges"], exchange})
            entry["nodes"] = sorted({*entry["nodes"], node_id})
            snapshots = state.get("snapshots") or {}
            entry["weight_spent"] += int(snapshots.get("weight_spent") or 0)
            for status in _REFUSALS:
                entry["refusals"][status] += int((snapshots.get("http_status") or {}).get(status) or 0)
    found = sorted(pools.values(), key=lambda p: (p["egress_id"], p["pool"]))
    if found:
        with store_errors():
            seconds, micros = await deps.redis.time()
            store_ms = int(seconds) * 1000 + int(micros) // 1000
            minute = store_ms // WINDOW_MS
            prefixes = [weight_key_prefix(p["egress_id"], p["pool"]) for p in found]
            values = await get_many(deps.redis, [k for p in prefixes for k in (f"{p}:{minute}", f"{p}:ban")])
        for i, pool in enumerate(found):
            used, ban = values[2 * i], values[2 * i + 1]
            pool["used"] = int(used or 0)
            pool["window_ends_in_ms"] = (minute + 1) * WINDOW_MS - store_ms
            pool["closed_for_ms"] = max(0, int(ban or 0) - store_ms)
    return json_response({"egress": found})


def _why(entry: dict[str, Any], head: Snapshot | None, heartbeats: Heartbeats) -> dict[str, Any]:
    """``status_reason`` and ``status_since_ms`` of a replica that is not synced (both None if it is)."""
    status = entry["status"]
    event: dict[str, Any] | None = None
    if status == "starting":
        return {"status_reason": "no snapshot published yet", "status_since_ms": None}
    if status == "stale" and head is not None and head.status.label != "stale":
        since = heard(head, heartbeats)
        return {"status_reason": "not heard from: neither republished nor vouched for by its node",
                "status_since_ms": since}  # fmt: skip
    if status == "stale":
        event = entry.get("last_stale")
    elif status == "resyncing":
        event = entry.get("last_resync") or {"reason": "syncing for the first time", "at_ms": None}
    elif status == "refused":
        return {"status_reason": "the venue refuses Ladder's key for it", "status_since_ms": None}
    if event is None:
        return {"status_reason": None, "status_since_ms": None}
    return {"status_reason": event["reason"], "status_since_ms": event["at_ms"]}


def _head_state(head: Snapshot | None, now: int, silence_ms: int, heartbeats: Heartbeats) -> dict[str, Any]:
    """A replica as its head snapshot shows it; one not heard from within ``silence_ms`` (neither
    republished nor vouched for by its node's heartbeat) is stale."""
    if head is None:
        return {"status": "starting", "update_id": None, "publish_time": None, "age_ms": None}
    status = "stale" if now - heard(head, heartbeats) > silence_ms else head.status.label
    age = max(0, now - head.known_time)
    return {"status": status, "update_id": head.update_id, "publish_time": head.publish_time, "age_ms": age}


async def _node_documents(deps: Deps, node_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each node's last counters document (a node that has not reported lately has none)."""
    if not node_ids:
        return {}
    with store_errors():
        raw = await get_many(deps.redis, [node_stats_key(n) for n in node_ids])
    return {n: orjson.loads(value) for n, value in zip(node_ids, raw, strict=True) if value}


HISTORY_MINUTES = 60


async def history(request: Request, deps: Deps) -> Response:
    """``GET /v1/admin/history?minutes=N``: the cluster's samples over the last N minutes (at most
    60, the default), and each tenant's requests and errors per minute."""
    minutes = int_param(request.query, "minutes", lo=1, hi=HISTORY_MINUTES) or HISTORY_MINUTES
    now = now_ms()
    since = now - minutes * 60_000
    with store_errors():
        samples = await History(deps.redis).recent(math.ceil(minutes * 60 / SAMPLE_S) + 1)
    tenants = await deps.control.tenants.list_all()
    reports = await deps.usage.reports([t.id for t in tenants], now)
    first_minute = since // 60_000 * 60_000
    return json_response({
        "interval_ms": int(SAMPLE_S * 1000),
        "samples": [s.shown() for s in samples if s.at >= since],
        "tenants": [
            {"tenant_id": t.id, "name": t.name,
             "minutes": [m for m in cast(list[dict[str, int]], r["minutes"]) if m["minute"] >= first_minute]}
            for t, r in zip(tenants, reports, strict=True)
        ],
    })  # fmt: skip
