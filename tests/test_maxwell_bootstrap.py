"""A Maxwell bootstrap (maxwell-bootstrap) run to catch up after changes the stream missed (a purged
binlog, a table filtered out for a while): its rows are the table as it is, so they win over the
older streamed rows of their keys, and later streamed changes win over them."""

from __future__ import annotations

import json

COLUMNS = "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('txt', 'string') }}, " \
          "{{ cdc_merge.cdc_metadata_columns() }}"


def maxwell(kind: str, data: dict, ts: int) -> str:
    """A line as bootstrapping.md's example writes them, with the table's primary key."""
    return json.dumps({"database": "fooDB", "table": "barTable", "type": kind, "ts": ts, "data": data,
                       "primary_key_columns": ["id"]})


def test_a_bootstrap_after_missed_changes_gives_the_table_as_it_is(dbt_project):
    project = dbt_project
    (project.inbox / "part-0.json").write_text("\n".join([
        maxwell("insert", {"id": 1, "txt": "hello"}, 1450557598),
        maxwell("insert", {"id": 2, "txt": "bootstrap!"}, 1450557598),
        maxwell("update", {"id": 1, "txt": "hello again"}, 1450557600),
    ]) + "\n")
    project.land({})
    project.write_model("bar_table", "unique_key='id', source_table='fooDB.barTable'", COLUMNS)
    project.dbt("run", "--select", "bar_table")

    # The stream missed id 1's change to "changed while missed" and id 3's insert; a bootstrap reads
    # the table, then the stream goes on.
    (project.inbox / "part-1.json").write_text("\n".join([
        maxwell("bootstrap-start", {}, 1450557744),
        maxwell("bootstrap-insert", {"id": 1, "txt": "changed while missed"}, 1450557744),
        maxwell("bootstrap-insert", {"id": 2, "txt": "bootstrap!"}, 1450557744),
        maxwell("bootstrap-insert", {"id": 3, "txt": "inserted while missed"}, 1450557744),
        maxwell("bootstrap-complete", {}, 1450557744),
        maxwell("update", {"id": 2, "txt": "after the bootstrap"}, 1450557800),
    ]) + "\n")
    project.land({})
    project.dbt("run", "--select", "bar_table")

    rows = project.query(f"select id, txt from {project.schema}.bar_table order by id")
    assert [(row["id"], row["txt"]) for row in rows] == [
        (1, "changed while missed"), (2, "after the bootstrap"), (3, "inserted while missed")]


def positioned(kind: str, data: dict, ts: int, position: str, **fields) -> str:
    """A line with output_binlog_position=true: Maxwell writes every row's position, a bootstrap row's
    the position of its request (the insert into maxwell.bootstrap)."""
    return json.dumps({"database": "fooDB", "table": "barTable", "type": kind, "ts": ts, **fields,
                       "position": position, "data": data, "primary_key_columns": ["id"]})


def test_a_bootstrap_with_binlog_positions_wins_over_older_rows_and_loses_to_newer_ones(dbt_project):
    project = dbt_project
    (project.inbox / "part-0.json").write_text("\n".join([
        positioned("insert", {"id": 1, "txt": "hello"}, 1450557598, "master.000006:800050", xid=13, xoffset=0),
        positioned("insert", {"id": 2, "txt": "bootstrap!"}, 1450557598, "master.000006:800050", xid=13, commit=True),
        positioned("update", {"id": 1, "txt": "hello again"}, 1450557600, "master.000006:800911", xid=14, commit=True),
    ]) + "\n")
    project.land({})
    project.write_model("bar_table", "unique_key='id', source_table='fooDB.barTable'", COLUMNS)
    project.dbt("run", "--select", "bar_table")

    # The stream missed id 1's change and id 3's insert (a table filtered out for a while); a bootstrap
    # requested at master.000007:4000 reads the table, then the stream goes on.
    (project.inbox / "part-1.json").write_text("\n".join([
        positioned("bootstrap-start", {}, 1450557744, "master.000007:4000"),
        positioned("bootstrap-insert", {"id": 1, "txt": "changed while missed"}, 1450557744, "master.000007:4000"),
        positioned("bootstrap-insert", {"id": 2, "txt": "bootstrap!"}, 1450557744, "master.000007:4000"),
        positioned("bootstrap-insert", {"id": 3, "txt": "inserted while missed"}, 1450557744, "master.000007:4000"),
        positioned("bootstrap-complete", {}, 1450557744, "master.000007:4000"),
        positioned("update", {"id": 2, "txt": "after the bootstrap"}, 1450557800, "master.000007:5200", xid=20,
                   commit=True),
    ]) + "\n")
    project.land({})
    project.dbt("run", "--select", "bar_table")

    rows = project.query(f"select id, txt from {project.schema}.bar_table order by id")
    assert [(row["id"], row["txt"]) for row in rows] == [
        (1, "changed while missed"), (2, "after the bootstrap"), (3, "inserted while missed")]
