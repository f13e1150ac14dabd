"""A project's databend target in a virtualenv installed without the extra `databend` (docs/your_project.md,
step 1: `[lint]` only): dbt printed 50 lines of traceback ending in "No module named
'dbt.adapters.databend'"; it now says to install the extra, before any SQL."""

from __future__ import annotations

import subprocess
import sys

from python_jobs.scaffold import SourceColumn, SourceTable
from python_jobs.starter import init
from test_starter import PROJECT_DIR

# dbt as the console script runs it, in a process where dbt-databend-cloud cannot be imported (as in a
# virtualenv without it: None in sys.modules makes its import fail as a missing module's does).
DBT_WITHOUT_DATABEND = ("import sys; sys.modules['dbt.adapters.databend'] = None; from dbt.cli.main import cli;"
                        "sys.argv = ['dbt', *sys.argv[1:]]; cli()")


def test_a_databend_target_without_the_extra_says_to_install_it(tmp_path):
    table = SourceTable("shop", "items", (SourceColumn("id", "bigint", 64, 0),), ("id",))
    project = tmp_path / "my_shop"
    init.write_project(project, init.project_files("my_shop", f"local: '{PROJECT_DIR}'", [table], {"postgres": "host=db"}))
    result = subprocess.run([sys.executable, "-c", DBT_WITHOUT_DATABEND, "parse", "--profiles-dir", ".", "--target", "databend"],
                            cwd=project, capture_output=True, text=True, timeout=300,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"})
    said = result.stdout + result.stderr
    assert result.returncode != 0
    assert "the target's type cdc_databend needs dbt-databend-cloud" in said, said[-3000:]
    assert "[lint,databend]" in said and "Traceback" not in said, said[-3000:]
