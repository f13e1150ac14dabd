"""cdc-verify on mirrors that really differ, compared with the source database itself (docs/operating.md,
"Verify and repair"): the differences it must find, and its record once they are gone."""

from __future__ import annotations

import json
import time
from pathlib import Path

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.verify import cli as verify_cli
from test_capture_faults import following_capture, postgres, stopped  # noqa: F401 - postgres is a fixture
from test_online_snapshots import execute

PROFILES = verify_cli.Path(__file__).resolve().parent.parent / "profiles"
MODELS = {"pairs": ("unique_key=['b', 'a'], source_table='shop.pairs'", "{'a': 'int', 'b': 'int', 'v': 'int'}"),
          "items": ("unique_key='id', source_table='shop.items'", "{'id': 'int', 'v': 'int'}")}


def source_rows(server, sql: str) -> list[tuple]:
    connection = server.connect()
    with connection.cursor() as cursor:
        cursor.execute(sql)
        rows = cursor.fetchall()
    connection.close()
    return rows


def captured_items_mirror(server, project, slot: str) -> tuple[str, Path]:
    """shop.items of 20 rows captured (its state file kept), landed and applied to the mirror items:
    the capture user's DSN and the state file."""
    execute(server, "create schema shop; create table shop.items (id int primary key, v int);"
                    "insert into shop.items select g, g from generate_series(1, 20) g")
    dsn = create_capture_user(server, ["shop"])
    state = project.work_dir / "state.json"
    capture_postgres.run(capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot=slot, out=project.inbox,
                                                        state=state))
    project.write_model("items", MODELS["items"][0], "{{ cdc_merge.cdc_columns(" + MODELS["items"][1] + ") }}, "
                        "{{ cdc_merge.cdc_metadata_columns() }}")
    project.land({"shop.items": ["id"]})
    project.dbt("run", "--select", "items")
    return dsn, state


def verify_items(project, dsn: str, state: Path, *options: str) -> int:
    return verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES), "--target",
                            project.target, "--select", "items", "--postgres", dsn, "--state", str(state), *options])


def test_a_key_held_twice_and_a_key_listed_out_of_order_are_checked_as_they_are(postgres, dbt_project):  # noqa: F811
    """A key the mirror holds twice: the rows read by key kept one copy, and the check said equal
    (100 rows in the source, 101 in the mirror, "the sides render id, v apart"). A model keyed
    unique_key=['b', 'a'] on the source key (a, b): the mirror's ranges were cut in its order, the
    source's in the key's, so one changed row of 60 was reported as 55 missing and 55 extra."""
    project = dbt_project
    execute(postgres, "create schema shop; create table shop.pairs (a int, b int, v int, primary key (a, b));"
                      "insert into shop.pairs select g / 10, g % 10, g from generate_series(1, 60) g;"
                      "create table shop.items (id int primary key, v int);"
                      "insert into shop.items select g, g from generate_series(1, 100) g")
    dsn = create_capture_user(postgres, ["shop"])
    capture_postgres.run(capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.pairs", "shop.items"), slot="twice",
                                                        out=project.inbox, state=project.work_dir / "state.json"))
    for model, (config, columns) in MODELS.items():
        project.write_model(model, config, "{{ cdc_merge.cdc_columns(" + columns + ") }}, {{ cdc_merge.cdc_metadata_columns() }}")
    (project.project_dir / "models" / "mirrors" / "_items.yml").write_text(
        "version: 2\nmodels:\n  - name: items\n    data_tests:\n      - cdc_verify_clean\n")
    assert "quarantined 0 lines" in project.land({"shop.pairs": ["a", "b"], "shop.items": ["id"]}).status()
    project.dbt("run", "--select", *MODELS)

    def check(*options: str) -> dict[str, str]:
        # --wait-seconds 0: the mirrors have applied all there is; no wait for the source to stay quiet.
        verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES), "--target",
                         project.target, "--select", *MODELS, "--postgres", dsn, "--segments", "4", "--leaf-rows", "10",
                         "--wait-seconds", "0", *options])
        log = project.dbt_log().splitlines()
        return {model: [line for line in log if f".{model} vs shop." in line][-1] for model in MODELS}

    schema = project.schema
    project.execute(f"update {schema}.pairs set v = -1 where a = 2 and b = 3")
    project.execute(f"insert into {schema}.items (id, v, _cdc_key, _cdc_seq, _cdc_source_ts) values "
                    "(50, 50, '[\"50\"]', '00000000000000000002', current_timestamp())")
    for options in ([], ["--sample", "1000"]):
        reports = check(*options)
        assert "60 rows in the source, 60 in the mirror" in reports["pairs"], reports
        assert reports["pairs"].endswith("0 missing, 0 extra, 1 with other values"), reports
        assert "100 rows in the source, 101 in the mirror" in reports["items"], reports
        assert reports["items"].endswith("0 missing, 1 extra, 0 with other values"), reports
        log = project.dbt_log()
        assert 'key ["2","3"]: v: source 23, mirror -1' in log and 'extra in the mirror: key ["50"]' in log
        assert 'more than one row of the mirror' in log and '["50"] (2 rows)' in log
    assert not project.dbt("test", "--select", "items", expect_success=False).success

    # Put right by hand: the newest check is clean, and so is the data test.
    project.execute(f"update {schema}.pairs set v = 23 where a = 2 and b = 3")
    project.execute(f"delete from {schema}.items where _cdc_seq = '00000000000000000002'")
    reports = check()
    assert all(": equal: " in report for report in reports.values()), reports
    assert [tuple(row.values()) for row in project.query(f"select id, v from {schema}.items order by id")] == \
        [(key, key) for key in range(1, 101)]
    recorded = project.query(f"select clean, extra from {schema}.cdc_merge_verify where mirror = '{schema}.items' "
                             "order by checked_at")
    assert [(row["clean"], row["extra"]) for row in recorded] == [(False, 1), (False, 1), (True, 0)], recorded
    project.dbt("test", "--select", "items")


def test_a_model_keyed_out_of_the_source_key_order_is_snapshot_and_repaired_by_ranges_of_the_source_key(
        postgres, conformance_project):  # noqa: F811
    """The source key (a, b), unique_key=['b', 'a']: each page's range record, applied as a range of
    (b, a), removed rows of other pages (the first snapshot kept 6 of 60 rows on Spark; on Databend,
    whose VARIANT keeps a bound's members by name, any order of the bound's own was lost too)."""
    project = conformance_project
    execute(postgres, "create schema shop; create table shop.pairs (a int, b int, v int, primary key (a, b));"
                      "insert into shop.pairs select g / 10, g % 10, g from generate_series(1, 60) g")
    dsn = create_capture_user(postgres, ["shop"])
    capture = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.pairs",), slot="pairs", out=project.inbox,
                                             state=project.work_dir / "state.json", snapshot_mode="online", page_rows=20)
    config, columns = MODELS["pairs"]
    project.write_model("pairs", config, "{{ cdc_merge.cdc_columns(" + columns + ") }}, {{ cdc_merge.cdc_metadata_columns() }}")
    mirror = f"{project.schema}.pairs"

    def capture_and_apply() -> list[tuple]:
        capture_postgres.run(capture)
        assert "quarantined 0 lines" in project.land({"shop.pairs": ["a", "b"]}).status()
        project.dbt("run", "--select", "pairs")
        return [tuple(row.values()) for row in project.query(f"select a, b, v from {mirror} order by a, b")]

    source = source_rows(postgres, "select a, b, v from shop.pairs order by a, b")
    assert capture_and_apply() == source
    project.execute(f"update {mirror} set v = -1 where a = 2 and b = 3")
    project.execute(f"delete from {mirror} where a = 4 and b = 0")
    assert verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES), "--target",
                            project.target, "--select", "pairs", "--postgres", dsn, "--segments", "4", "--leaf-rows", "10",
                            "--wait-seconds", "0", "--repair", "--state", str(capture.state)]) == 1
    assert capture_and_apply() == source


def test_a_source_table_without_a_primary_key_is_said_so(postgres, dbt_project):  # noqa: F811
    """The source's primary key dropped after its mirror was made: the check stopped on PostgreSQL's
    syntax error at `where () in ((), ...)` (a sample) or in the range query, not saying why."""
    project = dbt_project
    execute(postgres, "create schema shop; create table shop.items (id int primary key, v int);"
                      "insert into shop.items select g, g from generate_series(1, 20) g")
    dsn = create_capture_user(postgres, ["shop"])
    capture_postgres.run(capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot="unkeyed",
                                                        out=project.inbox, state=project.work_dir / "state.json"))
    config, columns = MODELS["items"]
    project.write_model("items", config, "{{ cdc_merge.cdc_columns(" + columns + ") }}, {{ cdc_merge.cdc_metadata_columns() }}")
    project.land({"shop.items": ["id"]})
    project.dbt("run", "--select", "items")
    execute(postgres, "alter table shop.items drop constraint items_pkey")
    for options in ([], ["--sample", "100"]):
        assert verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES), "--target",
                                project.target, "--select", "items", "--postgres", dsn, "--wait-seconds", "0", *options]) == 2
        assert project.dbt_log().count("table shop.items has no primary key: a mirror needs one to merge on") >= 1


def test_changes_the_following_capture_wrote_but_no_landing_landed_are_not_drift(postgres, dbt_project, capsys):  # noqa: F811
    """A landing every minute leaves the raw table quiet while the capture's newest file waits in the
    inbox: cdc-verify compared after 5 quiet seconds, reported the rows of that file as differing, and
    --repair read their ranges again. With the capture's state, the mirror is behind until they land."""
    project = dbt_project
    dsn, state = captured_items_mirror(postgres, project, "written")
    requests = state.with_name(state.name + ".requests")

    def verify(*options: str) -> int:
        return verify_items(project, dsn, state, *options)

    with following_capture("postgres", "--dsn", dsn, "--tables", "shop.items", "--slot", "written", "--out",
                           str(project.inbox), "--state", str(state), "--max-wait-seconds", "0.3",
                           "--heartbeat-seconds", "1") as following:
        execute(postgres, "update shop.items set v = -v where id in (3, 4)")
        deadline = time.monotonic() + 60
        while (json.loads(state.read_text()).get("following") or {}).get("changes", 0) < 2:
            assert time.monotonic() < deadline, "the capture wrote no file"
            time.sleep(0.2)
        # Written, not landed: behind, and not read again.
        assert verify("--repair", "--wait-seconds", "8") == 1
        log = project.dbt_log()
        assert "2 with other values" in log and "had not applied past the source's position" in log, log[-3000:]
        assert not list(requests.glob("*.json")), "ranges of changes on their way were asked of the capture"
        assert "shop.items: not read again" in capsys.readouterr().err
        # Landed and applied: equal.
        project.land({"shop.items": ["id"]})
        project.dbt("run", "--select", "items")
        assert verify("--wait-seconds", "20") == 0, project.dbt_log()[-3000:]
        # A transaction of a table not captured lands nothing, nor do the capture's heartbeats (one a
        # second here): the mirror is not behind for them. Was: their commit was the capture's newest,
        # which never landed, and every check called the mirror behind.
        written = json.loads(state.read_text())["following"]
        execute(postgres, "create table public.other (id int primary key); insert into public.other values (1)")
        time.sleep(2.5)
        while json.loads(state.read_text())["following"]["position"] == written["position"]:
            assert time.monotonic() < deadline + 60, "the capture wrote no state for the other table's transaction"
            time.sleep(0.2)
        assert json.loads(state.read_text())["following"]["newest_commit_ms"] == written["newest_commit_ms"]
        started = time.monotonic()
        assert verify("--wait-seconds", "30") == 0, project.dbt_log()[-3000:]
        assert time.monotonic() - started < 25
        # A real difference, with everything landed: found and asked of the capture.
        project.execute(f"update {project.schema}.items set v = 999 where id = 5")
        assert verify("--repair", "--wait-seconds", "20", "--repair-wait-seconds", "0") == 1
        said = capsys.readouterr().err
        assert "cdc-verify: shop.items keys" in said and "not read again" not in said, said
        stopped(following)


def test_a_key_held_twice_with_a_change_on_its_way_is_deleted_and_read_again(postgres, dbt_project, capsys):  # noqa: F811
    """A row copied into the mirror by hand, then its key changed at the source: every run failed on the
    key held twice, and cdc-verify --repair, which the run's error names, left it because the mirror was
    behind (that change on its way), so the mirror never caught up."""
    project = dbt_project
    dsn, state = captured_items_mirror(postgres, project, "held")
    project.execute(f"insert into {project.schema}.items select * from {project.schema}.items where id = 7")

    def verify(*options: str) -> int:
        return verify_items(project, dsn, state, *options)

    with following_capture("postgres", "--dsn", dsn, "--tables", "shop.items", "--slot", "held", "--out",
                           str(project.inbox), "--state", str(state), "--max-wait-seconds", "0.3") as following:
        execute(postgres, "update shop.items set v = 70 where id = 7")
        deadline = time.monotonic() + 60
        while (json.loads(state.read_text()).get("following") or {}).get("changes", 0) < 1:
            assert time.monotonic() < deadline, "the capture wrote no file"
            time.sleep(0.2)
        project.land({"shop.items": ["id"]})
        assert not project.dbt("run", "--select", "items", expect_success=False).success
        assert "more than once" in project.dbt_log()
        assert verify("--repair", "--wait-seconds", "2", "--repair-wait-seconds", "60") == 1
        said = capsys.readouterr().err
        assert "not read again (but the keys it held more than once" in said and "shop.items keys 7 to 7" in said, said
        assert project.query(f"select count(*) as n from {project.schema}.items where id = 7")[0]["n"] == 0
        while json.loads(state.read_text()).get("snapshots"):
            assert time.monotonic() < deadline + 60, "the capture did not read the key again"
            time.sleep(0.2)
        project.land({"shop.items": ["id"]})
        project.dbt("run", "--select", "items")
        assert verify("--wait-seconds", "20") == 0, project.dbt_log()[-3000:]
        stopped(following)
    assert [tuple(row.values()) for row in project.query(f"select id, v from {project.schema}.items order by id")] == \
        source_rows(postgres, "select id, v from shop.items order by id")
