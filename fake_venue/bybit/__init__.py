"""Bybit v5 public market data (spot and linear): orderbook topics, instruments, REST books."""
