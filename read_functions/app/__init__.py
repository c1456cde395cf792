"""The request core: request and response values, the route table, dispatch and load shedding, the
API key a request presents, errors, parameters, negotiation and the OpenAPI document. It knows no
``Deps``: dispatch hands the process's dependencies to handlers without opening them.
"""
