"""Queries through the cluster's Thrift server (PyHive), for the demo, the tests and benchmarks."""

from __future__ import annotations

import os

# What the Thrift server describes a statement without rows with (DDL, DML).
NO_ROWS_COLUMNS = ["Result"]


def rows(sql: str, host: str | None = None, port: int | None = None) -> list[dict]:
    """The rows of sql as dicts; [] for a statement without rows. host and port default to the
    `cluster` target's variables (cdc-cluster's cluster.env)."""
    from pyhive import hive

    connection = hive.connect(
        host=host or os.environ.get("CDC_MERGE_THRIFT_HOST", "127.0.0.1"),
        port=port or int(os.environ["CDC_MERGE_THRIFT_PORT"]),
        username=os.environ.get("CDC_MERGE_THRIFT_USER", "cdc_merge"),
    )
    try:
        cursor = connection.cursor()
        cursor.execute(sql)
        names = [column[0] for column in cursor.description or []]
        if names == NO_ROWS_COLUMNS:
            return []
        return [dict(zip(names, row)) for row in cursor.fetchall()]
    finally:
        connection.close()
