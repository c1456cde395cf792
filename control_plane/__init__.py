"""Tenants, API keys, subscriptions, the ingest node registry and the replica scheduler."""
