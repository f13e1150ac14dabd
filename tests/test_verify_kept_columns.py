"""cdc-verify of a mirror that keeps a column its model no longer selects (on_schema_change
append_new_columns keeps it, null in the rows written since): every row written after the change
was reported as differing in that column (5 of 20 here), and --repair could not change it, as the
apply writes it null again. Such a column is now left out of the comparison, and the report says so."""

from __future__ import annotations

from harness.mirror_project import make_project
from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.verify import cli as verify_cli
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_online_snapshots import execute

PROFILES = verify_cli.Path(__file__).resolve().parent.parent / "profiles"
WITH_NOTE = "{{ cdc_merge.cdc_columns({'id': 'int', 'code': 'string', 'note': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}"
WITHOUT_NOTE = "{{ cdc_merge.cdc_columns({'id': 'int', 'code': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}"


def test_a_column_the_model_no_longer_selects_is_not_compared(postgres, spark, tmp_path):  # noqa: F811
    project = make_project(spark, tmp_path, "local")
    execute(postgres, "create schema shop; create table shop.items (id int primary key, code text, note text);"
                      "insert into shop.items select g, 'c' || g, 'n' || g from generate_series(1, 20) g")
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot="kept_columns", out=project.inbox,
                                            state=project.work_dir / "state.json")
    capture_postgres.run(config)
    project.write_model("items", "unique_key='id', source_table='shop.items'", WITH_NOTE)
    project.land({"shop.items": ["id"]})
    project.dbt("run", "--select", "items")

    project.write_model("items", "unique_key='id', source_table='shop.items'", WITHOUT_NOTE)
    execute(postgres, "update shop.items set code = code || 'x' where id <= 5")
    capture_postgres.run(config)
    project.land({"shop.items": ["id"]})
    project.dbt("run", "--select", "items")
    assert project.query(f"select count(*) as n from {project.schema}.items where note is null")[0]["n"] == 5

    for options in ([], ["--sample", "100"]):
        status = verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES), "--target",
                                  project.target, "--select", "items", "--postgres", dsn, "--wait-seconds", "10", *options])
        log = project.dbt_log()
        assert status == 0, log[-3000:]
        assert "not compared, kept by the mirror though its model no longer selects them: note" in log, log[-3000:]
