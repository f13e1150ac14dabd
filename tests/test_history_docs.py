"""A history's or a mirror's description, persisted by dbt's persist_docs, and what cdc_merge
records of the table: each must stay what it is. On Databend a table has no properties of a user's
choosing besides its comment, which persist_docs writes for a history, so a history's mode is kept
in cdc_merge_table_settings; a Databend mirror's comment holds its model's checksum."""

from __future__ import annotations

import shutil

from harness.dbt_project import error_text
from harness.mirror_project import make_project
from test_dbt_commands import COLUMNS, CONFIG, FLINK_MYSQL, PRODUCTS, mysql_line
from test_dbt_first_day import HISTORY_CONFIG, count

DESCRIPTION = "Every version of each product, as the source's log gives it."
DOCS_YML = """
version: 2
models:
  - name: hist_documented
    description: "%s"
    config: {persist_docs: {relation: true, columns: true}}
    columns:
      - {name: name, description: "The product's name."}
""" % DESCRIPTION


def table_comment(project, name: str) -> str | None:
    if project.on_databend:
        rows = project.query(f"select comment from system.tables where database = '{project.schema}' and name = '{name}'")
        return rows[0]["comment"] or None
    rows = project.query(f"describe table extended {project.schema}.{name}")
    return next((row["data_type"] for row in rows if row["col_name"] == "Comment"), None)


def refused(project, built: str, now: str) -> None:
    failed = project.dbt("run", "--select", "hist_documented", expect_success=False)
    assert f"hist_documented was built with deletes='{built}' and the model now says deletes='{now}'" in error_text(failed), \
        error_text(failed)


def test_a_history_with_persisted_docs_keeps_its_description_and_its_deletes_mode(conformance_project):
    """persist_docs sets the table's comment to the model's description on every run; the history's deletes
    mode must still be known, so that a run in the other mode is refused, and a full refresh changes it.
    Column descriptions are not persisted on Databend: asked for, they fail no run."""
    project = conformance_project
    project.write_model("hist_documented", HISTORY_CONFIG + ", deletes='soft'", COLUMNS)
    (project.project_dir / "models" / "mirrors" / "_docs.yml").write_text(DOCS_YML)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "hist_documented")
    assert table_comment(project, "hist_documented") == DESCRIPTION
    assert not project.on_databend or "column descriptions are not persisted on Databend" in project.dbt_log()
    (project.inbox / "part-2.json").write_text(mysql_line("d", 20, {"id": 102, "name": "car battery"}) + "\n")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "hist_documented")
    assert table_comment(project, "hist_documented") == DESCRIPTION
    versions = count(project, "hist_documented")

    project.write_model("hist_documented", HISTORY_CONFIG + ", deletes='hard'", COLUMNS)
    refused(project, "soft", "hard")
    assert count(project, "hist_documented") == versions

    # A full refresh builds it in the new mode, which it keeps; the description stays.
    project.dbt("run", "--select", "hist_documented", "--full-refresh")
    assert table_comment(project, "hist_documented") == DESCRIPTION
    project.dbt("run", "--select", "hist_documented")
    project.write_model("hist_documented", HISTORY_CONFIG + ", deletes='soft'", COLUMNS)
    refused(project, "hard", "soft")
    assert table_comment(project, "hist_documented") == DESCRIPTION


def test_a_databend_history_whose_mode_is_in_its_comment_is_recognised_and_migrated(spark, databend_url, tmp_path):
    """A history built when Databend kept the mode in the table's comment: its mode is still known, and its
    next run records it in cdc_merge_table_settings and gives the comment back to persist_docs."""
    project = make_project(spark, tmp_path, "databend_local")
    project.write_model("hist_documented", HISTORY_CONFIG + ", deletes='soft'", COLUMNS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "hist_documented")
    # As such a history is stored: the mode in the comment, no row of its own in the settings table.
    settings = f"{project.schema}.cdc_merge_table_settings"
    if project.query(f"select * from system.tables where database = '{project.schema}' and name = 'cdc_merge_table_settings'"):
        project.execute(f"delete from {settings} where target_table = '{project.schema}.hist_documented'")
    project.execute(f"alter table {project.schema}.hist_documented comment = 'cdc-merge.deletes=soft'")

    project.write_model("hist_documented", HISTORY_CONFIG + ", deletes='hard'", COLUMNS)
    refused(project, "soft", "hard")
    project.write_model("hist_documented", HISTORY_CONFIG + ", deletes='soft'", COLUMNS)
    (project.project_dir / "models" / "mirrors" / "_docs.yml").write_text(DOCS_YML)
    project.dbt("run", "--select", "hist_documented")
    assert table_comment(project, "hist_documented") == DESCRIPTION
    assert [row["value"] for row in project.query(
        f"select value from {settings} where target_table = '{project.schema}.hist_documented' and setting = 'deletes'")] == ["soft"]
    project.write_model("hist_documented", HISTORY_CONFIG + ", deletes='hard'", COLUMNS)
    refused(project, "soft", "hard")


MIRROR_DOCS_YML = """
version: 2
models:
  - name: mirror_documented
    description: "%s"
    config: {persist_docs: {relation: true}}
"""


def test_a_mirror_with_persisted_docs_gets_its_description_on_spark_and_keeps_its_checksum_on_databend(conformance_project):
    """Spark: the mirror's comment is the model's description after a run with events and after an idle
    one, a changed description included. Databend: its comment holds the model's checksum, so the
    description is not written there and the run says so."""
    project = conformance_project
    project.write_model("mirror_documented", "materialized='cdc_merge', " + CONFIG, COLUMNS)
    docs = project.project_dir / "models" / "mirrors" / "_docs.yml"
    docs.write_text(MIRROR_DOCS_YML % DESCRIPTION)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "mirror_documented")
    rows = project.query(f"select count(*) as n from {project.schema}.mirror_documented")[0]["n"]
    if project.on_databend:
        assert (table_comment(project, "mirror_documented") or "").startswith("cdc-merge.model-sql-md5=")
        assert "a mirror's description is not persisted on Databend" in project.dbt_log()
        return
    assert table_comment(project, "mirror_documented") == DESCRIPTION
    # Nothing new: an idle run still gives a changed description.
    docs.write_text(MIRROR_DOCS_YML % "Products, newest row of each.")
    project.dbt("run", "--select", "mirror_documented")
    assert table_comment(project, "mirror_documented") == "Products, newest row of each."
    assert project.query(f"select count(*) as n from {project.schema}.mirror_documented")[0]["n"] == rows
