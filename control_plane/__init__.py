"""Tenants, API keys, subscriptions, the ingest node registry and the replica scheduler.

``accounts/`` is who may read what (tenants, API keys, authentication, subscriptions, the audit
trail); ``scheduling/`` is which node keeps which replica (the scheduler and its process, replica
status, venue credentials, markets, the node's side of assignments); ``stores/``
keeps both. At the top: what all three use (the value types in ``models``, the depth limits, the
error tree, ids and input checks), the settings, and ``service`` and ``bootstrap``, which build the parts.
"""
