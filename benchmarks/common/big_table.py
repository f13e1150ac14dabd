"""The PostgreSQL table the verify and resnapshot benchmarks mirror: shop.big, a bigint key and four
columns of mixed types, with its mirror model's columns."""

from __future__ import annotations

import tempfile
from pathlib import Path

# The mirror model's columns (harness write_model).
COLUMNS = ("{{ cdc_merge.cdc_columns({'id': 'bigint', 'name': 'string', 'qty': 'int', 'price': 'decimal(12,2)', "
           "'created': 'timestamp'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")
FILL = """insert into shop.big select g, 'customer ' || g, g %% 1000, g * 1.25, timestamptz '2026-01-01' + g * interval '1 s'
    from generate_series(%s, %s) g"""


def server_with_big_table(rows: int):
    """A PostgreSQL 15 server of its own (stop it when done) whose shop.big holds rows 1..rows."""
    from harness.postgres_server import start_postgres

    # Not in the benchmark's work folder: the server runs as another user, who cannot enter it.
    server = start_postgres(Path(tempfile.mkdtemp(prefix="cdc-merge-bench-postgres-")))
    try:
        with server.connect() as connection, connection.cursor() as cursor:
            cursor.execute("create schema shop")
            cursor.execute("create table shop.big (id bigint primary key, name text, qty int, price numeric(12,2), "
                           "created timestamptz)")
            for first in range(1, rows + 1, 1_000_000):
                cursor.execute(FILL, (first, min(rows, first + 999_999)))
            cursor.execute("analyze shop.big")
    except BaseException:
        server.stop()
        raise
    return server
