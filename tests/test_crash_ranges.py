"""The crash suite's bounded case for online snapshot range records (docs/online_snapshots.md): a
`dbt run` process killed (SIGKILL, with its JVM; python_jobs/crash_points.py) at each crash point of
the apply while the chunk it applies holds a page and its range record, whose delete removes a row
the source no longer has and whose delete the log never carried; then one plain `dbt run`. The
mirrors (hard and soft deletes) hold the source's rows, and the histories (hard and soft) the
versions a run without the kill writes: nothing lost, nothing brought back.

The killed run is a process of its own on this test session's warehouse; the rerun is dbt in this
process (as tests/test_crash_points.py reruns).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.dbt_project import PROFILES_DIR
from harness.mirror_project import make_project
from python_jobs.landing.io import iceberg_jar
from test_history_ranges import COLUMNS, DOCS, range_line, read_line
from test_materialization import postgres_line

pytestmark = pytest.mark.xdist_group("crashes")


MODELS = ["docs_hard", "docs_soft", "doc_versions_hard", "doc_versions_soft"]
SOURCE = [(1, "a"), (3, "c"), (4, "d2"), (7, "g")]
BEFORE = [
    postgres_line("c", 100, {"id": 1, "status": "a"}),
    postgres_line("c", 110, {"id": 2, "status": "b"}),
    postgres_line("c", 120, {"id": 3, "status": "c"}),
    postgres_line("c", 130, {"id": 4, "status": "d"}),
    postgres_line("u", 140, {"id": 2, "status": "b2"}),
    postgres_line("c", 150, {"id": 7, "status": "g"}),
]
# The source lost keys 2 and 6 with no delete in the log; two pages (keys up to 5, then the rest)
# read the other rows; 4 changed inside the first page's window.
PAGES = [
    postgres_line("c", 160, {"id": 6, "status": "f"}),
    postgres_line("u", 205, {"id": 4, "status": "d2"}),
    read_line(210, {"id": 1, "status": "a"}),
    read_line(210, {"id": 3, "status": "c"}),
    range_line(220, 200, {"id": 5}),
    read_line(240, {"id": 7, "status": "g"}),
    range_line(250, 230, None, after={"id": 5}),
]


def build(spark, folder: Path):
    """A project with the four models; the first file applied, the pages landed, not applied."""
    project = make_project(spark, folder, "local")
    for name in MODELS:
        deletes = name.rsplit("_", 1)[1]
        history = "materialized='cdc_history', " if name.startswith("doc_versions") else ""
        project.write_model(name, f"{history}unique_key='id', source_table='public.docs', deletes='{deletes}'", COLUMNS)
    (project.inbox / "1.json").write_text("\n".join(BEFORE) + "\n")
    project.land(DOCS)
    project.dbt("run", "--select", *MODELS)
    (project.inbox / "2.json").write_text("\n".join(PAGES) + "\n")
    project.land(DOCS)
    return project


def state(project) -> dict:
    """Each mirror's live rows, each history's versions."""
    found = {}
    for name in MODELS:
        if name.startswith("doc_versions"):
            sql = (f"select id, status, valid_from, valid_to, is_current, is_deleted from {project.schema}.{name} "
                   "order by id, _cdc_seq")
        else:
            live = " where not _cdc_deleted" if name.endswith("soft") else ""
            sql = f"select id, status from {project.schema}.{name}{live} order by id"
        found[name] = [tuple(row.values()) for row in project.query(sql)]
    return found


@pytest.fixture(scope="module")
def without_kill(spark, warehouse, tmp_path_factory) -> dict:
    project = build(spark, tmp_path_factory.mktemp("ranges-reference"))
    project.dbt("run", "--select", *MODELS)
    found = state(project)
    assert all(found[name] == SOURCE for name in MODELS if not name.startswith("doc_versions")), found
    return found


def killed_run(project, point: str, models: list[str], *flags: str) -> subprocess.CompletedProcess:
    """`dbt run` of models in a process of its own, told to die at point (one thread: the models in turn);
    flags: dbt's, such as --full-refresh."""
    env = {**os.environ, "CDC_MERGE_SCHEMA": project.schema, "CDC_MERGE_RAW_SCHEMA": project.raw_schema,
           "CDC_MERGE_ICEBERG_JAR": iceberg_jar(), "CDC_MERGE_CRASH_AT": point, "TZ": "UTC",
           "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    command = [str(Path(sys.executable).parent / "dbt"), "run", "--select", *models, "--threads", "1", *flags,
               "--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES_DIR), "--target", "local"]
    process = subprocess.Popen(command, cwd=project.project_dir, env=env, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output, _ = process.communicate(timeout=600)
    try:
        os.killpg(process.pid, signal.SIGKILL)  # the group's Python workers, if any are left
    except (ProcessLookupError, PermissionError):
        pass
    return subprocess.CompletedProcess(command, process.returncode, output)


@pytest.mark.parametrize(
    "point, models, dies_in",
    [
        # One thread applies the models in order: doc_versions_hard, doc_versions_soft, docs_hard,
        # docs_soft. The first history publishes two batches of the chunk; its second not published.
        ("apply-before-publish@2", MODELS, "doc_versions_hard"),
        # The hard-delete mirror's batch (the pages' rows) written, not committed; its ranges not applied.
        ("apply-before-publish", MODELS[:2], "docs_hard"),
        # The soft-delete mirror has applied its pages and range records; its offset is not written.
        ("apply-before-offset@2", MODELS, "docs_soft"),
        # Every model committed, ranges applied; the mirrors' offset rows (written once for all) not.
        ("apply-before-run-rows", MODELS, "docs_soft"),
    ],
)
def test_a_run_killed_while_it_applies_range_records_is_healed_by_the_next_run(
        spark, tmp_path, without_kill, point, models, dies_in):
    project = build(spark, tmp_path)

    crashed = killed_run(project, point, models)

    assert crashed.returncode == -signal.SIGKILL, f"the run was not killed at {point}:\n{crashed.stdout[-3000:]}"
    started = [line for line in crashed.stdout.splitlines() if " START " in line]
    assert started and started[-1].rstrip(" .[RUN]").endswith(f"{project.schema}.{dies_in}"), crashed.stdout[-3000:]
    project.dbt("run", "--select", *MODELS)
    assert state(project) == without_kill
