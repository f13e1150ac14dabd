"""A column the source adds with a default under a name in upper or mixed case (NewCol, `Two Words`),
a keyword or a leading digit (cdc-scaffold's order_ and _2fa), or that the model reads under another
name (json_fields): the mirror's rows older than the addition take the default the capture's schema
change event says they hold, as for a name in lower case
(macros/materializations/cdc_merge/column_defaults.sql), and the mirror equals the source table.
Modelled on tests/test_capture_types.py, with its helpers."""

from __future__ import annotations

from harness.mariadb_server import start_mariadb
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from test_capture_mysql_generated_invisible_and_quoted_columns import (  # noqa: F401
    assert_mirror_equals_source,
    capture_config,
    server_directory,
    source_rows,
)
from test_capture_types import apply


def test_columns_added_in_upper_case_keep_their_default_in_older_rows(dbt_project, server_directory, tmp_path):  # noqa: F811
    server = start_mariadb(server_directory)
    try:
        connection = server.connect(autocommit=True)
        with connection.cursor() as cursor:
            cursor.execute("create database shop character set utf8mb4")
            cursor.execute("create table shop.grown (id int primary key)")
            cursor.execute("insert into shop.grown values (1), (2)")
        config = capture_config(server, dbt_project.inbox, tmp_path / "capture-state.json", "shop.grown")
        capture_mysql.run(config)
        with connection.cursor() as cursor:
            cursor.execute("alter table shop.grown add column NewCol int not null default 8, "
                           "add column `Two Words` varchar(3) default 'tw', add column lower_one int default 1, "
                           "add column `order` int default 4, add column `2fa` int default 2, add column isActive int default 7")
            cursor.execute("insert into shop.grown (id, NewCol) values (3, 9)")
        capture_mysql.run(config)
        (table,) = scaffold.mysql_tables("127.0.0.1", server.port, config.user, config.password, ["shop.grown"])
        names = [column.name for column in table.columns]
        # The model reads isActive as is_active, a name of the user's own.
        model = dbt_project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql"
        model.write_text(scaffold.model_sql(table).replace("'isActive': 'int'", "'is_active': 'int'")
                         .replace("}, {'Two_Words'", "}, {'is_active': 'isActive', 'Two_Words'"))
        mirrored = apply(dbt_project, table, model_written=True)
        source = source_rows(connection, "shop.grown", names)
        assert source[1] == {"id": 1, "NewCol": 8, "Two Words": "tw", "lower_one": 1, "order": 4, "2fa": 2, "isActive": 7}
        assert [row["is_active"] for _, row in sorted(mirrored.items())] == [7, 7, 7]
        assert_mirror_equals_source({key: {**row, "isActive": row.pop("is_active")} for key, row in mirrored.items()},
                                    source, table)
        connection.close()
    finally:
        server.stop()
