"""Alpaca crypto market data: wire schemas and pure parsers."""
