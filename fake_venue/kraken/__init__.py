"""Kraken spot, WebSocket v2: the ``book`` channel with its checksum, and the REST pair list."""
