"""Books for readers: the change feed, the process-local cache and its entries, pure rendering, read
memos and the store's readiness. Nothing here knows HTTP.
"""
