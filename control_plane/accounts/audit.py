"""The audit trail of operator and key actions (who did what to which object, and when).

Each event is kept in its actor's scope: a tenant's actions in the tenant's, the operator's in
``"operator"``; the store bounds every scope on its own (see ``ControlStore.append_audit``), so
nothing a tenant does can push the operator's events, or another tenant's, out of the log. A
request that changes nothing (deleting subscriptions the tenant does not have) records nothing.

A tenant key's changes are also rate-bounded here, before they act: at most :data:`WRITES_PER_S`
a second (:data:`WRITE_BURST` at once) per key in each process that serves them, so that no key
can fill its own log, or the store, faster than an operator can read it. The operator is not
bounded.
"""

from __future__ import annotations

from collections import OrderedDict

from control_plane.errors import InvalidRequestError, RateLimitedError
from control_plane.ids import TENANT_ID_PREFIX
from control_plane.models import OPERATOR_SCOPE, AuditEvent, JsonScalar, Principal
from control_plane.stores.base import AUDIT_LIMIT_MAX, LEGACY_SCOPE, ControlStore
from control_plane.validation import require_id, require_int
from ladder_process.clock import Clock

WRITES_PER_S = 10.0
WRITE_BURST = 50
_BUDGETS_KEPT = 100_000


class AuditLog:
    def __init__(self, store: ControlStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock
        self._budgets: OrderedDict[str, tuple[float, int]] = OrderedDict()  # key -> (tokens, at ms)

    def admit(self, actor: Principal) -> None:
        """Spend one of the actor's changes, before it acts; RateLimitedError past its budget."""
        if actor.is_admin:
            return
        now = self._clock()
        name = actor.actor
        tokens, at = self._budgets.pop(name, (float(WRITE_BURST), now))
        tokens = min(float(WRITE_BURST), tokens + (now - at) / 1000 * WRITES_PER_S)
        self._budgets[name] = (tokens - 1 if tokens >= 1 else tokens, now)
        while len(self._budgets) > _BUDGETS_KEPT:
            self._budgets.popitem(last=False)
        if tokens < 1:
            wait_s = (1 - tokens) / WRITES_PER_S
            raise RateLimitedError(
                f"this key made more than {WRITES_PER_S:g} changes a second (burst {WRITE_BURST})", wait_s
            )

    async def record(self, actor: Principal, action: str, target: str, **detail: JsonScalar) -> None:
        """Append one event to the actor's scope; ``detail`` must never carry a secret (keys are
        named by id)."""
        scope = OPERATOR_SCOPE if actor.tenant_id is None else actor.tenant_id
        await self._store.append_audit(AuditEvent(self._clock(), actor.actor, action, target, detail, scope))

    async def recent(
        self, limit: object = 100, *, before: object = None, scope: object = None
    ) -> list[AuditEvent]:
        """The newest events first (``limit`` 1..AUDIT_LIMIT_MAX); of one ``scope`` only (a tenant id,
        or ``"operator"``), and older than the event whose id is ``before``, when given."""
        return await self._store.list_audit(
            require_int("limit", limit, lo=1, hi=AUDIT_LIMIT_MAX),
            before=_cursor(before),
            scope=_scope(scope),
        )


def _scope(value: object) -> str | None:
    if value is None or value in (OPERATOR_SCOPE, LEGACY_SCOPE):
        return value
    return require_id("scope", value, TENANT_ID_PREFIX)


def _cursor(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= 64:
        raise InvalidRequestError("before must be the id of an audit event")  # never echoed
    return value
