"""The capture's connections to the server, which share one TLS context.

Without TLS options PyMySQL connects in its PREFERRED mode: TLS when the server offers it, plain when
not, the server's certificate not verified. For that it builds a TLS context with every connection,
loading the system's CA certificates into it (about 16 ms each), though it verifies nothing with
them; the capture opens three (its queries, and the binlog reader's two). Here the first connection
builds that context and the others take it: the same settings, the same semantics, built once.
"""

from __future__ import annotations

import threading
from typing import Any

import pymysql.connections

_lock = threading.Lock()
_preferred: Any = None  # the process's context for PREFERRED mode, once a connection built it


class Connection(pymysql.connections.Connection):
    """pymysql.connect's connection, whose PREFERRED-mode TLS context is the process's one."""

    def _create_ssl_ctx(self, sslp: Any) -> Any:
        global _preferred
        # PyMySQL asks with {} only for PREFERRED mode: any TLS option (REQUIRED) gives other settings.
        if sslp != {}:
            return super()._create_ssl_ctx(sslp)
        with _lock:
            if _preferred is None:
                _preferred = super()._create_ssl_ctx({})
            return _preferred


def connect(**settings: Any) -> Connection:
    """pymysql.connect(**settings), sharing the TLS context (the binlog reader's pymysql_wrapper too)."""
    return Connection(**settings)


ACCESS_DENIED = 1045


def access_denied_hint(error: BaseException) -> str:
    """What else to check when the server refused the user from its own host: mariadb-install-db (and
    older MySQL installs) create an anonymous account ''@'localhost', which the server matches before
    'cdc'@'%' for such a connection, so the right password is refused. Empty for any other error."""
    arguments = getattr(error, "args", ())
    if len(arguments) < 2 or arguments[0] != ACCESS_DENIED or "@'localhost'" not in str(arguments[1]):
        return ""
    return ("; connecting from the server's own host, an anonymous account ''@'localhost' is matched before "
            "'<user>'@'%': drop it (drop user ''@'localhost') or create the user for 'localhost' too")
