"""A local stand-in for a Databend server, for development and tests: Databend's HTTP query API
over the embedded Databend engine. Not a production server."""

from devtools.databend_local.server import make_server, serve

__all__ = ["make_server", "serve"]
