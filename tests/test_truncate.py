"""Truncates land as table-level events and apply as a barrier in source order: rows older than
the truncate go (the run's deletes), events after it apply, a late older event brings nothing back,
replays change nothing."""

from __future__ import annotations

import json
import re

import pytest

from conftest import FIXTURES
from python_jobs.formats import detect as formats
from python_jobs.capture.mysql_statements import emptied_tables
from python_jobs.formats.records import ACTION_TRUNCATE, format_seq, LINE_ORDERED_PREFIX, STATUS_EVENT, TABLE_KEY
from test_materialization import postgres_line
from test_range_tombstones import deleted_counts

KEYS = {"inventory.customers": ["id"], "public.customers": ["id"], "inventory.products": ["id"]}


def documented_event(name: str, connector: str) -> str:
    """One of Debezium's documented events as a bare line: its placeholders filled, its schema left out."""
    text = (FIXTURES / "debezium" / "docs" / name).read_text()
    text = re.sub(r'"schema": \{ \.\.\. \},\n', "", text)
    text = text.replace("{debezium-version}", "2.7.0").replace("{context}", connector)
    text = re.sub(r",(\s*[}\]])", r"\1", text)
    return json.dumps(json.loads(text)["payload"])


@pytest.mark.parametrize(
    "name, connector, table, seq",
    [
        ("postgresql.adoc.truncate-event.json.txt", "postgresql", "public.customers",
         "00000000000046523128.00000000000000000000.0000000000.1"),
        ("shared-mariadb-mysql.adoc.truncate-event.json.txt", "mysql", "inventory.customers",
         "00000000000000000003.00000000000000000484.0000000000.1"),
    ],
)
def test_debeziums_documented_truncates_land_as_table_events(name, connector, table, seq):
    (event,) = formats.parse_line(documented_event(name, connector), KEYS)
    assert (event.status, event.table_name, event.key, event.action, event.seq) == (
        STATUS_EVENT, table, TABLE_KEY, ACTION_TRUNCATE, seq)
    assert event.raw_data is None and event.before_data is None and event.source_ts_ms is not None


@pytest.mark.parametrize(
    "record, seq",
    [
        ({"data": None, "database": "inventory", "table": "products", "isDdl": True, "type": "TRUNCATE",
          "sql": "truncate table products", "es": 1589373560000, "ts": 1589373560798, "pkNames": None},
         f"{LINE_ORDERED_PREFIX}1"),
        ({"table": "inventory.products", "op_type": "T", "op_ts": "2020-05-13 15:40:06.000000",
          "pos": "00000000000000000000143"}, "00000000000000000000.00000000000000000143.0000000000.1"),
        ({"action": "T", "schema": "inventory", "table": "products", "lsn": "0/16D4A18"},
         "00000000000023939608.00000000000000000000.0000000000.1"),
        ({"action": "T", "schema": "inventory", "table": "products"}, f"{LINE_ORDERED_PREFIX}1"),
    ],
    ids=["canal", "goldengate", "wal2json", "wal2json-without-lsn"],
)
def test_other_formats_truncates_land_as_table_events(record, seq):
    (event,) = formats.parse_line(json.dumps(record), KEYS)
    assert (event.status, event.table_name, event.key, event.action, event.seq) == (
        STATUS_EVENT, "inventory.products", TABLE_KEY, ACTION_TRUNCATE, seq)


def test_a_truncate_of_a_table_without_configured_keys_is_quarantined():
    (event,) = formats.parse_line(json.dumps({"action": "T", "schema": "other", "table": "t"}), KEYS)
    assert event.status == "rejected" and "no key columns configured for table 'other.t'" in event.reason


DOCS = {"public.docs": ["id"]}


def docs_model(project, deletes: str = "hard", name: str = "docs") -> None:
    project.write_model(
        name, f"unique_key='id', source_table='public.docs', deletes='{deletes}'",
        "{{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")


def truncate_line(lsn: int) -> str:
    return json.dumps({"source": {"connector": "postgresql", "schema": "public", "table": "docs", "lsn": lsn,
                                  "snapshot": "false", "ts_ms": 1_767_225_600_000 + lsn}, "op": "t"})


def land(project, name: str, lines: list[str]) -> None:
    (project.inbox / f"{name}.json").write_text("\n".join(lines) + "\n")
    project.land(DOCS)


def test_a_truncate_is_a_barrier_in_source_order(conformance_project):
    project = conformance_project
    docs_model(project)
    land(project, "1", [postgres_line("c", 100 + i, {"id": i, "title": "v1"}) for i in (1, 2, 3)])
    project.dbt("run", "--select", "docs")
    mirror = f"{project.schema}.docs"

    def mirrored():
        return [(row["id"], row["title"]) for row in project.query(f"select id, title from {mirror} order by id")]

    truncate = [
        postgres_line("u", 150, {"id": 3, "title": "before the truncate"}),
        truncate_line(200),
        postgres_line("c", 210, {"id": 4, "title": "after"}),
        postgres_line("c", 220, {"id": 2, "title": "again"}),
    ]
    land(project, "2", truncate)
    project.dbt("run", "--select", "docs")
    assert mirrored() == [(2, "again"), (4, "after")]
    assert "3 rows truncated" in project.dbt_log()
    (recorded,) = project.query(f"select truncate_seq, rows_truncated from {project.schema}.cdc_merge_truncates")
    assert recorded == {"truncate_seq": "00000000000000000200.00000000000000000000.0000000000.1", "rows_truncated": 3}
    # The truncated rows are the run's deletes (cdc_merge_runs and cdc_merge_offsets).
    assert deleted_counts(project) == (3, 3)

    # A late event older than the truncate brings nothing back; landing the batch again changes nothing.
    land(project, "3", [postgres_line("u", 160, {"id": 1, "title": "late"})])
    land(project, "4", truncate)
    version = project.table_version(mirror)
    project.dbt("run", "--select", "docs")
    assert mirrored() == [(2, "again"), (4, "after")]
    assert project.table_version(mirror) == version
    assert len(project.query(f"select truncate_seq from {project.schema}.cdc_merge_truncates")) == 1

    # The mirror is what the log replayed after its last truncate gives, and a rebuild ends the same.
    (project.project_dir / "models" / "mirrors" / "_docs.yml").write_text(
        "version: 2\nmodels:\n  - name: docs\n    data_tests:\n      - cdc_mirror_matches_log:\n"
        "          arguments:\n            source_table: public.docs\n            raw_relation: ref('raw_events')\n")
    project.dbt("test", "--select", "docs")
    project.dbt("run", "--select", "docs", "--full-refresh")
    assert mirrored() == [(2, "again"), (4, "after")]


def test_a_truncate_marks_the_rows_of_a_soft_delete_mirror_deleted(dbt_project):
    project = dbt_project
    docs_model(project, "soft")
    land(project, "1", [postgres_line("c", 100 + i, {"id": i, "title": "v1"}) for i in (1, 2)])
    project.dbt("run", "--select", "docs")
    land(project, "2", [truncate_line(200), postgres_line("c", 210, {"id": 2, "title": "v2"})])
    project.dbt("run", "--select", "docs")
    land(project, "3", [postgres_line("u", 150, {"id": 1, "title": "late"}), postgres_line("c", 160, {"id": 3, "title": "late"})])
    project.dbt("run", "--select", "docs")
    rows = project.query(f"select id, title, _cdc_deleted from {project.schema}.docs order by id")
    assert [tuple(row.values()) for row in rows] == [(1, "v1", True), (2, "v2", False)]


def test_a_soft_delete_mirror_keeps_the_same_rows_whether_its_truncates_come_with_their_older_events_or_after_them(
        conformance_project):
    """Each row ends deleted at the first truncate after its event, however the events were batched: one
    mirror is run after each landing (each truncate in a chunk after its older events), the other once
    over them all (both truncates and every event in one chunk)."""
    project = conformance_project
    docs_model(project, "soft", "docs")
    docs_model(project, "soft", "docs_together")
    land(project, "1", [postgres_line("c", 100 + i, {"id": i, "title": "v1"}) for i in (1, 2, 3, 6)])
    project.dbt("run", "--select", "docs", "docs_together")
    landings = [
        [postgres_line("u", 150, {"id": 1, "title": "before"}), postgres_line("d", 155, {"id": 2, "title": "v1"}),
         postgres_line("c", 160, {"id": 4, "title": "before"}), postgres_line("u", 180, {"id": 3, "title": "before"})],
        [truncate_line(200), postgres_line("c", 210, {"id": 5, "title": "v1"}), postgres_line("c", 230, {"id": 3, "title": "again"}),
         postgres_line("u", 240, {"id": 5, "title": "after"}), postgres_line("c", 250, {"id": 7, "title": "v1"})],
        [truncate_line(300), postgres_line("c", 310, {"id": 8, "title": "v1"})],
    ]
    for number, lines in enumerate(landings, start=2):
        land(project, str(number), lines)
        project.dbt("run", "--select", "docs")
    project.dbt("run", "--select", "docs_together")
    log = project.dbt_log()
    # The one chunk's truncates in turn: the rows older than each, not yet deleted.
    assert log.index(f"docs_together: truncate of public.docs at {format_seq(200, 0, 0, 1)}: 3 older rows marked deleted") < log.index(
        f"docs_together: truncate of public.docs at {format_seq(300, 0, 0, 1)}: 3 older rows marked deleted")

    def mirrored(name):
        return [(row["id"], row["title"], bool(row["_cdc_deleted"]), int(row["_cdc_seq"].split(".")[0]))
                for row in project.query(f"select id, title, _cdc_deleted, _cdc_seq from {project.schema}.{name} order by id")]

    # (id, title, deleted, seq's position): each row deleted at the first truncate after its last event.
    expected = [(1, "before", True, 200), (2, "v1", True, 155), (3, "again", True, 300), (4, "before", True, 200),
                (5, "after", True, 300), (6, "v1", True, 200), (7, "v1", True, 300), (8, "v1", False, 310)]
    assert mirrored("docs") == expected
    assert mirrored("docs_together") == expected
    times = f"select id, _cdc_source_ts from {project.schema}.{{}} order by id"
    assert project.query(times.format("docs_together")) == project.query(times.format("docs"))

    # Older events landed late bring nothing back; landing a batch again changes nothing.
    land(project, "5", [postgres_line("u", 140, {"id": 1, "title": "late"}), postgres_line("c", 120, {"id": 9, "title": "late"})] + landings[1])
    project.dbt("run", "--select", "docs", "docs_together")
    assert mirrored("docs_together") == mirrored("docs") == expected


@pytest.mark.parametrize(
    "query, schema, truncated",
    [
        ("TRUNCATE TABLE shop.items", "other", True),
        ("truncate `shop`.`items`;", "", True),
        ("truncate table items", "shop", True),
        ("truncate table items", b"shop", True),
        ("truncate table shop.items_old", "shop", False),
        ("truncate table other.items", "shop", False),
        ("alter table shop.items add column x int", "shop", False),
    ],
)
def test_the_mysql_capture_knows_a_truncate_of_a_captured_table(query, schema, truncated):
    assert (("shop", "items") in emptied_tables(query, schema)) == truncated
