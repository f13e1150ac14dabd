"""A history and a mirror of one table take an online snapshot page and its range record
(docs/online_snapshots.md) that leave out a key the source no longer has and whose delete the log
never carried (a cascade-deleted child row): the history closes the key's current version at the
page's low watermark, as the mirror removes its row, so its current versions are the mirror's rows
and the source's; an older event of that key arriving later reopens nothing, and a replay of every
event changes nothing (docs/history.md, "Online snapshots and repairs"). On Spark + Iceberg and on
embedded Databend."""

from __future__ import annotations

import datetime as dt
import json
import shutil

import pytest

from test_materialization import postgres_line

DOCS = {"public.docs": ["id"]}
COLUMNS = "{{ cdc_merge.cdc_columns({'id': 'int', 'status': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}"
EPOCH_MS = 1_767_225_600_000
HISTORY_TESTS = """version: 2
models:
  - name: doc_versions
    data_tests:
      - cdc_history_intervals
      - cdc_history_one_current:
          arguments:
            source_table: public.docs
            raw_relation: ref('raw_events')
"""


def at(lsn: int) -> dt.datetime:
    return dt.datetime.fromtimestamp((EPOCH_MS + lsn) / 1000, dt.timezone.utc).replace(tzinfo=None)


def position(lsn: int) -> dict:
    return {"connector": "postgresql", "schema": "public", "table": "docs", "lsn": lsn, "snapshot": "false",
            "ts_ms": EPOCH_MS + lsn}


def read_line(lsn: int, row: dict) -> str:
    """A page's snapshot read of a row, at the page's high watermark."""
    return json.dumps({"before": None, "after": row, "source": {**position(lsn), "snapshot": "true"}, "op": "r"})


def range_line(lsn: int, low: int, through: dict | None, after: dict | None = None) -> str:
    """The page's range record: every row the table has after `after` (None: from its start) through
    `through` (None: to its end) was read."""
    return json.dumps({"source": position(lsn), "ts_ms": EPOCH_MS + lsn,
                       "range": {"after": after, "through": through, "low": position(low)}})


def current_rows(project, deletes: str, columns: str = "id, status") -> tuple[list, list]:
    """(the history's current, not deleted versions, the mirror's live rows) as tuples of columns."""
    schema = project.schema
    history = project.query(f"select {columns} from {schema}.doc_versions where is_current and not is_deleted order by id")
    mirror = project.query(f"select {columns} from {schema}.docs"
                           f"{' where not _cdc_deleted' if deletes == 'soft' else ''} order by id")
    return [tuple(row.values()) for row in history], [tuple(row.values()) for row in mirror]


def replay_changes_nothing(project, deletes: str, source: list, current=current_rows) -> None:
    """Every file again under a new name: the history does not change, not even its snapshot; current
    (current_rows or a finer one) gives the history's live versions and the mirror's rows, both source."""
    history = f"{project.schema}.doc_versions"
    before = (project.table_version(history), project.query(f"select * from {history} order by _cdc_key, _cdc_seq"))
    for path in sorted(project.inbox.iterdir()):
        shutil.copy(path, path.with_name("again-" + path.name))
    project.land(DOCS)
    project.dbt("run", "--select", "docs", "doc_versions")
    assert (project.table_version(history), project.query(f"select * from {history} order by _cdc_key, _cdc_seq")) == before
    assert current(project, deletes) == (source, source)
    # The raw log's own tests too (not the other models' that read it): its range records are events of an action of their own.
    project.dbt("test", "--select", "doc_versions", "raw_events", "--indirect-selection", "cautious")


def versions(project, key: int) -> list[tuple]:
    return [tuple(row.values()) for row in project.query(
        f"select id, status, valid_from, valid_to, is_current, is_deleted from {project.schema}.doc_versions "
        f"where id = {key} order by _cdc_seq")]


@pytest.mark.parametrize("deletes", ["hard", "soft"])
def test_a_range_record_closes_the_history_version_of_a_row_the_source_no_longer_has(conformance_project, deletes):
    project = conformance_project
    project.write_model("docs", f"unique_key='id', source_table='public.docs', deletes='{deletes}'", COLUMNS)
    project.write_model("doc_versions", f"materialized='cdc_history', unique_key='id', source_table='public.docs', "
                                        f"deletes='{deletes}'", COLUMNS)
    (project.project_dir / "models" / "mirrors" / "_doc_versions.yml").write_text(HISTORY_TESTS)

    def land_and_run(name: str, lines: list[str]) -> None:
        (project.inbox / name).write_text("\n".join(lines) + "\n")
        project.land(DOCS)
        project.dbt("run", "--select", "docs", "doc_versions")

    land_and_run("1.json", [
        postgres_line("c", 100, {"id": 1, "status": "a"}),
        postgres_line("c", 110, {"id": 2, "status": "b"}),
        postgres_line("c", 120, {"id": 3, "status": "c"}),
        postgres_line("c", 130, {"id": 4, "status": "d"}),
        postgres_line("u", 140, {"id": 2, "status": "b2"}),
        postgres_line("c", 150, {"id": 7, "status": "g"}),
    ])
    # The source loses key 2 with no delete in the log. A page of keys up to 5, between its low
    # watermark (200) and its high (210), reads 1 and 3; 4 changed between them (the page leaves it
    # to its change); 7 is outside the range.
    land_and_run("2.json", [
        postgres_line("u", 205, {"id": 4, "status": "d2"}),
        read_line(210, {"id": 1, "status": "a"}),
        read_line(210, {"id": 3, "status": "c"}),
        range_line(220, 200, {"id": 5}),
    ])
    source = [(1, "a"), (3, "c"), (4, "d2"), (7, "g")]
    assert current_rows(project, deletes) == (source, source)
    # Closed at the low watermark, at the range record's time; a soft delete keeps the version's values, as the mirror's row.
    closed = [(2, "b", at(110), at(140), False, False), (2, "b2", at(140), at(220), False, False)]
    deleted = [(2, "b2", at(220), None, True, True)] if deletes == "soft" else []
    assert versions(project, 2) == closed + deleted

    # An older event of key 2 arriving late is placed before the delete: it opens nothing current.
    land_and_run("3.json", [postgres_line("u", 160, {"id": 2, "status": "late"})])
    assert current_rows(project, deletes) == (source, source)
    closed = [(2, "b", at(110), at(140), False, False), (2, "b2", at(140), at(160), False, False),
              (2, "late", at(160), at(220), False, False)]
    assert versions(project, 2) == closed + deleted

    replay_changes_nothing(project, deletes, source)


def test_the_ranges_of_consecutive_pages_close_each_key_by_its_own_pages_low_watermark(conformance_project):
    ranges_of_consecutive_pages_close_each_key_by_its_own_pages_low_watermark(conformance_project)


def test_the_ranges_of_consecutive_pages_close_each_key_with_the_chain_as_one_statement(dbt_project, history_chain_in_one_statement):
    # On Spark in this process a batch's chain is computed step by step (history_stages.py); here as a Thrift server's.
    ranges_of_consecutive_pages_close_each_key_by_its_own_pages_low_watermark(dbt_project)
    from_range_deletes = [arguments[1] for arguments in history_chain_in_one_statement]
    assert True in from_range_deletes and False in from_range_deletes


def ranges_of_consecutive_pages_close_each_key_by_its_own_pages_low_watermark(project) -> None:
    # Three pages of one snapshot (keys to 3, 4 to 6, from 7) in one chunk: a ladder searched by its upper
    # bounds (range_search.py), for the keys with events in the chunk (6 and 5, in their chains) and the others.
    project.write_model("docs", "unique_key='id', source_table='public.docs'", COLUMNS)
    project.write_model("doc_versions", "materialized='cdc_history', unique_key='id', source_table='public.docs'", COLUMNS)

    def land_and_run(name: str, lines: list[str]) -> None:
        (project.inbox / name).write_text("\n".join(lines) + "\n")
        project.land(DOCS)
        project.dbt("run", "--select", "docs", "doc_versions")

    land_and_run("1.json", [postgres_line("c", 100 + key, {"id": key, "status": "v1"}) for key in range(1, 10)])
    land_and_run("2.json", [postgres_line("u", 205, {"id": 2, "status": "v2"}), postgres_line("u", 350, {"id": 8, "status": "v2"})])
    # Key 2 changed between the first page's watermarks and 5 between the second's: both stay.
    # 3, 6 (changed before the second page's low watermark) and 8 (before the third's): gone from the source.
    land_and_run("3.json", [
        read_line(210, {"id": 1, "status": "v1"}), range_line(220, 200, {"id": 3}),
        postgres_line("u", 290, {"id": 6, "status": "v2"}), postgres_line("u", 305, {"id": 5, "status": "v2"}),
        read_line(310, {"id": 4, "status": "v1"}), range_line(320, 300, {"id": 6}, after={"id": 3}),
        read_line(410, {"id": 7, "status": "v1"}), read_line(410, {"id": 9, "status": "v1"}),
        range_line(420, 400, None, after={"id": 6}),
    ])
    source = [(1, "v1"), (2, "v2"), (4, "v1"), (5, "v2"), (7, "v1"), (9, "v1")]
    assert current_rows(project, "hard") == (source, source)
    assert versions(project, 3)[-1] == (3, "v1", at(103), at(220), False, False)
    assert versions(project, 6)[-1] == (6, "v2", at(290), at(320), False, False)
    assert versions(project, 8)[-1] == (8, "v2", at(350), at(420), False, False)
    replay_changes_nothing(project, "hard", source)
