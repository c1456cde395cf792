"""Ladder's read API: books, markets, subscriptions, keys, usage, operator routes, UBDCC routes.

A request core of plain functions (:mod:`read_functions.app.dispatch`, :mod:`read_functions.routes`)
sits behind thin front ends: the server's own HTTP/1.1 protocol (:mod:`read_functions.server.http1`, run
with ``python -m read_functions``), which hands WebSocket upgrades to the streams' own protocol
(:mod:`read_functions.server.websocket`), and an AWS Lambda handler
(:mod:`read_functions.server.lambda_handler`).
"""
