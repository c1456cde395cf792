"""Who may read what, and how much: API-key access, failed-auth accounting, rate limits, usage, the
market catalog.
"""
