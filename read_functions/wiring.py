"""Where the read API is wired together: one process's ``Deps``, the route lists, and a dispatcher
for each listener.

Servers (``server/``) drive what this builds without looking into it: they see dispatchers
(``app/``) and the settings; only handlers are given the ``Deps``.
"""

from __future__ import annotations

from read_functions.app.dispatch import Dispatcher
from read_functions.app.routing import Router
from read_functions.deps import Deps
from read_functions.handlers.ubdcc.tenant import CompatTenant
from read_functions.routes import COMPAT_ROUTES, ROUTES
from read_functions.settings import ReadSettings


class ReadApp:
    """The read API of one process: the main listener's dispatcher, the compat listener's if it
    has one, and what they share."""

    def __init__(self, deps: Deps, *, compat: bool) -> None:
        self._deps = deps
        self.settings = deps.settings
        self.api = Dispatcher(Router(ROUTES), deps)
        self.compat: Dispatcher[Deps] | None = None
        if compat:
            source = CompatTenant(deps, deps.settings.compat_tenant)
            self.compat = Dispatcher(Router(COMPAT_ROUTES), deps, source)

    @classmethod
    async def open(
        cls, settings: ReadSettings, *, follow_changes: bool = True, compat: bool = False
    ) -> ReadApp:
        """Build the process's dependencies (see ``Deps.open``) and the dispatchers over them."""
        return cls(await Deps.open(settings, follow_changes=follow_changes), compat=compat)

    async def flush_if_due(self) -> None:
        """Flush usage and keys' last use if the last flush is a second old (Lambda calls this)."""
        await self._deps.flush_if_due()

    async def close(self) -> None:
        await self._deps.close()
