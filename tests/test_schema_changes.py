"""A mirror follows its model's columns without a rebuild, as on_schema_change says: added
columns backfilled from the raw log, types widened in place, dropped columns kept or dropped."""

from __future__ import annotations

from test_materialization import postgres_line, run_error

DOCS = {"public.docs": ["id"]}


def docs_model(project, columns: dict[str, str], on_schema_change: str = "append_new_columns") -> None:
    project.write_model(
        "docs", f"unique_key='id', source_table='public.docs', on_schema_change='{on_schema_change}'",
        f"{{{{ cdc_merge.cdc_columns({columns!r}) }}}}, {{{{ cdc_merge.cdc_metadata_columns() }}}}",
    )


def land(project, name: str, lines: list[str]) -> None:
    (project.inbox / f"{name}.json").write_text("\n".join(lines) + "\n")
    project.land(DOCS)


def mirrored(project, columns: str) -> list[tuple]:
    return [tuple(row.values()) for row in project.query(f"select {columns} from {project.schema}.docs order by id")]


def mirror_columns(project) -> dict[str, str]:
    rows = project.query(f"describe {project.schema}.docs") if not project.on_databend else project.query(
        f"desc {project.schema}.docs")
    return {str(list(row.values())[0]).lower(): str(list(row.values())[1]).lower().replace(" ", "") for row in rows
            if list(row.values())[0] and not str(list(row.values())[0]).startswith("#")}


def test_added_widened_and_dropped_columns_apply_without_a_rebuild(conformance_project):
    project = conformance_project
    docs_model(project, {"id": "int", "title": "string", "qty": "int"})
    land(project, "1", [
        postgres_line("c", 100, {"id": 1, "title": "a", "qty": 1}),
        postgres_line("c", 110, {"id": 2, "title": "b", "qty": 2}),
        postgres_line("c", 120, {"id": 3, "title": "c", "qty": 3}),
        # The source table got a column `note`: images from here on carry it.
        postgres_line("u", 200, {"id": 1, "title": "a", "qty": 1, "note": "n1"}),
        postgres_line("c", 210, {"id": 4, "title": "d", "qty": 4, "note": "n4"}),
        postgres_line("u", 220, {"id": 3, "title": "c", "qty": 3, "note": "n3"}),
    ])
    project.dbt("run", "--select", "docs")
    # Retention trimmed the event key 3 was last written from: it cannot be backfilled.
    raw = f"{project.raw_schema}.raw_events"
    if project.on_databend:
        project.query(f"delete from {raw} where seq = (select max(seq) from {raw})")
    else:
        project.spark.sql(f"delete from {raw} where seq = (select max(seq) from {raw})")

    # The model adds note and widens qty: one run, no --full-refresh.
    docs_model(project, {"id": "int", "title": "string", "qty": "bigint", "note": "string"})
    project.dbt("run", "--select", "docs")
    assert mirrored(project, "id, title, qty, note") == [
        (1, "a", 1, "n1"), (2, "b", 2, None), (3, "c", 3, None), (4, "d", 4, "n4")]
    assert mirror_columns(project)["qty"] == "bigint"
    log = project.dbt_log()
    assert "note, qty: 3 of 4 rows backfilled from the raw log" in log
    assert "qty widened int -> bigint" in log
    changes = project.query(
        f"select column_name, change, rows_backfilled from {project.schema}.cdc_merge_schema_changes order by change_ordinal")
    assert [tuple(row.values()) for row in changes] == [
        ("note", "add_pending", None), ("qty", "widen_pending", None), ("note", "backfilled", 3), ("qty", "backfilled", 3)]

    # Values only the widened type holds, and key 3's next event fills its note.
    land(project, "2", [
        postgres_line("u", 300, {"id": 2, "title": "b", "qty": 2**40, "note": "n2"}),
        postgres_line("u", 310, {"id": 3, "title": "c2", "qty": 3, "note": "n3b"}),
    ])
    project.dbt("run", "--select", "docs")
    assert mirrored(project, "id, qty, note") == [(1, 1, "n1"), (2, 2**40, "n2"), (3, 3, "n3b"), (4, 4, "n4")]
    before = project.table_version(f"{project.schema}.docs")
    project.dbt("run", "--select", "docs")
    assert project.table_version(f"{project.schema}.docs") == before

    # The source dropped title: append_new_columns keeps it, null in rows written from now on.
    docs_model(project, {"id": "int", "qty": "bigint", "note": "string"})
    land(project, "3", [postgres_line("u", 400, {"id": 4, "qty": 5, "note": "n4b"})])
    project.dbt("run", "--select", "docs")
    assert mirrored(project, "id, title, qty, note") == [
        (1, "a", 1, "n1"), (2, "b", 2**40, "n2"), (3, "c2", 3, "n3b"), (4, None, 5, "n4b")]
    project.dbt("run", "--select", "docs")
    kept = project.query(f"select count(*) as kept from {project.schema}.cdc_merge_schema_changes where change = 'kept'")
    assert kept == [{"kept": 1}]

    # sync_all_columns drops it from the mirror.
    docs_model(project, {"id": "int", "qty": "bigint", "note": "string"}, "sync_all_columns")
    project.dbt("run", "--select", "docs")
    assert "title" not in mirror_columns(project)
    assert mirrored(project, "id, qty, note") == [(1, 1, "n1"), (2, 2**40, "n2"), (3, 3, "n3b"), (4, 5, "n4b")]


def test_fail_ignore_and_a_type_that_cannot_widen(conformance_project):
    project = conformance_project
    docs_model(project, {"id": "int", "title": "string", "qty": "bigint"})
    land(project, "1", [postgres_line("c", 100, {"id": 1, "title": "a", "qty": 1, "note": "n1"})])
    project.dbt("run", "--select", "docs")

    docs_model(project, {"id": "int", "title": "string", "qty": "bigint", "note": "string"}, "fail")
    error = run_error(project.dbt("run", "--select", "docs", expect_success=False))
    assert "new column note string" in error and "on_schema_change is 'fail'" in error
    assert "dbt run --full-refresh --select docs" in error

    docs_model(project, {"id": "int", "title": "string", "qty": "int"})
    error = run_error(project.dbt("run", "--select", "docs", expect_success=False))
    assert "column qty is bigint in" in error and "and int in the model" in error and "cannot change that type in place" in error
    assert mirror_columns(project)["qty"] == "bigint"

    # ignore: the mirror keeps its columns; a column the model stopped selecting is null in new rows.
    docs_model(project, {"id": "int", "qty": "bigint", "note": "string"}, "ignore")
    land(project, "2", [postgres_line("c", 200, {"id": 2, "title": "b", "qty": 2, "note": "n2"})])
    project.dbt("run", "--select", "docs")
    assert "note" not in mirror_columns(project)
    assert mirrored(project, "id, title, qty") == [(1, "a", 1), (2, None, 2)]


def test_an_unknown_on_schema_change_is_a_config_error(dbt_project, spark):
    docs_model(dbt_project, {"id": "int"}, "rebuild")
    error = run_error(dbt_project.dbt("run", "--select", "docs", expect_success=False))
    assert "on_schema_change must be 'append_new_columns'" in error
    assert not spark.catalog.tableExists(f"{dbt_project.schema}.cdc_merge_offsets")


def test_a_soft_delete_mirror_gets_added_columns_too(dbt_project):
    """A soft-deleted row was last written from its delete, whose before image gives the new column."""
    project = dbt_project
    project.write_model(
        "docs", "unique_key='id', source_table='public.docs', deletes='soft'",
        "{{ cdc_merge.cdc_columns({'id': 'int'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")
    land(project, "1", [postgres_line("c", 100, {"id": 1, "title": "a"}), postgres_line("c", 110, {"id": 2, "title": "b"}),
                        postgres_line("d", 120, {"id": 2, "title": "b"})])
    project.dbt("run", "--select", "docs")
    project.write_model(
        "docs", "unique_key='id', source_table='public.docs', deletes='soft'",
        "{{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")
    project.dbt("run", "--select", "docs")
    assert mirrored(project, "id, title, _cdc_deleted") == [(1, "a", False), (2, "b", True)]


def test_a_column_selected_again_gets_the_values_of_the_rows_written_without_it(conformance_project):
    """append_new_columns keeps a column the model stops selecting, null in rows written meanwhile;
    selected again, it is backfilled from the raw log as an added column is, not left null."""
    project = conformance_project
    docs_model(project, {"id": "int", "title": "string"})
    land(project, "1", [postgres_line("c", 100, {"id": 1, "title": "a"}), postgres_line("c", 110, {"id": 2, "title": "b"})])
    project.dbt("run", "--select", "docs")
    docs_model(project, {"id": "int"})
    land(project, "2", [postgres_line("u", 200, {"id": 1, "title": "a2"}), postgres_line("c", 210, {"id": 3, "title": "c"})])
    project.dbt("run", "--select", "docs")
    assert mirrored(project, "id, title") == [(1, None), (2, "b"), (3, None)]

    docs_model(project, {"id": "int", "title": "string"})
    project.dbt("run", "--select", "docs")
    assert mirrored(project, "id, title") == [(1, "a2"), (2, "b"), (3, "c")]
    assert "title: 3 of 3 rows backfilled from the raw log" in project.dbt_log()
    # Backfilled once: the next runs are idle, and a column dropped again is recorded as kept again.
    before = project.table_version(f"{project.schema}.docs")
    project.dbt("run", "--select", "docs")
    assert project.table_version(f"{project.schema}.docs") == before


def test_a_model_whose_last_line_is_a_comment_applies(dbt_project):
    """The steps wrap the model's SQL in parentheses: a `--` comment on its last line (a mirror's, a history's)
    must not swallow them."""
    project = dbt_project
    docs_model(project, {"id": "int", "title": "string"})
    model = project.project_dir / "models" / "mirrors" / "docs.sql"
    model.write_text(model.read_text().rstrip() + "\n-- the titles, as the source has them\n")
    project.write_model("docs_history", "materialized='cdc_history', unique_key='id', source_table='public.docs'",
                        "{{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")
    history = project.project_dir / "models" / "mirrors" / "docs_history.sql"
    history.write_text(history.read_text().rstrip() + "\n-- every version")
    land(project, "1", [postgres_line("c", 100, {"id": 1, "title": "a"}), postgres_line("c", 110, {"id": 2, "title": "b"})])
    project.dbt("run", "--select", "docs", "docs_history")
    assert project.query(f"select count(*) as n from {project.schema}.docs_history") == [{"n": 2}]
    docs_model(project, {"id": "int", "title": "string", "qty": "int"})
    model.write_text(model.read_text().rstrip() + "\n-- qty added\n")
    land(project, "2", [postgres_line("u", 200, {"id": 1, "title": "a2", "qty": 5})])
    project.dbt("run", "--select", "docs")
    assert mirrored(project, "id, title, qty") == [(1, "a2", 5), (2, "b", None)]


def test_an_update_without_its_toast_value_in_the_run_that_adds_a_column_keeps_the_stored_value(conformance_project):
    """The model adds a column in the run whose update did not send its TOAST value: the update keeps
    the mirror's body, read from the stored row as it was before the column was added."""
    project = conformance_project
    docs_model(project, {"id": "int", "title": "string", "body": "string"})
    land(project, "1", [postgres_line("c", 100, {"id": 1, "title": "a", "body": "B1"}),
                        postgres_line("c", 110, {"id": 2, "title": "b", "body": "B2"})])
    project.dbt("run", "--select", "docs")

    # Retention trimmed the applied events: nothing to backfill, so no commit of the mirror comes
    # between the ALTER and the batch.
    raw = f"{project.raw_schema}.raw_events"
    (project.query if project.on_databend else project.spark.sql)(f"delete from {raw}")
    docs_model(project, {"id": "int", "title": "string", "body": "string", "note": "string"})
    land(project, "2", [postgres_line("u", 200, {"id": 1, "title": "a2", "body": "__debezium_unavailable_value"})])
    project.dbt("run", "--select", "docs")
    assert mirrored(project, "id, title, body, note") == [(1, "a2", "B1", None), (2, "b", "B2", None)]
