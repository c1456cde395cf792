"""The application core: request and response values, the route table, dispatch, errors, parameters,
the OpenAPI document.
"""
