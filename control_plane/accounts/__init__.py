"""Who may read what: tenants, API keys and how they authenticate, subscriptions, the audit trail."""
