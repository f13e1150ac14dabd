"""cdc-verify --repair on mirrors that really differ, compared with the source database itself after
the repair (docs/operating.md, "Verify and repair"; docs/online_snapshots.md)."""

from __future__ import annotations

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.verify import cli as verify_cli
from test_capture_faults import postgres  # noqa: F401 - fixtures
from test_online_snapshots import execute

PROFILES = verify_cli.Path(__file__).resolve().parent.parent / "profiles"


def source_rows(server, sql: str) -> list[tuple]:
    connection = server.connect()
    with connection.cursor() as cursor:
        cursor.execute(sql)
        rows = cursor.fetchall()
    connection.close()
    return rows


def test_a_unique_key_listed_in_another_order_than_the_source_key(postgres, dbt_project):  # noqa: F811
    """The source pages its key (a, b) in that order; a model may list unique_key=['b', 'a']. Each
    page's range record is a range of (a, b): taken as one of (b, a) it covered rows of other pages
    (54 of 60 rows removed by the first snapshot), and the check's ranges, cut at keys of both
    orders, held other rows on each side (rows reported missing and extra that were equal)."""
    project = dbt_project
    execute(postgres, "create schema shop; create table shop.pairs (a int, b int, v int, primary key (a, b));"
                      "insert into shop.pairs select g / 10, g % 10, g from generate_series(1, 60) g")
    dsn = create_capture_user(postgres, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.pairs",), slot="pairs", out=project.inbox,
                                            state=project.work_dir / "state.json", snapshot_mode="online", page_rows=20)
    project.write_model("pairs", "unique_key=['b', 'a'], source_table='shop.pairs'",
                        "{{ cdc_merge.cdc_columns({'a': 'int', 'b': 'int', 'v': 'int'}) }}, "
                        "{{ cdc_merge.cdc_metadata_columns() }}")
    mirror = f"{project.schema}.pairs"

    def capture_and_apply() -> None:
        capture_postgres.run(config)
        assert "quarantined 0 lines" in project.land({"shop.pairs": ["a", "b"]}).status()
        project.dbt("run", "--select", "pairs")

    def check(*options: str) -> int:
        # --wait-seconds 0: the mirror has applied all there is; no wait for the source to stay quiet.
        return verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES), "--target",
                                project.target, "--select", "pairs", "--postgres", dsn, "--segments", "4",
                                "--leaf-rows", "10", "--wait-seconds", "0", *options])

    def mirrored() -> list[tuple]:
        return [tuple(row.values()) for row in project.query(f"select a, b, v from {mirror} order by a, b")]

    capture_and_apply()
    assert mirrored() == source_rows(postgres, "select a, b, v from shop.pairs order by a, b")

    project.execute(f"update {mirror} set v = -1 where a = 2 and b = 3")
    project.execute(f"delete from {mirror} where a = 4 and b = 0")
    project.execute(f"insert into {mirror} (a, b, v, _cdc_key, _cdc_seq, _cdc_source_ts) values "
                    "(3, 11, 1, '[\"3\",\"11\"]', '00000000000000000001', current_timestamp())")
    assert check("--repair", "--state", str(config.state)) == 1
    log = project.dbt_log()
    for line in ('key ["2","3"]: v', 'missing from the mirror: key ["4","0"]', 'extra in the mirror: key ["3","11"]',
                 "1 missing, 1 extra, 1 with other values"):
        assert line in log, (line, log[-3000:])
    capture_and_apply()
    assert mirrored() == source_rows(postgres, "select a, b, v from shop.pairs order by a, b")
