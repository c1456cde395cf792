"""Binance spot and USD-M futures as the fake serves them: dialects, state, weights, REST, streams."""
