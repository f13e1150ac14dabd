"""What operators do to a captured PostgreSQL table, with the mirror compared with the source table
after each step by the user's own check (dbt run-operation cdc_verify): a column renamed while
changes to it are still in the slot, and the replication slot lost and a new snapshot taken with
--resnapshot (in one transaction, or online in pages), while rows were deleted. Captured by the
least-privileged user the docs prescribe. And a --resnapshot refused, with nothing changed, where the
server's log is behind the position the capture had written."""

from __future__ import annotations

import json

import pytest

from harness.postgres_server import create_capture_user
from test_capture_faults import capture, pg_args, pg_setup, postgres  # noqa: F401 - postgres: a fixture
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.output import CaptureError

KEYS = {"shop.customers": ["id"]}
BEFORE_RENAME = "{{ cdc_merge.cdc_columns({'id': 'int', 'name': 'string', 'score': 'int', 'note': 'string'}) }}"
# docs/schema_changes.md's way to follow a renamed column: read both names, keep whichever the event has.
AFTER_RENAME = """{{ cdc_merge.cdc_columns({'id': 'int', 'name': 'string', 'points_before': 'int', 'points_after': 'int',
                                    'note': 'string'}, json_fields={'points_before': 'score', 'points_after': 'points'}) }}"""


def model(project, columns: str, select: str = "*") -> None:
    project.write_model("customers", "unique_key='id', source_table='shop.customers'", columns + ", _cdc_key, _cdc_action, "
                        "_cdc_seq, _cdc_source_ts, _cdc_unavailable")
    if select != "*":  # a final CTE over the columns read
        path = project.project_dir / "models" / "mirrors" / "customers.sql"
        path.write_text(path.read_text().replace("select * from final", f"select {select} from final"))


def apply_and_verify(project, dsn: str) -> None:
    project.land(KEYS)
    project.dbt("run", "--select", "customers")
    project.dbt("run-operation", "cdc_verify", "--args", json.dumps({"source": {"postgres": dsn}, "select": "customers"}))
    reports = [line for line in project.dbt_log().splitlines() if "customers vs shop.customers:" in line]
    assert f"{project.schema}.customers vs shop.customers: equal:" in reports[-1]


def execute(server, sql: str) -> None:
    connection = server.connect()
    with connection.cursor() as cursor:
        cursor.execute(sql)
    connection.commit()
    connection.close()


@pytest.mark.parametrize("resnapshot", ["exported", "online"])
def test_a_renamed_column_and_a_lost_slot_leave_the_mirror_equal_to_the_source(postgres, dbt_project, tmp_path, resnapshot):
    execute(postgres, "create schema shop; create table shop.customers (id int primary key, name text, score int, note text);"
                      "insert into shop.customers select g, 'n' || g, g, repeat('x', 3000) from generate_series(1, 6) g")
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=tuple(KEYS), slot="recovery", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json")
    capture_postgres.run(config)
    model(dbt_project, BEFORE_RENAME)
    apply_and_verify(dbt_project, dsn)

    # Decoded with the old name, written after the capture has read the new one: not a TOAST marker.
    execute(postgres, "update shop.customers set score = 12941 where id = 1;"
                      "alter table shop.customers rename column score to points;"
                      "update shop.customers set name = 'renamed' where id = 2")
    capture_postgres.run(config)
    model(dbt_project, AFTER_RENAME, "id, name, coalesce(points_after, points_before) as points, note, "
                                     "_cdc_key, _cdc_action, _cdc_seq, _cdc_source_ts, _cdc_unavailable")
    apply_and_verify(dbt_project, dsn)

    # The slot is gone (dropped by hand, or by max_slot_wal_keep_size) while rows are deleted and added.
    execute(postgres, "select pg_drop_replication_slot('recovery');"
                      "delete from shop.customers where id in (3, 4); insert into shop.customers values (7, 'n7', 7, 'x')")
    with pytest.raises(CaptureError, match="replication slot recovery is gone.*--resnapshot"):
        capture_postgres.run(config)
    landed = set(dbt_project.inbox.iterdir())
    capture_postgres.run(capture_postgres.CaptureConfig(**{**config.__dict__, "resnapshot": True, "snapshot_mode": resnapshot,
                                                           "page_rows": 2}))
    written = [json.loads(line) for path in sorted(set(dbt_project.inbox.iterdir()) - landed)
               for line in path.read_text().splitlines()]
    truncates = [event for event in written if event.get("op") == "t"]
    ranges = [event["range"] for event in written if "range" in event]
    if resnapshot == "online":
        # The mirror keeps its rows while the pages are read: no truncate; the deleted keys 3 and 4 go
        # by the range records, which cover every key from the table's start to its end.
        assert not truncates and len(ranges) == 3, written
        assert ranges[0]["after"] is None and ranges[-1]["through"] is None, ranges
    else:
        assert len(truncates) == 1 and not ranges, written
    apply_and_verify(dbt_project, dsn)


def test_a_resnapshot_of_a_server_whose_log_is_behind_the_written_one_is_refused_and_nothing_changed(postgres, tmp_path):
    # The state of a capture that had written further than this server's log now reaches: a server
    # restored from a backup or made anew, whose changes would all rank below the mirrors' rows.
    pg_setup(postgres, 3)
    assert capture("postgres", *pg_args(postgres, tmp_path)).returncode == 0
    state_path = tmp_path / "state.json"
    state = json.loads(state_path.read_text())
    state_path.write_text(json.dumps({**state, "written_lsn": "FFFF/0"}))
    files, state_text = sorted((tmp_path / "out").iterdir()), state_path.read_text()

    result = capture("postgres", *pg_args(postgres, tmp_path), "--resnapshot", "--snapshot", "online")

    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "log is now at" in result.stderr and "before FFFF/0" in result.stderr and "started over" in result.stderr
    assert sorted((tmp_path / "out").iterdir()) == files and state_path.read_text() == state_text
    with postgres.connect() as connection, connection.cursor() as cursor:
        cursor.execute("select count(*) from pg_replication_slots where slot_name = 'faults'")
        assert cursor.fetchone()[0] == 1  # not dropped
