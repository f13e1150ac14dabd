"""Two columns of one type that swap names in one ALTER TABLE (RENAME COLUMN a TO b, RENAME COLUMN b
TO a, or CHANGE a b, CHANGE b a): every row then holds each value under the other name with no rows
event, and neither name is new to the log. The capture reads such a table again online, as after any
rename, so the mirror's columns hold what the source's do; also after a RENAME COLUMN IF EXISTS or a
CHANGE COLUMN IF EXISTS, whose new name is no added column."""

from __future__ import annotations

import logging

from harness.mariadb_server import create_mariadb_capture_user
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_online_snapshots_mariadb import execute

TABLES = {"shop.people": ["id"], "shop.pairs": ["id"], "shop.sizes": ["id"]}


def source_rows(server, table: str, columns: list[str]) -> list[tuple]:
    connection = server.connect()
    with connection.cursor() as cursor:
        cursor.execute(f"select {', '.join(columns)} from {table}")
        rows = sorted(cursor.fetchall())
    connection.close()
    return rows


def captured(mariadb, dbt_project, tmp_path, tables: dict, *statements: str):
    """The shop database made by statements, the capture user the docs prescribe, and a first capture
    of tables into the project's inbox; the capture's config."""
    execute(mariadb, "create database shop", *statements, "create database cdc_merge",
            SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    execute(mariadb, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=tuple(tables), out=dbt_project.inbox, state=tmp_path / "state.json")
    capture_mysql.run(config)
    return config


def mirrored(dbt_project, config, tables: dict) -> dict:
    """Each table's model as cdc-scaffold writes it now, landed and run; the models' names by table."""
    models = {}
    for qualified in tables:
        (table,) = scaffold.mysql_tables(config.host, config.port, config.user, config.password, [qualified])
        models[qualified] = table.model_name
        (dbt_project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))
    assert dbt_project.land(tables).counts["rejected"] == 0
    dbt_project.dbt("run", "--select", *models.values())
    return models


def test_columns_swapping_names_are_read_again(mariadb, dbt_project, tmp_path, caplog):  # noqa: F811
    config = captured(mariadb, dbt_project, tmp_path, TABLES,
                      "create table shop.people (id int primary key, first_name varchar(20), last_name varchar(20))",
                      "insert into shop.people values (1, 'Lovelace', 'Ada'), (2, 'Hopper', 'Grace')",
                      "create table shop.pairs (id int primary key, a int, b int)",
                      "insert into shop.pairs values (1, 10, 20), (2, 30, null)",
                      "create table shop.sizes (id int primary key, qty int, kg int)",
                      "insert into shop.sizes values (1, 3, 7)")
    # Names entered the wrong way round, put right by swapping the columns' names.
    execute(mariadb, "insert into shop.people values (3, 'Liskov', 'Barbara')",
            "alter table shop.people rename column first_name to last_name, rename column last_name to first_name",
            "insert into shop.people (id, first_name, last_name) values (4, 'Edsger', 'Dijkstra')",
            "alter table shop.pairs change a b int, change column `b` `a` int",
            "update shop.pairs set a = 21 where id = 1",
            "alter table shop.sizes rename column if exists qty to amount, change column if exists kg weight int")
    with caplog.at_level(logging.INFO, logger="cdc_merge.capture"):
        again = capture_mysql.run(config)
    # Why each is read again, as the log and the status page say it (was "ALTER TABLE converted column values").
    reads = [record.getMessage() for record in caplog.records if record.getMessage().endswith(" online")]
    assert any(read.startswith("ALTER TABLE renaming to ") and read.endswith(": reading shop.people online")
               for read in reads), reads

    models = mirrored(dbt_project, config, TABLES)
    mirror = f"{dbt_project.schema}.{models['shop.people']}"
    people = sorted((row["id"], row["first_name"], row["last_name"]) for row in dbt_project.query(
        f"select id, first_name, last_name from {mirror}"))
    # Was [(1, 'Lovelace', 'Ada'), (2, 'Hopper', 'Grace'), (3, 'Liskov', 'Barbara'), (4, 'Edsger', 'Dijkstra')].
    assert people == source_rows(mariadb, "shop.people", ["id", "first_name", "last_name"]) == [
        (1, "Ada", "Lovelace"), (2, "Grace", "Hopper"), (3, "Barbara", "Liskov"), (4, "Edsger", "Dijkstra")]
    pairs = sorted((row["id"], row["a"], row["b"]) for row in dbt_project.query(
        f"select id, a, b from {dbt_project.schema}.{models['shop.pairs']}"))
    assert pairs == source_rows(mariadb, "shop.pairs", ["id", "a", "b"]) == [(1, 21, 10), (2, None, 30)]
    sizes = [(row["id"], row["amount"], row["weight"]) for row in dbt_project.query(
        f"select id, amount, weight from {dbt_project.schema}.{models['shop.sizes']}")]
    assert sizes == source_rows(mariadb, "shop.sizes", ["id", "amount", "weight"]) == [(1, 3, 7)]  # was (1, None, None)
    assert again.snapshot_rows == 7  # each table read again, once
