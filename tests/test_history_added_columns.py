"""A history's model adds columns (docs/history.md, "Columns the model adds"): one the source had from
the start, placed between two of the model's columns, and one the source added later with a default
(every row has it with no rows event), after a TRUNCATE (whose delete versions have no event of their
own). The stored history takes them in place: the columns at their
places, every version (closed, current, deleted) holding what a history rebuilt from the raw log
holds, and a replay changes nothing; a run that died after the column was added (recorded pending,
not yet filled) fills it on the next one; a version whose event did not send the column (a PostgreSQL TOAST value an update left unchanged)
takes that of the key's newest event before it that sent one, as the chain gives it (with track_columns,
an earlier event of the same version). A column the model drops still asks for --full-refresh, as does any added one under
on_schema_change='fail'. On Spark + Iceberg and on embedded Databend, against a real MariaDB."""

from __future__ import annotations

from python_jobs.capture import mysql as capture_mysql
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_capture_mysql_swapped_column_names import captured, source_rows
from test_history_source_columns import assert_a_replay_changes_nothing
from test_materialization import postgres_line
from test_online_snapshots_mariadb import execute

TABLES = {"shop.items": ["id"]}
FIRST = {"id": "int", "name": "string"}
NOW = {"id": "int", "note": "string", "name": "string", "tier": "string"}
VERSION_COLUMNS = ("valid_from, valid_to, is_current, is_deleted, _cdc_key, _cdc_seq, _cdc_source_ts, _cdc_updated_seq, "
                   "_cdc_unsent_columns")


def write_history(project, name: str, columns: dict, config: str = "", source_table: str = "shop.items",
                  json_fields: str = "") -> None:
    (project.project_dir / "models" / "history" / f"{name}.sql").write_text(
        f"{{{{ config(materialized='cdc_history', unique_key='id', source_table='{source_table}', deletes='soft'{config}) }}}}\n"
        f"select {{{{ cdc_merge.cdc_columns({columns!r}{json_fields}) }}}}, {{{{ cdc_merge.cdc_metadata_columns() }}}}\n"
        "from {{ cdc_merge.cdc_events(ref('raw_events')) }}\n")


def versions(project, name: str, columns: dict = NOW) -> list[tuple]:
    return [tuple(row.values()) for row in project.query(
        f"select {', '.join(columns)}, {VERSION_COLUMNS} from {project.schema}.{name} order by _cdc_key, _cdc_seq")]


def column_names(project, name: str) -> list[str]:
    return [column.lower() for column in project.query(f"select * from {project.schema}.{name} limit 1")[0]]


def test_a_history_takes_the_columns_its_model_adds_as_a_rebuild_gives_them(mariadb, conformance_project, tmp_path):  # noqa: F811
    project = conformance_project
    config = captured(mariadb, project, tmp_path, TABLES,
                      "create table shop.items (id int primary key, note varchar(20), name varchar(10))",
                      "insert into shop.items values (1, 'n1', 'a'), (2, 'n2', 'b'), (3, 'n3', 'c')")
    execute(mariadb, "update shop.items set name = 'a2', note = 'n1b' where id = 1", "delete from shop.items where id = 3",
            "truncate table shop.items", "insert into shop.items values (1, 'n1t', 'at'), (2, 'n2t', 'bt')")
    capture_mysql.run(config)
    write_history(project, "item_versions", FIRST)
    project.land(TABLES)
    project.dbt("run", "--select", "item_versions")

    execute(mariadb, "alter table shop.items add column tier varchar(10) not null default 'gold'",
            "update shop.items set name = 'b2', tier = 'silver' where id = 2",
            "insert into shop.items values (3, 'n3b', 'c2', 'bronze')", "update shop.items set note = 'n1c' where id = 1")
    capture_mysql.run(config)
    project.land(TABLES)
    write_history(project, "item_versions", NOW)
    write_history(project, "item_versions_rebuilt", NOW)
    project.dbt("run", "--select", "item_versions", "item_versions_rebuilt")

    # Were: the run failing, naming dbt run --full-refresh, which loses the versions retention trimmed.
    assert column_names(project, "item_versions")[:4] == list(NOW)
    assert versions(project, "item_versions") == versions(project, "item_versions_rebuilt")
    current = [row[:4] for row in versions(project, "item_versions") if row[6] and not row[7]]
    assert sorted(current) == source_rows(mariadb, "shop.items", list(NOW))
    # Key 1's third version and key 2's second: the truncate's, which hold the versions they closed.
    assert [row[1] for row in versions(project, "item_versions")] == [
        "n1", "n1b", "n1b", "n1t", "n1c", "n2", "n2", "n2t", "n2t", "n3", "n3", "n3b"]

    assert_a_replay_changes_nothing(project, "item_versions")


def test_a_truncate_after_a_column_added_with_a_default_closes_versions_holding_it(mariadb, conformance_project, tmp_path):  # noqa: F811
    project = conformance_project
    config = captured(mariadb, project, tmp_path, TABLES,
                      "create table shop.items (id int primary key, note varchar(20), name varchar(10))",
                      "insert into shop.items values (1, 'n1', 'a'), (2, 'n2', 'b')")
    capture_mysql.run(config)
    project.land(TABLES)
    for name in ("in_two_runs", "in_three_runs"):
        write_history(project, name, NOW)
    project.dbt("run", "--select", "in_two_runs", "in_three_runs")
    execute(mariadb, "alter table shop.items add column tier varchar(10) not null default 'gold'")
    capture_mysql.run(config)
    project.land(TABLES)
    project.dbt("run", "--select", "in_three_runs")
    execute(mariadb, "truncate table shop.items", "insert into shop.items values (1, 'n1t', 'at', 'silver')")
    capture_mysql.run(config)
    project.land(TABLES)
    write_history(project, "in_one_run", NOW)
    write_history(project, "taken_in_place", FIRST)
    project.dbt("run", "--select", "in_two_runs", "in_three_runs", "in_one_run", "taken_in_place")
    write_history(project, "taken_in_place", NOW)
    project.dbt("run", "--select", "taken_in_place")

    # The truncate's delete versions hold the rows as the truncate found them, tier 'gold' since the ALTER.
    # Were null, but in the history that applied the ALTER before the truncate.
    expected = versions(project, "in_three_runs")
    assert [(row[0], row[3], row[7]) for row in expected] == [
        (1, "gold", False), (1, "gold", True), (1, "silver", False), (2, "gold", False), (2, "gold", True)]
    for name in ("in_two_runs", "in_one_run", "taken_in_place"):
        assert versions(project, name) == expected, name
    current = [row[:4] for row in expected if row[6] and not row[7]]
    assert sorted(current) == source_rows(mariadb, "shop.items", list(NOW))


def test_a_column_recorded_pending_is_filled_on_the_next_run(mariadb, conformance_project, tmp_path):  # noqa: F811
    project = conformance_project
    config = captured(mariadb, project, tmp_path, TABLES,
                      "create table shop.items (id int primary key, note varchar(20), name varchar(10))",
                      "insert into shop.items values (1, 'n1', 'a'), (2, 'n2', 'b')")
    execute(mariadb, "update shop.items set note = 'n1b' where id = 1")
    capture_mysql.run(config)
    write_history(project, "item_versions", FIRST)
    project.land(TABLES)
    project.dbt("run", "--select", "item_versions")
    columns = {"id": "int", "name": "string", "note": "string"}
    write_history(project, "item_versions", columns)
    write_history(project, "item_versions_rebuilt", columns)
    project.dbt("run", "--select", "item_versions", "item_versions_rebuilt")
    assert versions(project, "item_versions", columns) == versions(project, "item_versions_rebuilt", columns)

    # What a run that died after adding the column leaves: the column recorded pending, its values not filled.
    schema = project.schema
    project.execute(f"update {schema}.item_versions set note = null")
    project.execute(f"insert into {schema}.cdc_merge_schema_changes select target_table, change_ordinal + 10, column_name, "
                    "change, old_type, new_type, rows_backfilled, committed_at, invocation_id from "
                    f"{schema}.cdc_merge_schema_changes where column_name = 'note' and change = 'add_pending'")
    project.dbt("run", "--select", "item_versions")
    assert versions(project, "item_versions", columns) == versions(project, "item_versions_rebuilt", columns)
    assert [row[2] for row in versions(project, "item_versions", columns)] == ["n1", "n1b", "n2"]

    # A column dropped from the model, or added under on_schema_change='fail', asks for a rebuild.
    write_history(project, "item_versions", FIRST)
    assert not project.dbt("run", "--select", "item_versions", expect_success=False).success
    assert "a column dropped, renamed or moved needs it rebuilt" in project.dbt_log()
    write_history(project, "item_versions", {**columns, "tier": "string"}, ", on_schema_change='fail'")
    assert not project.dbt("run", "--select", "item_versions", expect_success=False).success
    assert "set it to 'append_new_columns' to add tier in place" in project.dbt_log()


def test_an_added_column_an_update_did_not_send_takes_the_value_of_the_event_before(conformance_project):
    project = conformance_project
    unsent = "__debezium_unavailable_value"
    docs = {"id": "int", "content": "string", "title": "string"}
    (project.inbox / "1.json").write_text("\n".join([
        postgres_line("c", 100, {"id": 1, "title": "a", "body": "A"}),
        postgres_line("u", 200, {"id": 1, "title": "b", "body": unsent}),
        postgres_line("u", 150, {"id": 3, "title": "q", "body": unsent}),
        postgres_line("u", 300, {"id": 1, "title": "c", "body": unsent}),
        postgres_line("u", 250, {"id": 1, "title": "l", "body": "B"}),
        # Key 5 keeps its title, so its updates go into its version in place (track_columns), the newest
        # sending no body; a late one among them sent one.
        postgres_line("c", 100, {"id": 5, "title": "x", "body": "X"}),
        postgres_line("u", 200, {"id": 5, "title": "x", "body": "Y"}),
        postgres_line("u", 300, {"id": 5, "title": "x", "body": unsent}),
        postgres_line("u", 260, {"id": 5, "title": "x", "body": "Z"}),
        postgres_line("u", 400, {"id": 5, "title": "y", "body": unsent}),
        postgres_line("u", 500, {"id": 5, "title": "y", "body": unsent})]) + "\n")
    project.land({"public.docs": ["id"]})
    tracked = ", track_columns=['title']"
    write_history(project, "doc_versions", {"id": "int", "title": "string"}, tracked, source_table="public.docs")
    project.dbt("run", "--select", "doc_versions")
    for name in ("doc_versions", "doc_versions_rebuilt"):
        write_history(project, name, docs, tracked, source_table="public.docs", json_fields=", json_fields={'content': 'body'}")
    project.dbt("run", "--select", "doc_versions", "doc_versions_rebuilt")

    assert versions(project, "doc_versions", docs) == versions(project, "doc_versions_rebuilt", docs)
    # Was content null in the versions of updates that did not send it, then key 5's that of the version before.
    assert [row[:3] + row[-1:] for row in versions(project, "doc_versions", docs)] == [
        (1, "A", "a", None), (1, "A", "b", ",content,"), (1, "B", "l", None), (1, "B", "c", ",content,"),
        (3, None, "q", ",content,"), (5, "Z", "x", ",content,"), (5, "Z", "y", ",content,")]
