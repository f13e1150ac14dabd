"""A key the source lost and took back within one chunk of a history's batch (docs/history.md, "Online
snapshots and repairs"): an online snapshot page's range record that leaves the key out closes its
version at the page's low watermark even when the key comes back later in the same chunk, by an
insert or by a later page's read, so the history keeps the delete between the two lives; a key
deleted and inserted again by the log's own events in one chunk keeps its delete too. With
`track_columns`, a range record closes a version the same way and a read that brings a closed key
back opens a version though its tracked values are the ones it had. A late, older event reopens
nothing and a replay writes nothing. On Spark + Iceberg and on embedded Databend."""

from __future__ import annotations

import pytest

from test_history_ranges import DOCS, HISTORY_TESTS, at, current_rows, range_line, read_line, replay_changes_nothing
from test_materialization import postgres_line

COLUMNS = ("{{ cdc_merge.cdc_columns({'id': 'int', 'status': 'string', 'note': 'string'}) }}, "
           "{{ cdc_merge.cdc_metadata_columns() }}")


def row(key: int, status: str, note: str = "n") -> dict:
    return {"id": key, "status": status, "note": note}


def versions(project, key: int) -> list[tuple]:
    return [tuple(found.values()) for found in project.query(
        f"select status, note, valid_from, valid_to, is_current, is_deleted from {project.schema}.doc_versions "
        f"where id = {key} order by _cdc_seq")]


def live(project, deletes: str) -> tuple[list, list]:
    """(the history's current, not deleted versions, the mirror's live rows) as (id, status, note)."""
    return current_rows(project, deletes, "id, status, note")


def lives(deletes: str, *chain: tuple) -> list[tuple]:
    """A key's versions from (status, note, opened at, closed at or None, deleted[, the delete's status]):
    a closed life is followed, with soft deletes, by its delete version until the next life (or open),
    holding the life's values unless told."""
    expected = []
    for index, (status, note, opened, closed, deleted, *kept) in enumerate(chain):
        following = chain[index + 1][2] if index + 1 < len(chain) else None
        if deleted:
            expected.append((status, note, at(opened), at(closed), False, False))
            if deletes == "soft":
                expected.append(((kept or [status])[0], note, at(closed), None if following is None else at(following),
                                 following is None, True))
        else:
            expected.append((status, note, at(opened), None if closed is None else at(closed), closed is None, False))
    return expected


def make_models(project, deletes: str, track: bool) -> None:
    tracked = ", track_columns=['status']" if track else ""
    project.write_model("docs", f"unique_key='id', source_table='public.docs', deletes='{deletes}'", COLUMNS)
    project.write_model("doc_versions", f"materialized='cdc_history', unique_key='id', source_table='public.docs', "
                                        f"deletes='{deletes}'{tracked}", COLUMNS)
    (project.project_dir / "models" / "mirrors" / "_doc_versions.yml").write_text(HISTORY_TESTS)


def land_and_run(project, name: str, lines: list[str]) -> None:
    (project.inbox / name).write_text("\n".join(lines) + "\n")
    project.land(DOCS)
    project.dbt("run", "--select", "docs", "doc_versions")


@pytest.mark.parametrize("deletes", ["hard", "soft"])
def test_a_key_lost_and_taken_back_in_one_chunk_keeps_its_delete(conformance_project, deletes):
    project = conformance_project
    make_models(project, deletes, track=False)
    land_and_run(project, "1.json", [postgres_line("c", 100 + 10 * key, row(key, "a")) for key in (1, 5, 6, 8, 9)])
    # One chunk. Key 8 is deleted and inserted again by the log's events. The source loses keys 5 and
    # 6 with no delete in the log: page 1 (watermarks 200-210, through key 10) reads key 1 alone. Key 5
    # comes back by an insert (305, between page 2's watermarks, which leave it to its change), key 6
    # by page 2's read (310). Key 9, updated before page 1, is gone for good: both pages leave it out.
    land_and_run(project, "2.json", [
        postgres_line("d", 190, row(8, "a")),
        postgres_line("u", 195, row(9, "b")),
        read_line(210, row(1, "a")),
        range_line(220, 200, {"id": 10}),
        postgres_line("c", 260, row(8, "b")),
        postgres_line("c", 305, row(5, "b")),
        read_line(310, row(1, "a")),
        read_line(310, row(6, "b")),
        read_line(310, row(8, "b")),
        range_line(320, 300, {"id": 10}),
    ])
    source = [(1, "a", "n"), (5, "b", "n"), (6, "b", "n"), (8, "b", "n")]
    assert live(project, deletes) == (source, source)
    # Closed at page 1's low watermark, at its range record's time.
    assert versions(project, 5) == lives(deletes, ("a", "n", 150, 220, True), ("b", "n", 305, None, False))
    assert versions(project, 6) == lives(deletes, ("a", "n", 160, 220, True), ("b", "n", 310, None, False))
    assert versions(project, 8) == lives(deletes, ("a", "n", 180, 190, True), ("b", "n", 260, 310, False),
                                         ("b", "n", 310, None, False))
    assert versions(project, 9) == lives(deletes, ("a", "n", 190, 195, False), ("b", "n", 195, 220, True))
    # One delete each (key 8's, and page 1's of keys 5, 6 and 9): page 2 found key 9 deleted.
    deleted = (f"{project.schema}.doc_versions__cdc_history_deletes" if deletes == "hard"
               else f"{project.schema}.doc_versions where is_deleted and _cdc_updated_seq = _cdc_seq")
    assert project.query(f"select count(*) as n from {deleted}")[0]["n"] == 4

    # An older event of key 5 arriving late is placed before the delete: it reopens nothing.
    land_and_run(project, "3.json", [postgres_line("u", 170, row(5, "late"))])
    assert live(project, deletes) == (source, source)
    # A soft delete keeps the values it was written with.
    assert versions(project, 5) == lives(deletes, ("a", "n", 150, 170, False), ("late", "n", 170, 220, True, "a"),
                                         ("b", "n", 305, None, False))
    replay_changes_nothing(project, deletes, source, live)


@pytest.mark.parametrize("deletes", ["hard", "soft"])
def test_with_track_columns_a_range_closes_a_version_and_a_read_back_opens_one(conformance_project, deletes):
    project = conformance_project
    make_models(project, deletes, track=True)
    land_and_run(project, "1.json", [postgres_line("c", 100 + 10 * key, row(key, "a", f"n{key}")) for key in (1, 5, 6, 7)])
    # Page 1 (200-210, through key 10) reads key 1 unchanged (updated in place); key 6's untracked
    # note changes between the watermarks (in place, and kept). Keys 5 and 7 are gone. Key 5 comes
    # back in the same chunk by an insert of its old tracked value, key 7 in the next chunk by page
    # 2's read of its old values: each opens a version after the delete.
    land_and_run(project, "2.json", [
        postgres_line("u", 205, row(6, "a", "n6b")),
        read_line(210, row(1, "a", "n1")),
        range_line(220, 200, {"id": 10}),
        postgres_line("c", 260, row(5, "a", "n5b")),
    ])
    assert versions(project, 5) == lives(deletes, ("a", "n5", 150, 220, True), ("a", "n5b", 260, None, False))
    assert versions(project, 7) == lives(deletes, ("a", "n7", 170, 220, True))
    land_and_run(project, "3.json", [
        read_line(310, row(1, "b", "n1")),
        read_line(310, row(5, "a", "n5b")),
        read_line(310, row(6, "a", "n6b")),
        read_line(310, row(7, "a", "n7")),
        range_line(320, 300, {"id": 10}),
    ])
    source = [(1, "b", "n1"), (5, "a", "n5b"), (6, "a", "n6b"), (7, "a", "n7")]
    assert live(project, deletes) == (source, source)
    assert versions(project, 1) == lives(deletes, ("a", "n1", 110, 310, False), ("b", "n1", 310, None, False))
    assert versions(project, 5) == lives(deletes, ("a", "n5", 150, 220, True), ("a", "n5b", 260, None, False))
    assert versions(project, 6) == lives(deletes, ("a", "n6b", 160, None, False))
    assert versions(project, 7) == lives(deletes, ("a", "n7", 170, 220, True), ("a", "n7", 310, None, False))

    # An older event of key 7 arriving late is placed before the delete: it reopens nothing.
    land_and_run(project, "4.json", [postgres_line("u", 190, row(7, "late", "n7"))])
    assert live(project, deletes) == (source, source)
    assert versions(project, 7) == lives(deletes, ("a", "n7", 170, 190, False), ("late", "n7", 190, 220, True, "a"),
                                         ("a", "n7", 310, None, False))
    replay_changes_nothing(project, deletes, source, live)
