"""A column dropped and added again under its own name (ALTER TABLE ... DROP COLUMN a, ADD COLUMN a
... DEFAULT 5, or two statements read by a capture far behind, which finds the column in the
catalog): every row then holds the new column's default with no rows event, and the name is not new
to the log. The capture reads such a table again online, so the mirror holds the source's values."""

from __future__ import annotations

from python_jobs.capture import mysql as capture_mysql
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_capture_mysql_swapped_column_names import captured, mirrored, source_rows
from test_online_snapshots_mariadb import execute

TABLES = {"shop.stock": ["id"], "shop.prices": ["id"]}


def test_a_column_dropped_and_added_again_is_read_again(mariadb, dbt_project, tmp_path):  # noqa: F811
    config = captured(mariadb, dbt_project, tmp_path, TABLES,
                      "create table shop.stock (id int primary key, qty int, note varchar(10))",
                      "insert into shop.stock values (1, 10, 'a'), (2, 20, 'b')",
                      "create table shop.prices (id int primary key, price int)",
                      "insert into shop.prices values (1, 100), (2, 200)")
    execute(mariadb, "insert into shop.stock values (3, 30, 'c')",
            "alter table shop.stock drop column qty, add column qty int not null default 5",
            "insert into shop.stock values (4, 'd', 40)",
            # Read far behind: the catalog already has the column added again at the DROP.
            "alter table shop.prices drop column price",
            "alter table shop.prices add column price int default 7")
    again = capture_mysql.run(config)

    models = mirrored(dbt_project, config, TABLES)
    stock = sorted((row["id"], row["qty"], row["note"]) for row in dbt_project.query(
        f"select id, qty, note from {dbt_project.schema}.{models['shop.stock']}"))
    # Was [(1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c'), (4, 40, 'd')].
    assert stock == source_rows(mariadb, "shop.stock", ["id", "qty", "note"]) == [
        (1, 5, "a"), (2, 5, "b"), (3, 5, "c"), (4, 40, "d")]
    prices = sorted((row["id"], row["price"]) for row in dbt_project.query(
        f"select id, price from {dbt_project.schema}.{models['shop.prices']}"))
    assert prices == source_rows(mariadb, "shop.prices", ["id", "price"]) == [(1, 7), (2, 7)]  # was 100, 200
    assert again.snapshot_rows >= 6  # both tables read again
