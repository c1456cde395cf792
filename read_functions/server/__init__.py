"""Servers that drive the request core: HTTP/1.1 and WebSocket, the Lambda adapter, worker
processes, huge pages.
"""
