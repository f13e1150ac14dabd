"""One process applies a mirror or history at a time on either engine (run_guard.sql): another
process holding it makes a run wait, then stop with the holder's pid and what to do (it says it changed
nothing); once it ends, the run applies. On Databend two runs of one mirror shared its scratch tables: a service's run failed with
`Unknown table ... shop_order_items__cdc_changes` beside a `dbt run --full-refresh` of the mirror, and
one could merge the other's batch and record its own offset past events it never applied."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from urllib.parse import urlparse

from harness.dbt_project import PROJECT_DIR, error_text
from python_jobs import run_locks
from test_dbt_commands import COLUMNS, CONFIG, FLINK_MYSQL, PRODUCTS
from test_dbt_first_day import HISTORY_CONFIG, count

HOLD_LOCK = """
import sys, time
from pathlib import Path
from python_jobs import run_locks
for path in sys.argv[1:]:
    run_locks.acquire(Path(path), "the test's run")
print("held", flush=True)
time.sleep(600)  # until killed
"""


def mirror_lock(project, model: str):
    """The lock file a run of model takes: of the warehouse on Spark, of the server on Databend (cdc_databend/mirror_locks.py)."""
    name = f"{project.schema}.{model}"
    if project.on_databend:
        address = urlparse(os.environ["CDC_MERGE_DATABEND_DSN"])
        return run_locks.lock_file("mirror", f"/databend/{address.hostname}:{address.port}", name)
    return run_locks.lock_file("mirror", os.path.abspath(os.environ.get("CDC_MERGE_WAREHOUSE", "warehouse")), name)


def test_a_mirror_and_a_history_held_by_another_process_wait_then_stop_naming_the_holder(conformance_project, monkeypatch):
    project = conformance_project
    project.write_model("products", CONFIG, COLUMNS)
    project.write_model("products_history", HISTORY_CONFIG, COLUMNS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    locks = [str(mirror_lock(project, model)) for model in ("products", "products_history")]
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, *locks], cwd=PROJECT_DIR, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv(run_locks.LOCK_WAIT, "1")
        for model in ("products", "products_history"):
            refused = project.dbt("run", "--select", model, expect_success=False)
            said = error_text(refused)
            assert f"mirror {project.schema}.{model} is in use by another run (pid {holder.pid}" in said, said
            assert "this run changed nothing of it" in said, said
    finally:
        holder.kill()
        holder.wait()

    # The holder gone, the runs apply.
    project.dbt("run", "--select", "products", "products_history")
    assert (count(project, "products"), count(project, "products_history")) == (10, 15)
