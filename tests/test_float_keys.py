"""A MariaDB table keyed on a float (single precision) or double read online in pages of one and
two rows: each page starts after the last key's text, which the server compared as a double, so a
float's '0.1' (0.100000001490116... as a double) was below the stored key and the page read the
same key again for ever. The bound is now cast to the column's type."""

from __future__ import annotations

import threading

import pytest

from harness.mariadb_server import create_mariadb_capture_user
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_online_snapshots_mariadb import execute

KEYS = ["-3.4e38", "-1", "-1e-7", "-0.0", "1e-7", "0.1", "0.2", "0.3", "1", "1.5", "3.4e38"]


@pytest.mark.parametrize("column_type", ["float", "double"])
def test_mariadb_float_keys_read_in_pages(mariadb, dbt_project, tmp_path, column_type):
    execute(mariadb, "create database shop", f"create table shop.f (k {column_type} primary key, n int)",
            *(f"insert into shop.f values ({key}, {number})" for number, key in enumerate(KEYS)),
            "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    execute(mariadb, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    for page_rows in (1, 2):
        config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                             tables=("shop.f",), out=dbt_project.inbox,
                                             state=tmp_path / f"state-{page_rows}.json",
                                             snapshot_mode="online", page_rows=page_rows)
        read: list[int] = []
        capture = threading.Thread(target=lambda: read.append(capture_mysql.run(config).snapshot_rows), daemon=True)
        capture.start()
        capture.join(30)
        assert read == [len(KEYS)], f"pages of {page_rows} rows: the capture read {read or 'on and on'}"
    (table,) = scaffold.mysql_tables("127.0.0.1", mariadb.port, user, password, ["shop.f"])
    (dbt_project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))
    assert dbt_project.land({"shop.f": ["k"]}).counts["rejected"] == 0
    dbt_project.dbt("run", "--select", table.model_name)
    mirrored = sorted(row["n"] for row in dbt_project.query(f"select n from {dbt_project.schema}.{table.model_name}"))
    assert mirrored == list(range(len(KEYS)))
