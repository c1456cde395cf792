"""Bybit v5 (spot and linear): wire schemas, pure parsers, the stream protocol and the REST client."""
