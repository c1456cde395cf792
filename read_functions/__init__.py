"""Ladder's read API: books, markets, subscriptions, keys, usage, operator routes, UBDCC routes.

A request core of plain functions (:mod:`read_functions.dispatch`, :mod:`read_functions.routes`)
sits behind two thin adapters: an aiohttp server (:mod:`read_functions.aiohttp_app`, run with
``python -m read_functions``) and an AWS Lambda handler (:mod:`read_functions.lambda_handler`).
"""
