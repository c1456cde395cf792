"""Alpaca crypto market data as the fake serves it: venue state, stream protocol, asset list."""
