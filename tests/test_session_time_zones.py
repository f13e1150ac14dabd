"""A mirror's timestamps do not depend on the time zone of the session that applies them. A user's
Spark profile or cluster, or a Databend server, may default to a zone other than UTC; a PostgreSQL
`timestamp` (without a zone) must still reach the mirror as the source's wall time read as UTC, as
the docs state (docs/type_mapping.md), and a wall time that zone skips (02:30 on the night New York
moves its clocks forward) must not move an hour or fail the run. Captured by the least-privileged
user, applied on both engines in a New York session, compared with the source table and checked by
cdc-verify in that session."""

from __future__ import annotations

import datetime as dt

import yaml

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.verify import cli as verify_cli
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_online_snapshots import execute

PROFILES = verify_cli.Path(__file__).resolve().parent.parent / "profiles"
ZONE = "America/New_York"
MOMENTS = ("{{ cdc_merge.cdc_columns({'id': 'int', 'wall': 'timestamp', 'moment': 'timestamp', 'day': 'date'}) }}, "
           "{{ cdc_merge.cdc_metadata_columns() }}")


def new_york_profiles(directory) -> verify_cli.Path:
    """The project's profiles with the Spark session in New York (a user's own profile, a cluster's default)."""
    document = yaml.safe_load((PROFILES / "profiles.yml").read_text())
    local = document["cdc_merge"]["outputs"]["local"]
    local["server_side_parameters"]["spark.sql.session.timeZone"] = ZONE
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "profiles.yml").write_text(yaml.safe_dump(document))
    return directory


def source_rows(postgres) -> list[tuple]:  # noqa: F811
    connection = postgres.connect()
    try:
        with connection.cursor() as cursor:
            cursor.execute("select id, wall, moment at time zone 'UTC', day from shop.moments order by id")
            return [tuple(row) for row in cursor.fetchall()]
    finally:
        connection.close()


def test_timestamps_reach_the_mirror_as_the_source_holds_them_in_a_session_of_another_zone(postgres, conformance_project):  # noqa: F811
    project = conformance_project
    execute(postgres, "create schema shop; create table shop.moments (id int primary key, wall timestamp, "
                      "moment timestamptz, day date);"
                      "insert into shop.moments values "
                      "(1, '2026-03-08 02:30:00', '2026-03-08 07:30:00+00', '2026-03-08'), "
                      "(2, '2026-11-01 01:30:00', '2026-11-01 05:30:00+00', '2026-11-01'), "
                      "(3, '2026-01-15 23:59:59.123456', '2026-01-15 23:59:59.123456+00', '2026-01-15'), "
                      "(4, null, null, null)")
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.moments",), slot="moments", out=project.inbox,
                                            state=project.work_dir / "state.json")
    project.write_model("moments", "unique_key='id', source_table='shop.moments'", MOMENTS)
    profiles = PROFILES if project.on_databend else new_york_profiles(project.work_dir / "profiles")
    # Through the snapshot, then through the stream: another skipped wall time, and an update.
    statements = ["insert into shop.moments values (5, '2026-03-08 02:00:00', '2026-03-08 02:00:00-05', '2026-03-08');"
                  "update shop.moments set wall = '2026-03-08 02:59:59.5' where id = 3"]
    try:
        if project.on_databend:
            project.execute(f"set global timezone = '{ZONE}'")
        for round_statements in [[], statements]:
            for statement in round_statements:
                execute(postgres, statement)
            capture_postgres.run(config)
            assert "quarantined 0 lines" in project.land({"shop.moments": ["id"]}).status()
            project.dbt("run", "--select", "moments", profiles_dir=profiles)
            assert verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(profiles),
                                    "--target", project.target, "--select", "moments", "--postgres", dsn]) == 0, \
                project.dbt_log()[-3000:]
    finally:
        if project.on_databend:
            project.execute("set global timezone = 'UTC'")
        else:
            project.spark.conf.set("spark.sql.session.timeZone", "UTC")
    mirror = [tuple(row.values()) for row in project.query(
        f"select id, wall, moment, day from {project.schema}.moments order by id")]
    assert mirror == source_rows(postgres)
    assert mirror[0][1] == dt.datetime(2026, 3, 8, 2, 30) and mirror[2][1] == dt.datetime(2026, 3, 8, 2, 59, 59, 500000)
