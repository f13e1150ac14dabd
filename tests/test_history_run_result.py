"""What `dbt run` says of a cdc_history model: 'OK' and the version rows it wrote, as of a mirror, on
Spark + Iceberg and on Databend (where its line read 'adapter response -1')."""

from __future__ import annotations

from test_history_truncate import docs_history
from test_materialization import postgres_line
from test_truncate import land


def test_a_history_run_says_ok_and_the_rows_it_wrote_on_either_engine(conformance_project):
    project = conformance_project
    docs_history(project, "hard")
    land(project, "1", [postgres_line("c", 100 + i, {"id": i, "title": "v1"}) for i in (1, 2, 3)]
         + [postgres_line("u", 110, {"id": 1, "title": "v2"})])

    (result,) = project.dbt("run", "--select", "docs_versions").result.results

    assert (result.message, result.adapter_response["code"], result.adapter_response["rows_affected"]) == ("OK", "OK", 4)
    # Nothing new: no rows.
    (idle,) = project.dbt("run", "--select", "docs_versions").result.results
    assert (idle.message, idle.adapter_response["rows_affected"]) == ("OK", 0)
