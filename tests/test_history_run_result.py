"""What `dbt run` says of a cdc_history model: 'OK' and the version rows it wrote, as of a mirror, on
Spark + Iceberg and on Databend (where its line read 'adapter response -1'); its cdc_merge_runs rows,
which the status page and cdc-status show; and what it writes to its deletes table."""

from __future__ import annotations

from test_history_truncate import docs_history
from test_materialization import postgres_line
from test_truncate import land


def test_a_history_run_says_ok_and_the_rows_it_wrote_on_either_engine(conformance_project):
    project = conformance_project
    docs_history(project, "hard")
    land(project, "1", [postgres_line("c", 100 + i, {"id": i, "title": "v1"}) for i in (1, 2, 3)]
         + [postgres_line("u", 110, {"id": 1, "title": "v2"})])

    (result,) = project.dbt("run", "--select", "docs_versions").result.results

    assert (result.message, result.adapter_response["code"], result.adapter_response["rows_affected"]) == ("OK", "OK", 4)
    # Nothing new: no rows.
    (idle,) = project.dbt("run", "--select", "docs_versions").result.results
    assert (idle.message, idle.adapter_response["rows_affected"]) == ("OK", 0)
    # A runs row each, as a mirror's: the first run wrote 4 versions, the third one more, closing
    # id 2's first (a row written again: an update).
    land(project, "2", [postgres_line("u", 120, {"id": 2, "title": "v2"})])
    project.dbt("run", "--select", "docs_versions")
    runs = project.query(f"select events_read, rows_inserted, rows_updated, rows_deleted, lag_seconds, offset_snapshot "
                         f"from {project.schema}.cdc_merge_runs where target_table = '{project.schema}.docs_versions' "
                         f"order by finished_at")
    assert [(row["events_read"], row["rows_inserted"], row["rows_updated"], row["rows_deleted"]) for row in runs] == [
        (4, 4, 0, 0), (0, 0, 0, 0), (1, 1, 1, 0)]
    assert [row["lag_seconds"] is not None for row in runs] == [True, False, True]
    assert runs[0]["offset_snapshot"] == runs[1]["offset_snapshot"] != runs[2]["offset_snapshot"]


def test_a_batch_without_deletes_leaves_the_deletes_table_as_it_was(conformance_project):
    """A hard-delete history keeps its deletes in a table of their own, written before its versions.
    A batch with none wrote nothing there, but committed an empty snapshot to it every run, on either engine."""
    project = conformance_project
    docs_history(project, "hard")
    deletes = f"{project.schema}.docs_versions__cdc_history_deletes"
    land(project, "1", [postgres_line("c", 100 + i, {"id": i, "title": "v1"}) for i in (1, 2, 3)]
         + [postgres_line("d", 110, {"id": 3, "title": "v1"})])
    project.dbt("run", "--select", "docs_versions")
    kept = project.history_length(deletes)

    land(project, "2", [postgres_line("u", 120, {"id": 1, "title": "v2"})])
    project.dbt("run", "--select", "docs_versions")
    assert project.history_length(deletes) == kept

    land(project, "3", [postgres_line("d", 130, {"id": 2, "title": "v1"})])
    project.dbt("run", "--select", "docs_versions")
    assert project.history_length(deletes) > kept
    assert sorted(row["_cdc_key"] for row in project.query(f"select _cdc_key from {deletes}")) == ['["2"]', '["3"]']
    assert [(row["id"], row["title"], row["is_current"]) for row in project.query(
        f"select id, title, is_current from {project.schema}.docs_versions order by id, valid_from")] == [
        (1, "v1", False), (1, "v2", True), (2, "v1", False), (3, "v1", False)]
