"""Coinbase Advanced Trade: the ``level2`` and ``heartbeats`` channels, and the REST product list."""
