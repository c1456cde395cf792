"""Route handlers: plain ``async def handler(request, deps) -> Response`` functions, the only code
given the process's ``Deps``; ``reads/`` serves books and streams, ``ubdcc/`` the UBDCC dialect."""
