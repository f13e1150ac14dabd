"""A column added by ALTER TABLE under a name that needs backquotes (`two words`, `a``b`) or is not
ASCII (`ünï`): the capture says so in a schema change event with the default that the rows which
existed then hold (docs/type_mapping.md), as for a plain name, and the mirror equals the source
table; a column renamed to such a name is not taken for an added one (its rows are read again). The
capture, behind the ALTERs, reads the catalog again once for the rows events before them, not for each.
Modelled on tests/test_capture_types.py, with its helpers."""

from __future__ import annotations

import json
import logging

from harness.mariadb_server import start_mariadb
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL
from test_capture_mysql_generated_invisible_and_quoted_columns import (  # noqa: F401
    assert_mirror_equals_source,
    capture_config,
    server_directory,
    source_rows,
)
from test_capture_types import apply

ADDED = ["add column `two words` int not null default 7", "add column `ünï` varchar(3) not null default 'ü'",
         "add column `a``b` int default 3, add column plain int default 4",
         "change column was `Was Renamed` int"]


def test_columns_added_under_names_needing_quotes_keep_their_default_in_older_rows(
        dbt_project, server_directory, tmp_path, caplog):  # noqa: F811
    server = start_mariadb(server_directory)
    try:
        connection = server.connect(autocommit=True)
        with connection.cursor() as cursor:
            cursor.execute("create database shop character set utf8mb4")
            cursor.execute("create table shop.grown (id int primary key, was int)")
            cursor.execute("insert into shop.grown values (1, 10), (2, null)")
            # The renamed column's rows are read again online (tests/test_mariadb_first_day.py).
            cursor.execute("create database cdc_merge")
            cursor.execute(SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
        config = capture_config(server, dbt_project.inbox, tmp_path / "capture-state.json", "shop.grown")
        with connection.cursor() as cursor:
            cursor.execute(f"grant insert on {SIGNAL_TABLE} to {config.user}@'%'")
        capture_mysql.run(config)
        with connection.cursor() as cursor:
            for key in (4, 5, 6):  # a transaction each
                cursor.execute(f"insert into shop.grown (id) values ({key})")
            for clause in ADDED:
                cursor.execute(f"alter table shop.grown {clause}")
            cursor.execute("insert into shop.grown (id) values (3)")
        caplog.set_level(logging.INFO, logger="cdc_merge.capture")
        capture_mysql.run(config)
        # Was once for each of the three rows events of the columns before the ALTERs.
        assert sum("columns of shop.grown changed" in record.getMessage() for record in caplog.records) == 1
        (table,) = scaffold.mysql_tables("127.0.0.1", server.port, config.user, config.password, ["shop.grown"])
        names = [column.name for column in table.columns]
        assert names == ["id", "Was Renamed", "two words", "ünï", "a`b", "plain"]
        mirrored = apply(dbt_project, table)
        source = source_rows(connection, "shop.grown", names)
        assert source[1] == {"id": 1, "Was Renamed": 10, "two words": 7, "ünï": "ü", "a`b": 3, "plain": 4}
        assert sorted(source) == [1, 2, 3, 4, 5, 6]
        assert_mirror_equals_source(mirrored, source, table)
        added = [list(change["existingRows"]) for path in config.out.glob("*.json") for line in path.read_text().splitlines()
                 for change in json.loads(line).get("tableChanges", [])]
        assert added == [["two words"], ["ünï"], ["a`b", "plain"], []]  # the rename: nothing added
        connection.close()
    finally:
        server.stop()
