"""The clients: the sync and async ones over their shared base, streams with their reconnect
rules, settings, and the edges to httpx, websockets, logging and tracing."""
