"""Route handlers: plain ``async def handler(request, deps) -> Response`` functions."""
