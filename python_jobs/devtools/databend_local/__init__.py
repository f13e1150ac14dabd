"""A local stand-in for a Databend server, for development and tests: Databend's HTTP query API
over the embedded Databend engine. Not a production server, and not part of the product.

    server.py      the command (python -m python_jobs.devtools.databend_local) and serve(), which runs it for tests
    http_api.py    the HTTP endpoints: queries, result pages, sessions
    engine.py      the embedded engine: one session switched to each client's database and settings
    values.py      result values rendered as the Databend server writes them
    data_types.py  the engine's result schema, read from its debug text
"""

from python_jobs.devtools.databend_local.server import make_server, serve

__all__ = ["make_server", "serve"]
