"""An online snapshot page's range record removes a row the source no longer has and leaves its key a
tombstone (docs/online_snapshots.md); tombstone collection (docs/maintenance.md) removes tombstones of
deletes committed in the source longer ago than tombstone_horizon_hours. The range's delete is the
page's, at the range record's time, whenever the row itself last changed: its tombstone stays for the
horizon, so an older event of the key landing late brings nothing back. On Spark and Databend."""

from __future__ import annotations

import json
import time

from test_history_ranges import COLUMNS, DOCS, position, read_line
from test_maintenance import maintain
from test_materialization import postgres_line


def docs_after(project, name: str, lines: list[str]) -> list[tuple]:
    """The docs mirror's rows after lines are landed as the file name and the mirror is run."""
    (project.inbox / name).write_text("\n".join(lines) + "\n")
    project.land(DOCS)
    project.dbt("run", "--select", "docs")
    return [tuple(row.values()) for row in project.query(f"select id, status from {project.schema}.docs order by id")]

def test_a_range_records_tombstone_stays_for_the_horizon_from_the_page_not_from_the_rows_last_change(conformance_project):
    project = conformance_project
    project.write_model("docs", "unique_key='id', source_table='public.docs'", COLUMNS)

    # Rows last changed months ago; the source lost key 2 with no delete in the log.
    assert docs_after(project, "1.json", [postgres_line("c", 100, {"id": 1, "status": "a"}),
                                          postgres_line("c", 110, {"id": 2, "status": "b"})]) == [(1, "a"), (2, "b")]
    # A page of the whole table read now: key 1 only.
    now_ms = int(time.time() * 1000)
    assert docs_after(project, "2.json", [
        read_line(210, {"id": 1, "status": "a"}),
        json.dumps({"source": {**position(220), "ts_ms": now_ms}, "ts_ms": now_ms,
                    "range": {"after": None, "through": None, "low": position(200)}}),
    ]) == [(1, "a")]
    maintain(project, ["docs"], tombstone_horizon_hours=1)
    # An update of key 2 from before the page, landing late, finds the tombstone.
    assert docs_after(project, "3.json", [postgres_line("u", 150, {"id": 2, "status": "late"})]) == [(1, "a")]
