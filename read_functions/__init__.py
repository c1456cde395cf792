"""Ladder's read API: books, markets, subscriptions, keys, usage, operator routes, UBDCC routes.

A request core of plain functions (:mod:`read_functions.dispatch`, :mod:`read_functions.routes`)
sits behind thin front ends: the server's own HTTP/1.1 protocol (:mod:`read_functions.http1`, run
with ``python -m read_functions``), which hands WebSocket upgrades to an aiohttp adapter
(:mod:`read_functions.aiohttp_app`), and an AWS Lambda handler (:mod:`read_functions.lambda_handler`).
"""
