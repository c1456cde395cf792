"""Servers around the application core: HTTP/1.1 and WebSocket, the Lambda adapter, worker processes,
load shedding.
"""
