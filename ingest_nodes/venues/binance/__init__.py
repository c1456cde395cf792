"""Binance spot and futures: wire schemas and pure parsers."""
