"""A source TRUNCATE in a cdc_history: every version older than it closes at the truncate's time, as
its mirror removes the rows (with deletes='soft' a delete version follows); events after it open
versions; an older event landing later is placed before it and stays closed; a replay and a rebuild
change nothing."""

from __future__ import annotations

import pytest

from test_history import ts
from test_materialization import postgres_line
from test_truncate import land, truncate_line


def docs_history(project, deletes: str) -> None:
    (project.project_dir / "models" / "history" / "docs_versions.sql").write_text(f"""
{{{{ config(materialized='cdc_history', unique_key='id', source_table='public.docs', deletes='{deletes}') }}}}
select
    {{{{ cdc_merge.cdc_columns({{'id': 'int', 'title': 'string'}}) }}}},
    {{{{ cdc_merge.cdc_metadata_columns() }}}}
from {{{{ cdc_merge.cdc_events(ref('raw_events')) }}}}
""")
    (project.project_dir / "models" / "history" / "_docs_versions.yml").write_text(
        "version: 2\nmodels:\n  - name: docs_versions\n    data_tests:\n"
        "      - cdc_history_one_current:\n          arguments:\n            source_table: public.docs\n"
        "            raw_relation: ref('raw_events')\n      - cdc_history_intervals\n")


def versions(project) -> list[tuple]:
    return [tuple(row.values()) for row in project.query(
        f"select id, title, valid_from, valid_to, is_current, is_deleted from {project.schema}.docs_versions "
        "order by id, _cdc_seq")]


def at(lsn: int):
    return ts(1_767_225_600_000 + lsn)


def expected(deletes: str, late: bool) -> list[tuple]:
    """(id, title, valid_from, valid_to, is_current, is_deleted): the truncate at 200 closes keys 1, 2, 3 (and
    the late ones: 1 updated at 160, 5 inserted at 170); 2 comes back at 220, 4 is new at 210."""
    closed = {1: [("v1", 101), *([("late", 160)] if late else [])], 2: [("v1", 102)], 3: [("v1", 103), ("before", 150)],
              **({5: [("late", 170)]} if late else {})}
    after = {2: ("again", 220), 4: ("after", 210)}
    rows = []
    for key in sorted(closed.keys() | after.keys()):
        chain = closed.get(key, [])
        for number, (title, lsn) in enumerate(chain):
            end = chain[number + 1][1] if number + 1 < len(chain) else 200
            rows.append((key, title, at(lsn), at(end), False, False))
        if chain and deletes == "soft":
            rows.append((key, chain[-1][0], at(200), at(after[key][1]) if key in after else None, key not in after, True))
        if key in after:
            rows.append((key, after[key][0], at(after[key][1]), None, True, False))
    return rows


@pytest.mark.parametrize("deletes", ["hard", "soft"])
def test_a_truncate_closes_every_older_version(conformance_project, deletes):
    project = conformance_project
    docs_history(project, deletes)
    land(project, "1", [postgres_line("c", 100 + i, {"id": i, "title": "v1"}) for i in (1, 2, 3)])
    project.dbt("run", "--select", "docs_versions")
    truncated = [
        postgres_line("u", 150, {"id": 3, "title": "before"}),
        truncate_line(200),
        postgres_line("c", 210, {"id": 4, "title": "after"}),
        postgres_line("c", 220, {"id": 2, "title": "again"}),
    ]
    land(project, "2", truncated)
    project.dbt("run", "--select", "docs_versions")
    assert versions(project) == expected(deletes, late=False)

    # Late events older than the truncate, of a key it closed and of a key never seen: closed by it too.
    land(project, "3", [postgres_line("u", 160, {"id": 1, "title": "late"}), postgres_line("c", 170, {"id": 5, "title": "late"})])
    project.dbt("run", "--select", "docs_versions")
    assert versions(project) == expected(deletes, late=True)
    project.dbt("test", "--select", "docs_versions")

    # The truncate's batch landed again changes nothing; a rebuild from the log gives the same versions.
    land(project, "4", truncated)
    version = project.table_version(f"{project.schema}.docs_versions")
    project.dbt("run", "--select", "docs_versions")
    assert project.table_version(f"{project.schema}.docs_versions") == version
    project.dbt("run", "--select", "docs_versions", "--full-refresh")
    assert versions(project) == expected(deletes, late=True)
    project.dbt("test", "--select", "docs_versions")
