"""PostgreSQL TOAST values an update left unchanged (wal2json and Debezium send a placeholder, not
the value): a history's versions, cdc_changes()' change images and raw-log retention keep what
the source holds, on Spark + Iceberg and on Databend. (A mirror's own: test_materialization.py.)"""

from __future__ import annotations

from decimal import Decimal

from test_history import actual_changes
from test_maintenance import maintain
from test_materialization import postgres_line


def test_unchanged_toast_values_take_the_value_of_the_version_before(conformance_project):
    """An update that left a Postgres TOAST value unchanged does not send it (Debezium's placeholder):
    its version holds the value the key had, from the batch or from the stored history, also when a
    late event with another value is placed before it; a key first seen in such an update holds null,
    as its mirror does. Each version's _cdc_unsent_columns names what was filled so (by the model's
    column names: here content, read from the field body)."""
    project = conformance_project
    unsent = "__debezium_unavailable_value"
    (project.project_dir / "models" / "history" / "doc_versions.sql").write_text("""
{{ config(materialized='cdc_history', unique_key='id', source_table='public.docs') }}
select
    {{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string', 'content': 'string'}, json_fields={'content': 'body'}) }},
    {{ cdc_merge.cdc_metadata_columns() }}
from {{ cdc_merge.cdc_events(ref('raw_events')) }}
""")

    def land_and_run(name: str, lines: list[str]) -> list[tuple]:
        (project.inbox / name).write_text("\n".join(lines) + "\n")
        project.land({"public.docs": ["id"]})
        project.dbt("run", "--select", "doc_versions")
        return [tuple(row.values()) for row in project.query(
            f"select id, title, content, _cdc_unsent_columns from {project.schema}.doc_versions order by id, _cdc_seq")]

    assert land_and_run("1.json", [
        postgres_line("c", 100, {"id": 1, "title": "a", "body": "A"}),
        postgres_line("u", 200, {"id": 1, "title": "b", "body": unsent}),
        postgres_line("u", 150, {"id": 3, "title": "q", "body": unsent}),
    ]) == [(1, "a", "A", None), (1, "b", "A", ",content,"), (3, "q", None, ",content,")]
    # From the stored version.
    assert land_and_run("2.json", [postgres_line("u", 300, {"id": 1, "title": "c", "body": unsent})]) == [
        (1, "a", "A", None), (1, "b", "A", ",content,"), (1, "c", "A", ",content,"), (3, "q", None, ",content,")]
    # A late event that sent another body: the stored version after it takes that body.
    assert land_and_run("3.json", [postgres_line("u", 250, {"id": 1, "title": "l", "body": "B"})]) == [
        (1, "a", "A", None), (1, "b", "A", ",content,"), (1, "l", "B", None), (1, "c", "B", ",content,"), (3, "q", None, ",content,")]
    # cdc_changes(): a value the update did not send is not one it set.
    (project.project_dir / "models" / "history" / "doc_changes.sql").write_text(
        "{{ config(materialized='table') }}\n"
        "select * from ({{ cdc_merge.cdc_changes('public.docs', '2020-01-01 00:00:00') }}) as changes\n")
    project.dbt("run", "--select", "doc_changes")
    changes = actual_changes(project, "doc_changes")
    assert [(change["key"], change["change_image"]) for change in changes] == [
        ((1,), {"id": Decimal(1), "title": "a", "body": "A"}), ((3,), {"id": Decimal(3), "title": "q"}), ((1,), {"title": "b"}),
        ((1,), {"title": "l", "body": "B"}), ((1,), {"title": "c"})]
    # A history written before the column existed gets it (null in its rows) and keeps its versions.
    project.query(f"alter table {project.schema}.doc_versions drop column _cdc_unsent_columns")
    assert land_and_run("4.json", [postgres_line("u", 600, {"id": 3, "title": "r", "body": unsent})]) == [
        (1, "a", "A", None), (1, "b", "A", None), (1, "l", "B", None), (1, "c", "B", None), (3, "q", None, None),
        (3, "r", None, ",content,")]


def test_a_version_that_took_a_toast_value_in_place_keeps_it_when_its_key_changes_again(conformance_project):
    """track_columns: a version whose update in place sent a TOAST value and whose newest update did not
    holds that value, also once a later batch opens the key's next version, which takes it too."""
    project = conformance_project
    unsent = "__debezium_unavailable_value"
    (project.project_dir / "models" / "history" / "doc_titles.sql").write_text("""
{{ config(materialized='cdc_history', unique_key='id', source_table='public.docs', track_columns=['title']) }}
select
    {{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string', 'content': 'string'}, json_fields={'content': 'body'}) }},
    {{ cdc_merge.cdc_metadata_columns() }}
from {{ cdc_merge.cdc_events(ref('raw_events')) }}
""")
    rows = f"select id, title, content, _cdc_seq = _cdc_updated_seq, _cdc_unsent_columns from {project.schema}.doc_titles order by _cdc_seq"
    (project.inbox / "1.json").write_text("\n".join([
        postgres_line("c", 100, {"id": 1, "title": "a", "body": "A"}),
        postgres_line("u", 200, {"id": 1, "title": "b", "body": unsent}),
        postgres_line("u", 300, {"id": 1, "title": "b", "body": "B"}),
        postgres_line("u", 400, {"id": 1, "title": "b", "body": unsent})]) + "\n")
    project.land({"public.docs": ["id"]})
    project.dbt("run", "--select", "doc_titles")
    assert [tuple(row.values()) for row in project.query(rows)] == [
        (1, "a", "A", True, None), (1, "b", "B", False, ",content,")]
    (project.inbox / "2.json").write_text(postgres_line("u", 500, {"id": 1, "title": "c", "body": unsent}) + "\n")
    project.land({"public.docs": ["id"]})
    project.dbt("run", "--select", "doc_titles")
    # Were "A" in both: the stored version's body taken again from the version before it.
    assert [tuple(row.values()) for row in project.query(rows)] == [
        (1, "a", "A", True, None), (1, "b", "B", False, ",content,"), (1, "c", "B", True, ",content,")]


def test_retention_keeps_the_event_an_unchanged_toast_value_was_last_sent_in(conformance_project):
    """A Postgres update that left a TOAST value unchanged does not send it; a mirror built anew takes
    it from the key's event before that sent it. Retention kept only each key's newest event, and a
    --full-refresh then held null where the source holds the value."""
    project = conformance_project
    unsent = "__debezium_unavailable_value"
    project.write_model(
        "docs", "unique_key='id', source_table='public.docs'",
        "{{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string', 'body': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")
    (project.inbox / "docs.json").write_text("\n".join([
        postgres_line("c", 100, {"id": 1, "title": "a", "body": "A"}),
        postgres_line("c", 110, {"id": 2, "title": "p", "body": "X"}),
        postgres_line("u", 200, {"id": 1, "title": "b", "body": unsent}),
        postgres_line("u", 210, {"id": 2, "title": "q", "body": "Y"}),
        postgres_line("u", 300, {"id": 1, "title": "c", "body": unsent}),
    ]) + "\n")
    project.land({"public.docs": ["id"]})
    project.dbt("run", "--select", "docs")

    def mirrored() -> list[tuple]:
        return [tuple(row.values()) for row in project.query(f"select id, title, body from {project.schema}.docs order by id")]

    assert mirrored() == [(1, "c", "A"), (2, "q", "Y")]
    maintain(project, ["docs"], raw_retention_hours=0)
    # Key 2's older event went (its newest sent every value); key 1 keeps the one that sent its body.
    kept = project.query(f"select key, seq from {project.raw_schema}.raw_events where table_name = 'public.docs' order by seq")
    assert [row["key"] for row in kept] == ['["1"]', '["1"]', '["2"]', '["1"]']
    project.dbt("run", "--select", "docs", "--full-refresh")
    assert mirrored() == [(1, "c", "A"), (2, "q", "Y")]
