"""The `cluster` target end to end, in one module of about 430 lines, and why: every test here shares
one cluster, whose start takes 20 s. `cdc-cluster` starts the catalog's PostgreSQL, a Spark master,
two workers and a Thrift server; `dbt run` lands events with a Python model spark-submitted to the
master and applies them to two mirrors through the Thrift server; the mirrors equal the oracle's
replay after each wave (deletes, late and duplicated events); `dbt test` passes; `cdc-verify`
checks them through the Thrift server against a PostgreSQL table; a consistency group's catalog
transaction; everything stops even when a test fails."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import PROJECT_DIR
from harness.mirror_project import make_project
from python_jobs.cluster import cli, processes, thrift
from python_jobs.cluster.processes import LOOPBACK, ClusterError
from python_jobs.demo.generate import KEYS, build_waves, write_wave
from python_jobs.demo.transaction_checks import CHECK_SQL, check_at_latest_cut, newest_state, violations
from python_jobs.demo.transaction_checks import MIRRORS as TX_MIRRORS
from python_jobs.demo.transaction_source import KEYS as TX_KEYS
from python_jobs.demo.transaction_source import SCHEMA_OF, SplitDelivery, TransactionTopics
from python_jobs.verify import cli as verify_cli
from harness.postgres_server import create_capture_user
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_consistent_cuts import GROUP_CONFIG, OPENING, mirror_sql, write
from test_materialization import UNSENT_EXPECTED, UNSENT_MODEL_COLUMNS, UNSENT_WAVES
from test_oracle import assert_mirrors_equal_replay, commits_deleting_by_position

# One worker runs the module: its tests share one cluster (Makefile: --dist loadgroup).
pytestmark = pytest.mark.xdist_group("cluster")

MIRRORS = {"shop.customers": "shop_customers", "shop.orders": "shop_orders"}


@pytest.fixture(scope="module")
def cluster():
    # Not under pytest's private temporary folder: the catalog's PostgreSQL runs as nobody when root.
    folder = Path(tempfile.mkdtemp(prefix="cdc-merge-cluster-"))
    folder.chmod(0o755)
    saved: dict[str, str | None] = {}
    try:
        state = cli.up(folder, folder / "warehouse", dict.fromkeys(("catalog", "master", "master_webui", "thrift"), 0),
                       worker_cores=2, worker_memory="2g", driver_memory="2g", executor_memory="1g")
        # Only the cluster's variables are put back after: what the session's fixtures set meanwhile
        # (the warehouse of the process's SparkSession) stays for the tests after this module.
        saved = {name: os.environ.get(name) for name in state.env()}
        os.environ.update(state.env())
        yield state
    finally:
        cli.down(folder)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        assert not any(cli.status(folder).values()), f"a component of {folder} is still running"
        shutil.rmtree(folder, ignore_errors=True)


def applications(state: cli.ClusterState) -> list[str]:
    """Names of the applications the master has run or is running."""
    with urllib.request.urlopen(f"http://{LOOPBACK}:{state.master_webui_port}/json/", timeout=5) as response:
        master = json.load(response)
    return [app["name"] for app in master["activeapps"] + master["completedapps"]]


def test_landing_and_mirrors_on_the_cluster_equal_the_oracle(cluster, postgres, tmp_path):  # noqa: F811
    assert cli.status(Path(cluster.folder)) == dict.fromkeys(cli.status(Path(cluster.folder)), True)
    project = make_project(None, tmp_path, "cluster")
    project.landing_config(KEYS)
    _, waves = build_waves(29, events=800, waves=2, connector="postgresql", snapshot_rows=20,
                           late_fraction=0.1, duplicate_fraction=0.05)
    first_wave_end = max(event.index for event in waves[0].delivered)
    late = [event for event in waves[1].delivered if event.index < first_wave_end and event.table in MIRRORS]
    deletes = [event for wave in waves for event in wave.delivered if event.op == "d" and event.table in MIRRORS]
    assert late and deletes
    delivered = []
    for wave in waves:
        write_wave(wave, project.inbox)
        delivered += wave.delivered
        project.dbt("run", "--select", "raw_events", *MIRRORS.values())
        assert_mirrors_equal_replay(project, delivered, "hard", models=MIRRORS)
    # The Thrift server's catalog has the apply's helpers: replaced rows are deleted by position.
    assert commits_deleting_by_position(project, MIRRORS.values()) > 0
    # The landing ran as its own application on the cluster, the SQL in the Thrift server's.
    assert {"dbt_model_raw_events", "cdc_merge_thrift_server"} <= set(applications(cluster))
    landed = project.query(f"select count(*) as events from {project.raw_schema}.raw_events")[0]["events"]
    assert landed == len(delivered)
    project.dbt("test", "--select", *MIRRORS.values())
    # Nothing new: each mirror takes the idle check's few statements, and nothing is written to it.
    versions = {model: project.table_version(f"{project.schema}.{model}") for model in MIRRORS.values()}
    logged = len(project.dbt_log())
    project.dbt("run", "--select", *MIRRORS.values())
    assert project.dbt_log()[logged:].count(": nothing new (offset = current raw snapshot") == len(MIRRORS)
    assert {model: project.table_version(f"{project.schema}.{model}") for model in MIRRORS.values()} == versions
    # A full refresh, built aside and put in place through the Thrift server's catalog, rebuilds the same mirrors.
    project.dbt("run", "--select", *MIRRORS.values(), "--full-refresh")
    assert project.dbt_log()[logged:].count(": the rebuild took the mirror's place") == len(MIRRORS)
    assert_mirrors_equal_replay(project, delivered, "hard", models=MIRRORS)
    verify_against_a_copy(project, postgres)


# The source tables of MIRRORS on PostgreSQL, with the mirrors' columns.
SOURCE_DDL = """create schema shop;
create table shop.customers (id bigint primary key, name text, email text, tier text, updated_at timestamp);
create table shop.orders (id bigint primary key, customer_id bigint, status text, amount numeric(18,2), ordered_at timestamp)"""


def verify_against_a_copy(project, postgres) -> None:  # noqa: F811
    """cdc-verify on the cluster target (its ranges' SQL through the Thrift server, the mirror at a pinned
    snapshot, cdc_merge_verify written there): the mirrors, equal to the oracle, equal a PostgreSQL copy
    of their rows; a changed and a deleted row of the copy are then found, each by its key."""
    connection = postgres.connect()
    with connection.cursor() as cursor:
        cursor.execute(SOURCE_DDL)
        for table, model in MIRRORS.items():
            cursor.execute(f"select * from {table} limit 0")
            columns = [column.name for column in cursor.description]
            rows = project.query(f"select {', '.join(columns)} from {project.schema}.{model}")
            cursor.executemany(f"insert into {table} values ({', '.join(['%s'] * len(columns))})",
                               [[row[column] for column in columns] for row in rows])
        cursor.execute("select min(id) from shop.orders")
        changed = cursor.fetchone()[0]
        cursor.execute("select max(id) from shop.customers")
        deleted = cursor.fetchone()[0]
    connection.commit()
    connection.close()
    dsn = create_capture_user(postgres, ["shop"])

    def verify() -> int:
        return verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROJECT_DIR / "profiles"),
                                "--target", "cluster", "--select", *MIRRORS.values(), "--postgres", dsn,
                                # Nothing captures this copy: no position to wait for (tests/test_verify.py waits).
                                "--wait-seconds", "0"])

    assert verify() == 0, project.dbt_log()[-3000:]
    assert "2 mirrors equal" in project.dbt_log()
    connection = postgres.connect()
    with connection.cursor() as cursor:
        cursor.execute(f"update shop.orders set status = 'changed at the source' where id = {changed}")
        cursor.execute(f"delete from shop.customers where id = {deleted}")
    connection.commit()
    connection.close()
    assert verify() == 1
    log = project.dbt_log()
    assert f'key ["{changed}"]: status' in log and f'extra in the mirror: key ["{deleted}"]' in log, log[-3000:]
    recorded = project.query(f"select mirror, clean from {project.schema}.cdc_merge_verify order by checked_at, mirror")
    assert [row["clean"] for row in recorded] == [True, True, False, False], recorded


def test_a_taken_port_is_refused_before_anything_starts(tmp_path):
    with socket.socket() as taken:
        taken.bind((LOOPBACK, 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ClusterError, match=f"Thrift server: port {port} on {LOOPBACK} is taken.*--thrift-port"):
            cli.up(tmp_path, tmp_path / "warehouse", {"catalog": 0, "master": 0, "master_webui": 0, "thrift": port},
                   worker_cores=1, worker_memory="1g", driver_memory="1g", executor_memory="1g")
    assert not any(cli.status(tmp_path).values())
    assert not list(tmp_path.glob("*.pid"))


def test_missing_java_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert cli.main(["up", "--folder", str(tmp_path / "cluster")]) == 2
    assert "Java 17 or newer is required" in capsys.readouterr().err
    assert not (tmp_path / "cluster").exists()


def running_in_group(group: int) -> list[int]:
    """Processes of a process group that still run (exited ones may wait for init to reap them)."""
    running = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            running.append(int(stat.parent.name))
    return running


def test_stop_ends_the_whole_process_group(tmp_path):
    pid = processes.start("sleeper", ["sh", "-c", "sleep 300 & sleep 300"], tmp_path, os.environ)
    assert processes.alive(pid)
    assert processes.stop(tmp_path, "sleeper")
    assert not processes.alive(pid)
    assert running_in_group(pid) == []
    assert not (tmp_path / "sleeper.pid").exists()


def test_procedure_arguments_reach_spark_as_written(spark):
    """The apply's SQL and key bounds travel to the Thrift server's procedures as string literals."""
    from dbt.adapters.cdc_spark.impl import _sql_literal

    texts = ["select 1 as pos where x in ('update', 'delete')", "back\\slash \\' and 'quote'", "line\nbreak\ttab", "ü€𝄞", ""]
    assert [spark.sql(f"select {_sql_literal(text)} as v").first()["v"] for text in texts] == texts
    assert spark.sql(f"select {_sql_literal(2**40)} as v").first()["v"] == 2**40


class CatalogRows(threading.Thread):
    """Polls the cluster's catalog database: each distinct state of the tables' catalog rows
    (table -> metadata location) of a schema, in the order seen, read in one query each time."""

    def __init__(self, state: cli.ClusterState, schema: str) -> None:
        super().__init__(daemon=True)
        self.state, self.schema = state, schema
        self.stopped = threading.Event()
        self.states: list[dict[str, str]] = []

    def run(self) -> None:
        import psycopg2

        with psycopg2.connect(host=LOOPBACK, port=self.state.catalog_port, dbname="iceberg_catalog",
                              user=self.state.catalog_user) as connection:
            connection.autocommit = True
            with connection.cursor() as cursor:
                while not self.stopped.is_set():
                    cursor.execute("select table_name, metadata_location from iceberg_tables where table_namespace = %s",
                                   (self.schema,))
                    seen = dict(cursor.fetchall())
                    if not self.states or seen != self.states[-1]:
                        self.states.append(seen)
                    self.stopped.wait(0.02)

    def distinct_states(self, tables: list[str], since: int = 0) -> int:
        """How many states the tables' rows went through together, from the since-th state seen on."""
        kept = [tuple(state.get(table) for table in tables) for state in self.states[since:]]
        return len([state for number, state in enumerate(kept) if number == 0 or state != kept[number - 1]])

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=10)


class PlainReader(threading.Thread):
    """Reads the group's mirrors as they are, all four in one query, beside the runs."""

    def __init__(self, schema: str, total: int) -> None:
        super().__init__(daemon=True)
        self.sql = CHECK_SQL.format(opening=OPENING, **{name: f"{schema}.{name}" for name in TX_MIRRORS})
        self.total = total
        self.stopped = threading.Event()
        self.reads = self.violations = 0
        self.errors: list[str] = []
        # When each read that broke an invariant started and ended, for the failure's message.
        self.broken: list[str] = []

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                started = time.strftime("%H:%M:%S")
                if violations(thrift.rows(self.sql)[0], self.total) > 0:
                    self.violations += 1
                    self.broken.append(f"{started}-{time.strftime('%H:%M:%S')}")
                self.reads += 1
            except Exception as error:  # noqa: BLE001 - every error is a failure, reported by the caller
                self.errors.append(repr(error)[:300])
            self.stopped.wait(0.3)

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=60)


def test_a_group_publishes_each_run_in_one_catalog_transaction(cluster, tmp_path):
    """On the cluster's JDBC catalog a consistency group's commits (mirrors, offsets, runs, cut) wait
    in one catalog transaction that the cut publishes: the catalog rows of the group's mirrors change
    together, once per run, so plain reads see whole transactions too. Mirrors outside the group
    append to the same offsets table meanwhile, which the publish makes its appends again on top of.
    A group mirror's maintenance runs before its commits start to wait: the files it deletes are
    no longer read by the published state. A --full-refresh of the group builds each mirror aside
    and puts it in the mirror's place by commits the cut publishes: readers never see a mirror
    missing, empty or ahead of the others."""
    project = make_project(None, tmp_path, "cluster")
    project.landing_config(TX_KEYS)

    def write_models(maintained: str | None = None) -> None:
        for prefix, group in (("", GROUP_CONFIG), ("plain_", "")):
            for table in TX_MIRRORS:
                maintenance = "maintenance_max_snapshots=1, snapshot_retention_hours=0, " if group and table == maintained else ""
                project.write_model(f"{prefix}{table}", f"{group}{maintenance}unique_key='id', source_table='{SCHEMA_OF[table]}.{table}'",
                                    mirror_sql(table))

    write_models()
    mirrors = [prefix + table for prefix in ("", "plain_") for table in TX_MIRRORS]
    topics = TransactionTopics(8, OPENING, seed=35)
    delivery = SplitDelivery(topics)
    whole = {"total": topics.total, "unbalanced_accounts": 0, "broken_orders": 0}

    def run_wave(wave: int, selected: list[str], everything: bool = False) -> None:
        for topic, events in delivery.wave(0 if everything else 10, 0 if everything else 6, everything=everything).items():
            write(project.inbox / f"w{wave:02d}-{topic}.json", events)
        project.dbt("run", "--select", "raw_events", *selected)
        assert newest_state(project.query, project.schema, "", OPENING) == whole, wave

    # Makes the group's tables: their creation is not part of a transaction. The plain mirrors are
    # made in the run that compares them (each run of them is on the cluster's clock: 8-17 s a mirror).
    run_wave(1, TX_MIRRORS)
    rows, reader = CatalogRows(cluster, project.schema), PlainReader(project.schema, topics.total)
    rows.start()
    reader.start()
    run_wave(2, mirrors)
    time.sleep(0.2)
    # One run: the group's mirrors changed together, once (one state more than before it); the same
    # tables without a group went through states one mirror at a time: the check can fail.
    group_states = rows.distinct_states(TX_MIRRORS)
    plain_states = rows.distinct_states(["plain_" + table for table in TX_MIRRORS])
    assert newest_state(project.query, project.schema, "plain_", OPENING) != whole
    # A group mirror maintains in the last run (commits of its own, before the transaction); one is
    # enough to show it, each more costs its maintenance (6-15 s on the cluster).
    write_models(maintained="accounts")
    run_wave(3, TX_MIRRORS, everything=True)
    before_refresh = len(rows.states)
    project.dbt("run", "--select", *TX_MIRRORS, "--full-refresh")
    time.sleep(0.2)
    refresh_states = rows.distinct_states(TX_MIRRORS, since=before_refresh - 1)
    # One mirror rebuilt alone: no cut, its swap published at the run's end. The group read at its
    # latest cut still finds the mirror's snapshot of that cut (a rebuild in place lost it).
    project.dbt("run", "--select", "transfers", "--full-refresh")
    rows.stop()
    reader.stop()
    assert newest_state(project.query, project.schema, "", OPENING) == whole
    at_cut = check_at_latest_cut(project.query, project.schema, "bank", OPENING, on_databend=False)
    assert at_cut is not None and violations(at_cut, topics.total) == 0, at_cut
    log = project.dbt_log()
    print(f"catalog states in one run: group {group_states}, plain {plain_states}, group's --full-refresh {refresh_states}; "
          f"plain reads of the group {reader.reads} ({reader.violations} violations)")
    assert group_states <= 2 < plain_states
    assert refresh_states == 2, "the group's rebuilds took their mirrors' places together"
    assert log.count("published in one catalog transaction") == 4, "each run's cut published its group"
    assert log.count("'s catalog transaction is published;") == len(TX_MIRRORS) + 1
    assert "group bank's catalog transaction published without a cut" in log
    assert f"cdc_merge {project.schema}.accounts: maintaining (" in log
    assert reader.errors == [] and reader.reads >= 10 and reader.violations == 0, reader.broken
    # The rebuilds' tables, left for the mirrors' next run: dropped there, with their files.
    asides = f"show tables in {project.schema} like '*__cdc_rebuild*'"
    assert len(project.query(asides)) >= len(TX_MIRRORS)
    project.dbt("run", "--select", *TX_MIRRORS)
    assert project.query(asides) == [] and "left by a --full-refresh that took the mirror's place" in project.dbt_log()


def test_a_groups_unsent_toast_values_are_kept_and_filled_inside_its_catalog_transaction(cluster, tmp_path):
    """unsent_columns.sql on the cluster, in a group's catalog transaction: the entries table made in a
    run whose mirror commits wait, its rows and the fills read by the run's own session before the publish,
    each wave ending as on the embedded target (test_materialization.py); landing every file again changes nothing."""
    project = make_project(None, tmp_path, "cluster")
    project.landing_config({"public.docs": ["id"]})
    project.write_model("docs", f"{GROUP_CONFIG}unique_key='id', source_table='public.docs'", UNSENT_MODEL_COLUMNS)

    def mirrored() -> list[tuple]:
        return [tuple(row.values()) for row in project.query(f"select id, title, body from {project.schema}.docs order by id")]

    for number, (lines, rows) in enumerate(zip(UNSENT_WAVES, UNSENT_EXPECTED), start=1):
        (project.inbox / f"{number}.json").write_text("\n".join(lines) + "\n")
        project.dbt("run", "--select", "raw_events", "docs")
        assert mirrored() == rows, number
    for number, lines in enumerate(UNSENT_WAVES, start=1):
        (project.inbox / f"again-{number}.json").write_text("\n".join(lines) + "\n")
    project.dbt("run", "--select", "raw_events", "docs")
    assert mirrored() == UNSENT_EXPECTED[-1]
    log = project.dbt_log()
    assert log.count("published in one catalog transaction") == len(UNSENT_WAVES) + 1
    assert project.query(f"select count(*) as entries from {project.schema}.docs__cdc_unsent")[0]["entries"] > 0


def test_a_catalog_transaction_is_seen_only_by_its_sessions_until_published(cluster):
    """The Thrift server's catalog (CdcMergeJdbcCatalog): a session that joined a group's transaction
    sees its own commits, others see none until it is published, from any session; a table another
    process changed meanwhile fails the publish and nothing of it becomes visible, unless the
    transaction only appended to it; a transaction another run of the group took over refuses commits."""
    from pyhive import hive

    def session():
        return hive.connect(host=LOOPBACK, port=cluster.thrift_port, username="cdc_merge").cursor()

    def run(cursor, sql: str) -> list:
        cursor.execute(sql)
        return cursor.fetchall() if cursor.description and cursor.description[0][0] != "Result" else []

    def ids(cursor, table: str) -> list[int]:
        return [row[0] for row in run(cursor, f"select id from tx_check.{table} order by id")]

    def step(cursor, name: str, run_id: str) -> int:
        return run(cursor, f"call lake.system.snapshot_catalog_transaction_{name}('bank', '{run_id}')")[0][0]

    writer, reader, other_run = session(), session(), session()
    run(reader, "create namespace if not exists tx_check")
    for table in ("a", "b"):
        run(reader, f"create table tx_check.{table} (id bigint) using iceberg")

    assert step(writer, "join", "run-1") == 0
    run(writer, "insert into tx_check.a values (1)")
    run(writer, "insert into tx_check.b values (1)")
    run(writer, "insert into tx_check.a values (2)")
    assert (ids(writer, "a"), ids(writer, "b")) == ([1, 2], [1])
    assert (ids(reader, "a"), ids(reader, "b")) == ([], [])
    # Another process appends to a meanwhile: the transaction's appends are made again on top of it.
    run(reader, "insert into tx_check.a values (100)")
    assert step(reader, "publish", "run-1") == 2
    assert (ids(reader, "a"), ids(reader, "b")) == ([1, 2, 100], [1])
    assert step(reader, "publish", "run-1") == 0  # published once

    # A delete cannot be made again on top of another commit: nothing of the transaction is published.
    step(writer, "join", "run-2")
    run(writer, "delete from tx_check.a where id = 1")
    run(writer, "insert into tx_check.b values (2)")
    run(reader, "insert into tx_check.a values (101)")
    with pytest.raises(Exception, match="tx_check.a was committed by another process"):
        step(writer, "publish", "run-2")
    assert (ids(reader, "a"), ids(reader, "b")) == ([1, 2, 100, 101], [1])

    # A run that died left its transaction open: the group's next run discards it.
    step(writer, "join", "run-3")
    run(writer, "insert into tx_check.b values (3)")
    step(other_run, "join", "run-4")
    with pytest.raises(Exception, match="transaction of lake/bank for run run-3 is closed"):
        run(writer, "insert into tx_check.b values (4)")
    assert step(other_run, "publish", "run-4") == 0
    assert ids(reader, "b") == [1]
