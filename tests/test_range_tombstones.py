"""An online snapshot page's range record removes a row the source no longer has and leaves its key a
tombstone (docs/online_snapshots.md); tombstone collection (docs/maintenance.md) removes tombstones of
deletes committed in the source longer ago than tombstone_horizon_hours. The range's delete is the
page's, at the range record's time, whenever the row itself last changed: its tombstone stays for the
horizon, so an older event of the key landing late brings nothing back, and a soft-deleted row carries
that time. The rows a range removes are the run's deletes in cdc_merge_runs and cdc_merge_offsets, as
the status page and /metrics show them. On Spark and Databend."""

from __future__ import annotations

import json
import time

import pytest

from test_history_ranges import COLUMNS, DOCS, at, position, range_line, read_line
from test_maintenance import maintain
from test_materialization import postgres_line


def docs_after(project, name: str, lines: list[str]) -> list[tuple]:
    """The docs mirror's rows after lines are landed as the file name and the mirror is run."""
    (project.inbox / name).write_text("\n".join(lines) + "\n")
    project.land(DOCS)
    project.dbt("run", "--select", "docs")
    return [tuple(row.values()) for row in project.query(f"select id, status from {project.schema}.docs order by id")]


def deleted_counts(project) -> tuple[int, int]:
    """(rows_deleted of the docs mirror's last cdc_merge_runs row, the sum of its cdc_merge_offsets rows)."""
    schema = project.schema
    (run,) = project.query(f"select rows_deleted from {schema}.cdc_merge_runs where target_table like '%docs'"
                           " order by finished_at desc limit 1")
    (offsets,) = project.query(f"select sum(rows_deleted) as deleted from {schema}.cdc_merge_offsets"
                               " where target_table like '%docs'")
    return int(run["rows_deleted"]), int(offsets["deleted"])


@pytest.mark.parametrize("deletes", ["hard", "soft"])
def test_rows_a_range_removes_are_the_runs_deletes_at_the_range_records_time(conformance_project, deletes):
    project = conformance_project
    project.write_model("docs", f"unique_key='id', source_table='public.docs', deletes='{deletes}'", COLUMNS)
    docs_after(project, "1.json", [postgres_line("c", 100 + key, {"id": key, "status": "v1"}) for key in (1, 2, 3)])
    docs_after(project, "2.json", [postgres_line("d", 110, {"id": 3, "status": "v1"})])
    assert deleted_counts(project) == (1, 1)
    # A page of the whole table: key 1 is gone from the source with no delete in the log.
    docs_after(project, "3.json", [read_line(210, {"id": 2, "status": "v1"}), range_line(220, 200, None)])
    assert deleted_counts(project) == (1, 2)
    live = " where not _cdc_deleted" if deletes == "soft" else ""
    assert [row["id"] for row in project.query(f"select id from {project.schema}.docs{live} order by id")] == [2]
    if deletes == "soft":
        marked = project.query(f"select id, _cdc_source_ts from {project.schema}.docs where _cdc_deleted order by id")
        assert [(row["id"], row["_cdc_source_ts"]) for row in marked] == [(1, at(220)), (3, at(110))]

def test_ranges_of_one_chunk_remove_each_row_by_the_first_range_that_holds_it(conformance_project):
    # A key range read again (keys up to 2) and a read of the whole table, in one file: the ranges are
    # applied together (snapshot_ranges.sql), each row at the low watermark and time of the first.
    project = conformance_project
    project.write_model("docs", "unique_key='id', source_table='public.docs', deletes='soft'", COLUMNS)
    docs_after(project, "1.json", [postgres_line("c", 100 + key, {"id": key, "status": "v1"}) for key in (1, 2, 3, 4)])
    docs_after(project, "2.json", [range_line(220, 200, {"id": 2}), read_line(310, {"id": 4, "status": "v1"}),
                                   range_line(320, 300, None)])
    marked = project.query(f"select id, _cdc_seq, _cdc_source_ts from {project.schema}.docs where _cdc_deleted order by id")
    assert [(row["id"], row["_cdc_source_ts"]) for row in marked] == [(1, at(220)), (2, at(220)), (3, at(320))]
    first, second, third = (row["_cdc_seq"] for row in marked)
    assert first == second < third
    assert deleted_counts(project) == (3, 3)


def test_the_ranges_of_consecutive_pages_remove_each_row_by_its_own_pages_low_watermark(conformance_project):
    # Three pages of one snapshot (keys to 3, 4 to 6, from 7), applied as one ladder searched by its
    # upper bounds (range_search.py): each row is tested against the low watermark of the page its key
    # is in. Key 2 changed between the first page's watermarks: that page left it to its change, and
    # it stays. Key 5 changed before the second page's: the page did not read it, it goes.
    project = conformance_project
    project.write_model("docs", "unique_key='id', source_table='public.docs', deletes='soft'", COLUMNS)
    docs_after(project, "1.json", [postgres_line("c", 100 + key, {"id": key, "status": "v1"}) for key in range(1, 10)])
    docs_after(project, "2.json", [postgres_line("u", 205, {"id": 2, "status": "v2"}),
                                   postgres_line("u", 250, {"id": 5, "status": "v2"}),
                                   postgres_line("u", 350, {"id": 8, "status": "v2"})])
    live = docs_after(project, "3.json", [
        read_line(210, {"id": 1, "status": "v1"}), range_line(220, 200, {"id": 3}),
        read_line(310, {"id": 4, "status": "v1"}), range_line(320, 300, {"id": 6}, after={"id": 3}),
        read_line(410, {"id": 7, "status": "v1"}), read_line(410, {"id": 9, "status": "v1"}),
        range_line(420, 400, None, after={"id": 6}),
    ])
    marked = project.query(f"select id, _cdc_source_ts from {project.schema}.docs where _cdc_deleted order by id")
    assert [(row["id"], row["_cdc_source_ts"]) for row in marked] == [(3, at(220)), (5, at(320)), (6, at(320)), (8, at(420))]
    assert [row[0] for row in live if row[0] not in (3, 5, 6, 8)] == [1, 2, 4, 7, 9]
    assert deleted_counts(project) == (4, 4)


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
