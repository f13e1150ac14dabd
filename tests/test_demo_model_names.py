"""A project cdc-init wrote has mirrors named as the package's disabled demo models are (shop_customers,
shop_orders, raw_events). A ref left behind by a model the user renamed is reported as a ref of a
missing model, not as one of a disabled model the project does not have; its YAML entry left behind is
an entry without a model, not a second entry of the package's model."""

from __future__ import annotations

import sys
from pathlib import Path

from python_jobs.scaffold import SourceColumn, SourceTable
from python_jobs.starter import init
from test_starter import PROJECT_DIR, run

BIN = Path(sys.executable).parent
COLUMNS = (SourceColumn("id", "bigint", 64, 0), SourceColumn("name", "text", None, None))


def test_a_ref_left_behind_by_a_renamed_mirror_is_not_found_not_disabled(tmp_path):
    project, home = tmp_path / "my_shop", tmp_path / "home"
    home.mkdir()
    tables = [SourceTable("shop", name, COLUMNS, ("id",)) for name in ("customers", "orders")]
    init.write_project(project, init.project_files("my_shop", f"local: '{PROJECT_DIR}'", tables, {"postgres": "host=db"}))
    run([str(BIN / "dbt"), "deps", "--profiles-dir", "."], project, home)
    mirrors = project / "models" / "mirrors"
    not_found = ("Model 'model.my_shop.mirror_row_counts' (models/reports/mirror_row_counts.sql) depends on a node "
                 "named 'shop_orders' which was not found")
    # Renamed, its YAML entry left behind; the report still reads ref('shop_orders').
    (mirrors / "shop_orders.sql").rename(mirrors / "orders.sql")
    said = run([str(BIN / "dbt"), "parse", "--profiles-dir", "."], project, home, expect_success=False)
    assert "Did not find matching node for patch with name 'shop_orders'" in said, said[-3000:]
    assert "two schema.yml entries" not in said and not_found in said, said[-3000:]

    # The entry renamed too.
    entries = mirrors / "_mirrors__models.yml"
    entries.write_text(entries.read_text().replace("- name: shop_orders", "- name: orders"))
    said = run([str(BIN / "dbt"), "parse", "--profiles-dir", "."], project, home, expect_success=False)
    assert not_found in said, said[-3000:]

