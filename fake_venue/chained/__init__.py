"""Venues that send each book over the WebSocket on subscribe, then chained updates (OKX, Bybit)."""
