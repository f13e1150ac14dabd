"""Source order where a format carries no usable log position (docs/ordering.md), on Spark +
Iceberg and on Databend: the order of the lines decides, in one file, across files and batches,
and when every file is landed again. The expected tables replay the changes in line order."""

from __future__ import annotations

import shutil

from line_order_workload import (
    FORMATS,
    MODEL_COLUMNS,
    build_changes,
    lines_of,
    model_name,
    replay,
    source_table,
    stamp_in_order,
    write_files,
)

FIRST_WAVE = 20


def mirrored(project, data_format: str) -> dict[int, tuple]:
    rows = project.query(f"select id, name, qty, note from {project.schema}.{model_name(data_format)}")
    return {row["id"]: (row["name"], row["qty"], row["note"]) for row in rows}


def assert_mirrors_equal(project, expected: dict[int, tuple]) -> None:
    wrong = {data_format: mirrored(project, data_format) for data_format in FORMATS}
    wrong = {data_format: rows for data_format, rows in wrong.items() if rows != expected}
    assert not wrong, f"expected {sorted(expected.items())}, got: " + "; ".join(
        f"{data_format}: {sorted(rows.items())}" for data_format, rows in wrong.items()
    )


def test_changes_apply_in_line_order_in_every_format(conformance_project):
    project = conformance_project
    for data_format in FORMATS:
        project.write_model(model_name(data_format), f"unique_key='id', source_table='{source_table(data_format)}'",
                            MODEL_COLUMNS)
    keys = {source_table(data_format): ["id"] for data_format in FORMATS}
    models = [model_name(data_format) for data_format in FORMATS]
    changes = build_changes(seed=21)
    lines = {data_format: lines_of(data_format, changes, first_position=1000) for data_format in FORMATS}

    # The 9-row insert, updates of rows 1 and 7 and the delete of row 9, with equal times and
    # batch ids, and more: one file per format, one batch.
    for data_format in FORMATS:
        first = [line for change in lines[data_format][:FIRST_WAVE] for line in change]
        write_files(project.inbox, f"a-{data_format}", [first])
    summary = project.land(keys, max_files_per_batch=len(FORMATS))
    assert (summary.batches, summary.counts["rejected"], summary.counts["ignored"]) == (1, 0, 0)
    project.dbt("run", "--select", *models)
    assert_mirrors_equal(project, replay(changes[:FIRST_WAVE]))

    # The rest split across three files per format, landed a few files per batch.
    for data_format in FORMATS:
        rest = lines[data_format][FIRST_WAVE:]
        thirds = [rest[:10], rest[10:20], rest[20:]]
        write_files(project.inbox, f"b-{data_format}", [[line for change in part for line in change] for part in thirds])
    summary = project.land(keys, max_files_per_batch=4)
    assert summary.batches >= 6 and summary.counts["rejected"] == 0
    project.dbt("run", "--select", *models)
    expected = replay(changes)
    assert_mirrors_equal(project, expected)

    # Every file delivered again under a new name, in the order they were written: positioned
    # formats see the same events, the others a later delivery of the same history.
    copies = []
    for path in sorted(project.inbox.glob("*.json")):
        copies.append(path.with_name(f"c-{path.name}"))
        shutil.copy(path, copies[-1])
    stamp_in_order(copies)
    project.land(keys, max_files_per_batch=5)
    project.dbt("run", "--select", *models)
    assert_mirrors_equal(project, expected)
