"""Ingest nodes: keep venue order books in sync and publish trimmed, pre-encoded snapshots."""
