"""Venue adapters: wire schemas and pure parsers that turn frames into Ladder's events."""
