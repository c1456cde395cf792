"""WebSocket book streams: the opening handshake, frames under inbound limits, the connection."""
