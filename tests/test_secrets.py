"""Passwords reach the project only through environment variables, and no output of a run prints
them: a landing into Databend and a dbt run with a known password, every output grepped.
(The capture programs' passwords: tests/test_capture_faults.py.)"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import pytest

from harness.mirror_project import make_project
from python_jobs.devtools.databend_local import serve
from python_jobs.landing import io, land

SECRET = "Kn0wn-Secret-7f3a9"
KEYS = {"shop.items": ["id"]}
LINES = [
    '{"before":null,"after":{"id":1,"note":"a"},"source":{"connector":"mysql","db":"shop","table":"items",'
    '"file":"mysql-bin.000001","pos":10,"row":0},"op":"c","ts_ms":1}',
    '{"op":"c","after":{"id":2',
    '{"before":null,"after":{"id":3,"note":"c"},"source":{"connector":"mysql","db":"shop","table":"items",'
    '"file":"mysql-bin.000001","pos":20,"row":0},"op":"c","ts_ms":1}',
]


@pytest.fixture
def databend_with_password(tmp_path, monkeypatch):
    """A local Databend endpoint that takes SECRET only, and the settings that reach it."""
    with serve(tmp_path / "databend", password=SECRET) as url:
        address = urlparse(url)
        monkeypatch.setenv("CDC_MERGE_DATABEND_HOST", address.hostname)
        monkeypatch.setenv("CDC_MERGE_DATABEND_PORT", str(address.port))
        monkeypatch.setenv("CDC_MERGE_DATABEND_PASSWORD", SECRET)
        monkeypatch.setenv("CDC_MERGE_DATABEND_DSN",
                           f"databend://root:{SECRET}@{address.hostname}:{address.port}/?sslmode=disable&format_null_as_str=0")
        yield tmp_path / "databend"


def files_holding(secret: str, *folders: Path) -> list[str]:
    return [str(path) for folder in folders for path in folder.rglob("*")
            if path.is_file() and secret.encode() in path.read_bytes()]


def test_the_password_is_in_no_output_of_a_landing_and_a_dbt_run(spark, tmp_path, databend_with_password, capfd):
    project = make_project(spark, tmp_path, "databend_local")
    project.write_model("items", "unique_key='id', source_table='shop.items'",
                        "{{ cdc_merge.cdc_column('id', 'bigint') }}, {{ cdc_merge.cdc_column('note', 'string') }}, "
                        "{{ cdc_merge.cdc_metadata_columns() }}")
    (project.inbox / "part-1.json").write_text("\n".join(LINES) + "\n")
    project.landing_config(KEYS)

    # On Databend the landing runs standalone (docs/operating.md), then dbt applies.
    summary = land.run(project.landing_config(KEYS))
    result = project.dbt("run", "--exclude", "raw_events", artifacts=True)

    assert [row["id"] for row in project.query(f"select id from {project.schema}.items order by id")] == [1, 3]
    reasons = [row.reason for row in project.rows(f"{project.raw_schema}.quarantine")]
    assert len(reasons) == 1 and "invalid JSON" in reasons[0]
    output = capfd.readouterr()
    assert SECRET not in output.out + output.err
    assert SECRET not in " ".join(reasons) + summary.line() + str(result.result)
    # logs/dbt.log (every statement), target/ (run_results.json, manifest, compiled SQL), the
    # landing's checkpoint and stage, and the endpoint's own log.
    assert files_holding(SECRET, project.project_dir, tmp_path / "checkpoint", databend_with_password) == []
    assert (project.project_dir / "logs" / "dbt.log").stat().st_size > 0
    assert (project.project_dir / "target" / "run_results.json").exists()


def test_wrong_databend_credentials_fail_before_any_sql_and_say_what_to_change(spark, tmp_path, databend_with_password,
                                                                              monkeypatch, capfd):
    project = make_project(spark, tmp_path, "databend_local")
    project.write_model("items", "unique_key='id', source_table='shop.items'",
                        "{{ cdc_merge.cdc_column('id', 'bigint') }}, {{ cdc_merge.cdc_metadata_columns() }}")
    (project.inbox / "part-1.json").write_text("\n".join(LINES) + "\n")
    project.landing_config(KEYS)
    wrong = "Not-The-Password-1"
    monkeypatch.setenv("CDC_MERGE_DATABEND_PASSWORD", wrong)

    result = project.dbt("run", "--exclude", "raw_events", expect_success=False)

    assert not result.success
    message = str(result.exception or result.result)
    log = (project.project_dir / "logs" / "dbt.log").read_text()
    assert "Databend at 127.0.0.1" in message and "refused user 'root'" in message and "nothing ran" in message
    assert "authentication failed for user 'root'" in message and "CDC_MERGE_DATABEND_PASSWORD" in message
    assert wrong not in log + message
    monkeypatch.setenv("CDC_MERGE_DATABEND_PASSWORD", SECRET)
    assert project.query(f"select count(*) as n from system.tables where database = '{project.schema}'")[0]["n"] == 0

    # The landing: a wrong password in the DSN is refused before Spark reads a file, and not printed.
    monkeypatch.setenv("CDC_MERGE_DATABEND_DSN", os.environ["CDC_MERGE_DATABEND_DSN"].replace(SECRET, wrong))
    with pytest.raises(io.LandingError) as refused:
        land.run(project.landing_config(KEYS))
    assert "sink databend: cannot connect with $CDC_MERGE_DATABEND_DSN" in str(refused.value)
    assert "authentication failed" in str(refused.value)
    output = capfd.readouterr()
    for text in (str(refused.value), output.out, output.err):
        assert wrong not in text and SECRET not in text
