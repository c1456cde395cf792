"""Kraken spot market data (WebSocket v2): wire schemas, pure parsers, the stream protocol, the pair list."""
