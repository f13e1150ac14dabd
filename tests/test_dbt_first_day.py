"""What a dbt user's first day does with cdc_merge models, beyond tests/test_dbt_commands.py: the
command lines and configs a dbt user reaches for, each ending with mirrors that equal the raw log
or a clear error."""

from __future__ import annotations

import shutil

from test_dbt_commands import COLUMNS, CONFIG, FLINK_MYSQL, PRODUCTS

HISTORY_CONFIG = "materialized='cdc_history', " + CONFIG


def count(project, model: str) -> int:
    return project.query(f"select count(*) as n from {project.schema}.{model}")[0]["n"]


def test_a_mirror_or_history_made_again_by_an_empty_run_is_filled_from_the_whole_log_next(dbt_project):
    """`dbt run --empty` creates a missing mirror without rows, and `--full-refresh --empty` a history:
    the offsets they had must not survive them, or the next run starts there and never applies the
    events before it."""
    project = dbt_project
    project.write_model("products", CONFIG, COLUMNS)
    project.write_model("products_history", HISTORY_CONFIG, COLUMNS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "products", "products_history")
    versions = count(project, "products_history")
    assert (count(project, "products"), versions) == (10, 15)

    # The mirror dropped by hand (its offsets kept) and made again by --empty; the history rebuilt by --empty.
    project.execute(f"drop table {project.schema}.products")
    project.dbt("run", "--select", "products", "--empty")
    project.dbt("run", "--select", "products_history", "--full-refresh", "--empty")
    assert (count(project, "products"), count(project, "products_history")) == (0, 0)

    project.dbt("run", "--select", "products", "products_history")
    assert (count(project, "products"), count(project, "products_history")) == (10, versions)
