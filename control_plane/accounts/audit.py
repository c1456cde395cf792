"""The audit trail of operator and key actions (who did what to which object, and when)."""

from __future__ import annotations

from control_plane.models import AuditEvent, JsonScalar, Principal
from control_plane.stores.base import AUDIT_LIMIT_MAX, ControlStore
from control_plane.validation import require_int
from ladder_process.clock import Clock


class AuditLog:
    def __init__(self, store: ControlStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    async def record(self, actor: Principal, action: str, target: str, **detail: JsonScalar) -> None:
        """Append one event; ``detail`` must never carry a secret (keys are named by id)."""
        await self._store.append_audit(AuditEvent(self._clock(), actor.actor, action, target, detail))

    async def recent(self, limit: object = 100) -> list[AuditEvent]:
        """The newest events first; ``limit`` is 1..AUDIT_LIMIT_MAX."""
        return await self._store.list_audit(require_int("limit", limit, lo=1, hi=AUDIT_LIMIT_MAX))
