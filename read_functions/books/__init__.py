"""Books for readers: the change feed, the process-local cache and its entries, pure rendering, reads
and streams.
"""
