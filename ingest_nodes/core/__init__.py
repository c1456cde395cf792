"""The pure core of an ingest node: venue-neutral events, the order book, sync machines and policies.
No I/O at all.
"""
