"""A real MariaDB table gains a column with a default (every row has it with no rows event) and widens
a 32-bit float to a double (the server widens each row's value exactly, 1.1 to 1.100000023841858)
while a history and a mirror of it run: the history's versions older than the ALTER take what the
source gave those rows, as the mirror's rows do, so its current versions are the source's rows; a
version of a key changed after the ALTER keeps its own values, one that took such a change in place
(track_columns) too; a replay changes nothing. A column
retyped beyond what the history's column holds (int made bigint) stops the run, naming the column and
--full-refresh. On Spark + Iceberg and on embedded Databend."""

from __future__ import annotations

import shutil

from python_jobs.capture import mysql as capture_mysql
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_capture_mysql_swapped_column_names import captured, source_rows
from test_online_snapshots_mariadb import execute

TABLES = {"shop.items": ["id"]}
COLUMNS = "{{ cdc_merge.cdc_columns({'id': 'int', 'name': 'string', 'ratio': 'double', 'tier': 'string'}) }}"


def models(project) -> None:
    project.write_model("items", "unique_key='id', source_table='shop.items'",
                        COLUMNS + ", {{ cdc_merge.cdc_metadata_columns() }}")
    for name, config in (("item_versions", ""), ("item_names", ", track_columns=['name']")):
        (project.project_dir / "models" / "history" / f"{name}.sql").write_text(
            f"{{{{ config(materialized='cdc_history', unique_key='id', source_table='shop.items'{config}) }}}}\n"
            f"select {COLUMNS}, {{{{ cdc_merge.cdc_metadata_columns() }}}}\n"
            "from {{ cdc_merge.cdc_events(ref('raw_events')) }}\n")


def rows(project, sql: str) -> list[tuple]:
    return [tuple(row.values()) for row in project.query(sql)]


def test_history_versions_older_than_an_added_column_hold_its_default(mariadb, conformance_project, tmp_path):  # noqa: F811
    project = conformance_project
    config = captured(mariadb, project, tmp_path, TABLES,
                      "create table shop.items (id int primary key, name varchar(10), ratio float)",
                      "insert into shop.items values (1, 'a', 1.1), (2, 'b', 2.2), (3, 'c', 3.3)")
    execute(mariadb, "update shop.items set name = 'a2' where id = 1",
            "alter table shop.items add column tier varchar(10) not null default 'gold', modify ratio double",
            "update shop.items set name = 'b2', tier = 'silver' where id = 2",
            "update shop.items set tier = 'bronze' where id = 3")
    capture_mysql.run(config)
    models(project)
    project.land(TABLES)
    project.dbt("run", "--select", "items", "item_versions", "item_names")

    source = source_rows(mariadb, "shop.items", ["id", "name", "ratio", "tier"])
    assert source[0][2] != 1.1 and [row[3] for row in source] == ["gold", "silver", "bronze"]
    assert rows(project, f"select id, name, ratio, tier from {project.schema}.items order by id") == source
    history = f"select id, name, ratio, tier from {project.schema}.item_versions"
    # Was tier null and ratio 1.1, 3.3 in keys 1 and 3, whose source rows hold 'gold' and the exact float.
    assert rows(project, f"{history} where is_current order by id") == source
    assert rows(project, f"{history} order by id, _cdc_seq") == [
        (1, "a", source[0][2], "gold"), source[0], (2, "b", source[1][2], "gold"), source[1],
        (3, "c", source[2][2], "gold"), source[2]]
    # Key 3's version opened before the ALTER and took the update after it in place: it holds that update's
    # 'bronze' (was 'gold', the default set over it).
    names = f"select id, name, ratio, tier from {project.schema}.item_names"
    assert rows(project, f"{names} where is_current order by id") == source
    assert rows(project, f"{names} order by id, _cdc_seq") == [
        (1, "a", source[0][2], "gold"), source[0], (2, "b", source[1][2], "gold"), source[1], source[2]]

    assert_a_replay_changes_nothing(project, "item_versions")


def assert_a_replay_changes_nothing(project, history: str) -> None:
    """The same events landed again (every file under a new name) leave the history as it is, not even a snapshot."""
    for path in sorted(project.inbox.iterdir()):
        shutil.copy(path, path.with_name("again-" + path.name))
    version = project.table_version(f"{project.schema}.{history}")
    project.land(TABLES)
    project.dbt("run", "--select", history)
    assert project.table_version(f"{project.schema}.{history}") == version


def test_a_history_stops_at_a_retype_its_column_cannot_hold(mariadb, conformance_project, tmp_path):  # noqa: F811
    project = conformance_project
    config = captured(mariadb, project, tmp_path, TABLES, "create table shop.items (id int primary key, qty int)",
                      "insert into shop.items values (1, 10), (2, 20)")
    execute(mariadb, "alter table shop.items modify qty bigint", "update shop.items set qty = 1099511627776 where id = 1")
    capture_mysql.run(config)
    history = project.project_dir / "models" / "history" / "item_versions.sql"
    history.write_text("{{ config(materialized='cdc_history', unique_key='id', source_table='shop.items') }}\n"
                       "select {{ cdc_merge.cdc_columns({'id': 'int', 'qty': 'int'}) }}, {{ cdc_merge.cdc_metadata_columns() }}\n"
                       "from {{ cdc_merge.cdc_events(ref('raw_events')) }}\n")
    project.land(TABLES)
    # Was a current version of key 1 with qty null (Spark) where the source holds 1099511627776.
    assert not project.dbt("run", "--select", "item_versions", expect_success=False).success
    assert ("shop.items.qty is bigint(20) at the source since" in project.dbt_log()
            and "dbt run --full-refresh --select item_versions" in project.dbt_log())
    assert project.query(f"select count(*) as n from {project.schema}.item_versions")[0]["n"] == 0

    history.write_text(history.read_text().replace("'qty': 'int'", "'qty': 'bigint'"))
    project.dbt("run", "--select", "item_versions", "--full-refresh")
    assert rows(project, f"select id, qty from {project.schema}.item_versions where is_current order by id") == source_rows(
        mariadb, "shop.items", ["id", "qty"]) == [(1, 1099511627776), (2, 20)]
