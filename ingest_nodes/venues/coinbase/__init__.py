"""Coinbase Advanced Trade market data: wire schemas, pure parsers, the stream protocol, the product list."""
