"""A view model on the embedded target is left as it stands when its compiled SQL would make it again
(the cdc_spark view materialization, adapter/dbt/adapters/cdc_spark/current_views.py): the landing's
`schema_history` was created again at every run. A changed model, a view replaced or dropped by
someone else, a column whose type changed under it, or a hook to run creates it again."""

from __future__ import annotations

UNCHANGED = "OK (unchanged)"


def run_messages(project, *names: str) -> dict[str, str]:
    result = project.dbt("run", "--select", *names)
    return {node.node.name: str(node.message) for node in result.result.results}


def test_a_view_is_created_again_only_when_what_it_would_be_differs_from_what_it_is(dbt_project, spark):
    project = dbt_project
    things = f"{project.schema}.things"
    spark.sql(f"create table {things} (id int, name string) using iceberg")
    spark.sql(f"insert into {things} values (1, 'a'), (2, 'b')")
    model = project.project_dir / "models" / "thing_report.sql"
    model.write_text(f"select id, upper(name) as name from {things}\n")
    view = f"{project.schema}.thing_report"

    def rows():
        return sorted(tuple(row) for row in spark.table(view).collect())

    assert run_messages(project, "thing_report", "schema_history")["thing_report"] != UNCHANGED
    assert run_messages(project, "thing_report", "schema_history") == {"thing_report": UNCHANGED, "schema_history": UNCHANGED}
    assert rows() == [(1, "A"), (2, "B")]

    model.write_text(f"select id, lower(name) as name from {things}\n")
    assert run_messages(project, "thing_report")["thing_report"] != UNCHANGED
    assert rows() == [(1, "a"), (2, "b")]

    spark.sql(f"create or replace view {view} as select 0 as id, 'z' as name")
    assert run_messages(project, "thing_report")["thing_report"] != UNCHANGED
    assert rows() == [(1, "a"), (2, "b")]

    spark.sql(f"drop view {view}")
    assert run_messages(project, "thing_report")["thing_report"] != UNCHANGED
    assert rows() == [(1, "a"), (2, "b")]

    spark.sql(f"alter table {things} alter column id type bigint")
    assert run_messages(project, "thing_report")["thing_report"] != UNCHANGED
    assert dict((field.name, field.dataType.simpleString()) for field in spark.table(view).schema.fields)["id"] == "bigint"
    assert run_messages(project, "thing_report")["thing_report"] == UNCHANGED

    model.write_text("{{ config(post_hook='select 1') }}\n" + f"select id, lower(name) as name from {things}\n")
    assert run_messages(project, "thing_report")["thing_report"] != UNCHANGED
    assert run_messages(project, "thing_report")["thing_report"] != UNCHANGED
