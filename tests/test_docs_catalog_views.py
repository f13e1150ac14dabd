"""`dbt docs generate` catalogs a view model over the mirrors (dbt's default materialization, as a
project's reports are) on both engines. On Databend the catalog read tables from system.tables,
which lists no view (Databend keeps them in system.views), so a view model was left out of
catalog.json: dbt docs showed it without columns or type."""

from __future__ import annotations

import json

from test_dbt_commands import applied_project

REPORT = """with

counts as (

    select count(*) as mirrored_rows
    from {{ ref('products') }}

)

select * from counts
"""


def test_docs_generate_catalogs_a_view_over_a_mirror(conformance_project):
    project = applied_project(conformance_project)
    (project.project_dir / "models" / "product_counts.sql").write_text(REPORT)
    project.dbt("run", "--select", "product_counts")
    project.dbt("docs", "generate", "--select", "products", "product_counts")
    nodes = json.loads((project.project_dir / "target" / "catalog.json").read_text())["nodes"]
    view = nodes.get("model.cdc_merge.product_counts")
    assert view is not None, sorted(nodes)
    assert view["metadata"]["type"] == "view"
    assert list(view["columns"]) == ["mirrored_rows"]
    assert list(nodes["model.cdc_merge.products"]["columns"])[:2] == ["id", "name"]
