"""Binance's diff-stream-plus-REST-snapshot protocol: its machine, and the spot and futures rules."""
