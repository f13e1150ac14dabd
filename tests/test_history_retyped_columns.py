"""A history's model retypes a column (docs/history.md, "Columns the model adds"). A type every stored
value fits, which the engine changes in place (an int made bigint, a decimal's precision at the same
scale), is widened in place, and the new values are kept whole; any other (a decimal's scale) stops
the run before it writes, saying to rebuild the history, where written into the stored type the
values were rounded. On Spark + Iceberg and on embedded Databend, against a real MariaDB."""

from __future__ import annotations

from decimal import Decimal

from python_jobs.capture import mysql as capture_mysql
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_capture_mysql_swapped_column_names import captured, source_rows
from test_history_added_columns import write_history
from test_online_snapshots_mariadb import execute

TABLES = {"shop.items": ["id"]}
COLUMNS = ["id", "qty", "price"]


def current_rows(project, name: str) -> list[tuple]:
    return sorted(tuple(row.values()) for row in project.query(
        f"select {', '.join(COLUMNS)} from {project.schema}.{name} where is_current and not is_deleted"))


def versions(project, name: str) -> list[tuple]:
    return sorted(tuple(row.values()) for row in project.query(f"select {', '.join(COLUMNS)}, _cdc_seq from {project.schema}.{name}"))


def test_a_column_the_model_widens_is_widened_in_place_and_a_new_scale_asks_for_a_rebuild(  # noqa: F811
        mariadb, conformance_project, tmp_path):
    project = conformance_project
    config = captured(mariadb, project, tmp_path, TABLES,
                      "create table shop.items (id int primary key, qty int, price decimal(12,4))",
                      "insert into shop.items values (1, 5, 1.2345), (2, 6, 2.5)")
    write_history(project, "item_versions", {"id": "int", "qty": "int", "price": "decimal(12,4)"})
    project.land(TABLES)
    project.dbt("run", "--select", "item_versions")

    execute(mariadb, "alter table shop.items modify qty bigint, modify price decimal(16,4)",
            "update shop.items set qty = 5000000000, price = 123456789012.3456 where id = 1")
    capture_mysql.run(config)
    project.land(TABLES)
    write_history(project, "item_versions", {"id": "int", "qty": "bigint", "price": "decimal(16,4)"})
    project.dbt("run", "--select", "item_versions")
    assert current_rows(project, "item_versions") == source_rows(mariadb, "shop.items", COLUMNS)
    assert (1, 5, Decimal("1.2345")) in [row[:3] for row in versions(project, "item_versions")]

    execute(mariadb, "alter table shop.items modify price decimal(18,6)",
            "update shop.items set price = 7.893456 where id = 2")
    capture_mysql.run(config)
    project.land(TABLES)
    before = versions(project, "item_versions")
    write_history(project, "item_versions", {"id": "int", "qty": "bigint", "price": "decimal(18,6)"})
    project.dbt("run", "--select", "item_versions", expect_success=False)
    # Was: the run succeeding, the stored decimal(16,4) holding 7.8935 for the source's 7.893456.
    assert ("column price is decimal(16,4) in" in project.dbt_log()
            and "dbt run --full-refresh --select item_versions" in project.dbt_log())
    assert versions(project, "item_versions") == before

    project.dbt("run", "--full-refresh", "--select", "item_versions")
    assert current_rows(project, "item_versions") == source_rows(mariadb, "shop.items", COLUMNS)
