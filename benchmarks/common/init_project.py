"""A project written by cdc-init for a PostgreSQL source, as a user starts one (pipeline_lag, verify_under_load)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from harness.dbt_project import PROJECT_DIR

BIN = Path(sys.executable).parent


def init_project(work: Path, server) -> Path:
    """work/pipeline: cdc-init's project mirroring shop.items of server (harness.postgres_server), with this
    repository as its cdc_merge package and maintenance off; its packages installed."""
    project = work / "pipeline"
    subprocess.run([BIN / "cdc-init", project, "--postgres", server.dsn, "--tables", "shop.items",
                    "--package-local", PROJECT_DIR], check=True, capture_output=True)
    text = (project / "dbt_project.yml").read_text()
    # No compaction: a row's file stays the one its change was committed in (what the lag is read from).
    (project / "dbt_project.yml").write_text(text.replace("+materialized: cdc_merge", "+materialized: cdc_merge\n      +maintenance: 'off'"))
    subprocess.run([BIN / "dbt", "deps", "--profiles-dir", "."], cwd=project, check=True, capture_output=True)
    return project
