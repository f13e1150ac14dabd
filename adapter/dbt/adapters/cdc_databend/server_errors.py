"""A statement Databend refused, as the user reads it.

databend-py reports a statement the server refused with the server's whole HTTP response as a
Python bytes literal ("Unexpected:  failed to query: b'{"id": ..., "session": {...}, "error":
{"code": 1006, "message": "unable to cast ..."}, "stats": {...}, ...}'"): some 1,500 characters of
session, settings, progress counters and URIs around the one message that says what went wrong, with
its quotes and non-ASCII letters escaped twice. statement_error gives the server's message, code and
query id instead. databend-py also logs that text at ERROR with the whole statement, which Python
prints to stderr when nothing handles it: the statement is in dbt's debug log already, and the
error in the model's failure, so quiet_client_log drops that record.
"""

from __future__ import annotations

import ast
import json
import logging
import re
from typing import Optional

_FAILED_QUERY = re.compile(r"failed to query: (b(['\"]).*\2)\s*$", re.S)
# databend-py's logger (databend_py/log.py).
CLIENT_LOGGER = "databend_py.log"


def _not_a_raised_error(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("http error on ")


def quiet_client_log() -> None:
    """databend-py's records of a failed request go nowhere (each is raised too, and dbt reports it);
    its other records as before."""
    client = logging.getLogger(CLIENT_LOGGER)
    if _not_a_raised_error not in client.filters:
        client.addFilter(_not_a_raised_error)


def statement_error(text: str) -> Optional[str]:
    """The server's error in text (databend-py's report of a refused statement), as one readable
    line; None when text is not such a report."""
    found = _FAILED_QUERY.search(text)
    if found is None:
        return None
    try:
        response = json.loads(ast.literal_eval(found.group(1)))
    except (ValueError, SyntaxError, TypeError):
        return None
    error = response.get("error") if isinstance(response, dict) else None
    if not isinstance(error, dict) or not error.get("message"):
        return None
    kind = f", {error['detail']}" if error.get("detail") else ""
    query = f"; query id {response['id']}" if response.get("id") else ""
    return f"Databend refused the statement: {error['message']} (error code {error.get('code')}{kind}{query})"
