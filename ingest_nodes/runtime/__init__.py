"""The async runtime of an ingest node: connections, feeds, replicas, snapshot scheduling, publishing,
the node.
"""
