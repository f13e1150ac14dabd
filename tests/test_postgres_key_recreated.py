"""A captured table's primary key made DEFERRABLE (dropped and added again) and back between two of the
capture's checks, or while the capture stood stopped at the check that found it so: the changes made
meanwhile are logged without their keys (REPLICA IDENTITY FULL: a key change as an update of the new
key) or not at all (DEFAULT: wal2json sends no update or delete of a table without a usable key). The
capture reads such a table again online (postgres_keys.py), so each mirror equals its source table."""

from __future__ import annotations

import pytest

from harness.postgres_server import create_capture_user
from python_jobs import scaffold
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.output import CaptureError
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_online_snapshots import execute

TABLES = ("shop.full_identity", "shop.default_identity")


def make_key(table: str, deferrable: bool) -> str:
    name = table.split(".")[1] + "_pkey"
    return (f"alter table {table} drop constraint {name}, add constraint {name} primary key (id)"
            + (" deferrable" if deferrable else ""))


def changes_without_usable_key(postgres, table: str) -> None:  # noqa: F811
    execute(postgres, f"update {table} set id = 100 where id = 1")
    execute(postgres, f"update {table} set id = 5 - id where id in (2, 3)")  # a swap, which only DEFERRABLE allows
    execute(postgres, f"delete from {table} where id = 6")
    execute(postgres, f"update {table} set n = -4 where id = 4")
    execute(postgres, f"insert into {table} values (7, 7)")


def assert_mirrors_equal_sources(postgres, project, dsn: str, qualified: tuple = TABLES) -> None:  # noqa: F811
    """Each table's model as cdc-scaffold writes it now, landed and run: its (id, n) rows equal the source's."""
    tables = scaffold.postgres_tables(dsn, list(qualified))
    for table in tables:
        (project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))
    landed = project.land({table.qualified: list(table.primary_key) for table in tables})
    assert "quarantined 0 lines" in landed.status(), landed.status()
    project.dbt("run", "--select", *(table.model_name for table in tables))
    connection = postgres.connect()
    for table in tables:
        with connection.cursor() as cursor:
            cursor.execute(f"select id, n from {table.qualified} order by id")
            source = cursor.fetchall()
        mirrored = sorted((row["id"], row["n"]) for row in project.query(f"select id, n from {project.schema}.{table.model_name}"))
        assert mirrored == source, table.qualified
    connection.close()


@pytest.mark.parametrize("stopped_at_the_check", [False, True])
def test_changes_while_the_key_was_deferrable_reach_the_mirrors(postgres, dbt_project, tmp_path, stopped_at_the_check):  # noqa: F811
    execute(postgres, "create schema shop; " + "; ".join(
        f"create table {table} (id int primary key, n int); insert into {table} select g, g from generate_series(1, 6) as g"
        for table in TABLES) + f"; alter table {TABLES[0]} replica identity full")
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=TABLES, slot="key_recreated", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json")
    capture_postgres.run(config)
    for table in TABLES:
        execute(postgres, make_key(table, deferrable=True))
        changes_without_usable_key(postgres, table)
    if stopped_at_the_check:
        with pytest.raises(CaptureError, match="DEFERRABLE"):
            capture_postgres.run(config)
    for table in TABLES:
        execute(postgres, make_key(table, deferrable=False))
    capture_postgres.run(config)
    assert_mirrors_equal_sources(postgres, dbt_project, dsn)
    # A key the written log has as it is now reads nothing again.
    execute(postgres, f"update {TABLES[0]} set id = 8 where id = 7; delete from {TABLES[1]} where id = 7")
    assert capture_postgres.run(config).snapshot_rows == 0
    assert_mirrors_equal_sources(postgres, dbt_project, dsn)
