"""The idle check (macros/materializations/cdc_merge/idle.sql): a mirror with nothing new since
its offset costs no statement of its own in dbt's embedded session and a few small ones on Databend
(as through a Thrift server: tests/test_cluster.py, test_fixtures.py); a mirror that is missing,
full-refreshed, whose model SQL changed or whose maintenance threshold is crossed still takes the
full path."""

from __future__ import annotations

import re
import uuid

import pytest
from dbt.adapters.cdc_spark.raw_ranges import RANGES

from python_jobs.demo.generate import KEYS, Wave, build_waves, debezium_line, write_wave
from harness.mirror_project import make_project
from test_materialization import record_statements
from test_oracle import SHOP_MODELS, assert_mirrors_equal_replay

# Per invocation, whatever the number of idle mirrors: the offsets of all mirrors, and one
# cdc_merge_runs INSERT (with its create-if-missing). The raw table's current snapshot and the
# mirrors' files and snapshots come from Iceberg's metadata, without a statement.
IDLE_INVOCATION_STATEMENTS = 3
# On Databend, per invocation, whatever the number of idle mirrors (cdc_databend/mirror_facts.py):
# system.tables, the fuse_snapshot of every mirror and the raw table, the offsets of all mirrors,
# and one cdc_merge_runs INSERT (with its create-if-missing).
DATABEND_IDLE_INVOCATION_STATEMENTS = 5


def own_statements(statements: list[str]) -> list[str]:
    """The statements of the cdc_merge runs, without dbt's listing of relations for its cache."""
    return [sql for sql in statements if not sql.startswith(("show ", "select current_catalog()", "set spark.sql.catalog."))]


def runs_rows(project) -> list[dict]:
    return project.query(
        f"select target_table, invocation_id, chunks, events_read, maintenance, lines_quarantined, run_seconds "
        f"from {project.schema}.cdc_merge_runs order by finished_at, target_table")


def applied_once(project, waves: int = 2):
    """The three shop mirrors, applied once from the first of waves landed (project.waves)."""
    _, waves = build_waves(3, events=400, waves=waves, connector="postgresql", snapshot_rows=20)
    write_wave(waves[0], project.inbox)
    project.land(KEYS)
    project.dbt("run", "--select", *SHOP_MODELS)
    project.waves = waves
    return project


@pytest.fixture
def shop(dbt_project):
    return applied_once(dbt_project)


@pytest.fixture
def databend_shop(spark, tmp_path, databend_url):
    return applied_once(make_project(spark, tmp_path, "databend_local"))


def statements_per_model(log: str) -> dict[str, int]:
    """How many statements dbt logged for each model ("On model.<project>.<name>: <sql>", not its "Close")."""
    counts: dict[str, int] = {}
    for name in re.findall(r"On model\.\w+\.(\w+): (?!Close\b)", log):
        counts[name] = counts.get(name, 0) + 1
    return counts


def test_an_idle_run_costs_no_statement_per_mirror_and_still_records_a_run_each(shop, monkeypatch):
    project = shop
    before = runs_rows(project)
    versions = {model: project.table_version(f"{project.schema}.{model}") for model in SHOP_MODELS}
    with monkeypatch.context() as patch:
        statements = record_statements(patch)
        result = project.dbt("run", "--select", *SHOP_MODELS)
    own = own_statements(statements)
    assert len(own) <= IDLE_INVOCATION_STATEMENTS, own
    assert not [sql for sql in own if any(f"{project.schema}.{model} " in sql + " " for model in SHOP_MODELS)], own
    assert [str(node.status) for node in result.result.results] == ["success"] * 3
    assert {model: project.table_version(f"{project.schema}.{model}") for model in SHOP_MODELS} == versions

    after = runs_rows(project)
    idle = [row for row in after if row not in before]
    assert sorted(row["target_table"] for row in idle) == sorted(f"{project.schema}.{model}" for model in SHOP_MODELS)
    assert len({row["invocation_id"] for row in idle}) == 1
    assert all(row["chunks"] == 0 and row["events_read"] == 0 and row["maintenance"] == "" for row in idle)
    assert all(row["lines_quarantined"] is not None and row["run_seconds"] >= 0 for row in idle)

    # New events: every mirror takes the full path again and applies them, and the three mirrors,
    # standing at one offset, read the new raw range from the raw table's files once between them.
    write_wave(project.waves[1], project.inbox)
    project.land(KEYS)
    reads = len(RANGES.reads)
    with monkeypatch.context() as patch:
        statements = record_statements(patch)
        project.dbt("run", "--select", *SHOP_MODELS)
    # Its own batch view and classification each.
    own = own_statements(statements)
    assert all([sql for sql in own if sql.startswith(f"create or replace temporary view {model}__cdc_batch ")] for model in SHOP_MODELS), own
    assert all([sql for sql in own if sql.startswith(f"checkpoint {model}__cdc_changes as ")] for model in SHOP_MODELS), own
    assert len(RANGES.reads) - reads == 1, RANGES.reads[reads:]
    assert_mirrors_equal_replay(project, project.waves[0].delivered + project.waves[1].delivered, "hard")


def test_a_mirror_whose_source_added_nothing_writes_its_offset_only(shop, monkeypatch):
    """A quiet source (python_jobs/apply/chunk_plan.py quiet_snapshots): new raw snapshots, none of
    them with the table's events. Its mirror runs no statement of its own and writes nothing to the
    mirror (idle.sql); its offset moves on; with a changed model it takes the full path but reads no
    raw event (apply_chunk.sql); and the table's events that land later apply as ever."""
    project = shop
    orders, quiet_table = f"{project.schema}.shop_orders", "shop.orders"
    others = [event for event in project.waves[1].delivered if event.table != quiet_table]
    held = [event for event in project.waves[1].delivered if event.table == quiet_table]
    assert others and held

    def land(number, events):
        write_wave(Wave(number, [[debezium_line(event, "postgresql", False) for event in events]], events), project.inbox)
        project.land(KEYS)

    def orders_statements(*select):
        with monkeypatch.context() as patch:
            statements = record_statements(patch)
            project.dbt("run", "--select", *select)
        own = own_statements(statements)
        return own, [sql for sql in own if "shop_orders" in sql]

    def newest_offset():
        (row,) = project.query(f"select offset_snapshot from {project.schema}.cdc_merge_offsets "
                               f"where target_table = '{orders}' order by offset_ordinal desc limit 1")
        return str(row["offset_snapshot"])

    land(11, others[: len(others) // 3])
    land(12, others[len(others) // 3: 2 * len(others) // 3])
    version = project.table_version(orders)
    own, of_orders = orders_statements(*SHOP_MODELS)
    assert not of_orders, of_orders
    assert [sql for sql in own if sql.startswith("checkpoint shop_customers__cdc_changes as ")], own
    assert project.table_version(orders) == version
    assert newest_offset() == str(project.table_version(f"{project.raw_schema}.raw_events"))
    (run,) = project.query(f"select chunks, events_read from {project.schema}.cdc_merge_runs "
                           f"where target_table = '{orders}' order by finished_at desc limit 1")
    assert (run["chunks"], run["events_read"]) == (0, 0)

    # A changed model takes the full path: its columns are checked from an empty batch, no raw event is read.
    land(13, others[2 * len(others) // 3:])
    path = project.project_dir / "models" / "mirrors" / "shop_orders.sql"
    path.write_text(path.read_text().replace("select * from final", "select final.* from final"))
    _, of_orders = orders_statements(*SHOP_MODELS)
    assert [sql for sql in of_orders if sql.startswith("alter table ")], of_orders
    assert not [sql for sql in of_orders if "shop_orders__cdc_raw_changes" in sql or "shop_orders__cdc_changes" in sql], of_orders
    assert newest_offset() == str(project.table_version(f"{project.raw_schema}.raw_events"))
    assert_mirrors_equal_replay(project, project.waves[0].delivered + others, "hard")

    land(14, held)
    project.dbt("run", "--select", *SHOP_MODELS)
    assert_mirrors_equal_replay(project, project.waves[0].delivered + project.waves[1].delivered, "hard")


def test_a_changed_model_a_full_refresh_and_a_crossed_threshold_take_the_full_path(shop, monkeypatch):
    project = shop
    orders = f"{project.schema}.shop_orders"

    def statements_of(*args, expect_success=True):
        with monkeypatch.context() as patch:
            statements = record_statements(patch)
            result = project.dbt("run", "--select", *args, expect_success=expect_success)
        return own_statements(statements), result

    # A changed model: its columns are checked again, and the mirror gets the new one (on_schema_change).
    path = project.project_dir / "models" / "mirrors" / "shop_orders.sql"
    original = path.read_text()
    path.write_text(original.replace("'status': 'string',", "'status': 'string',\n            'note': 'string',"))
    own, result = statements_of("shop_orders")
    assert len(own) > IDLE_INVOCATION_STATEMENTS, own
    assert "note" in project.spark.table(orders).columns
    path.write_text(original.replace("select * from final", "select final.* from final"))
    own, _ = statements_of("shop_orders")
    assert [sql for sql in own if sql.startswith(f"alter table {orders} set tblproperties")], own
    own, _ = statements_of("shop_orders")
    assert len(own) <= IDLE_INVOCATION_STATEMENTS, own

    # A full refresh rebuilds from the whole log.
    own, _ = statements_of("shop_orders", "--full-refresh")
    assert [sql for sql in own if sql.startswith(f"create table {orders}")], own
    assert_mirrors_equal_replay(project, project.waves[0].delivered, "hard")

    # A crossed maintenance threshold (every snapshot expirable and older than 0 hours) maintains the mirror.
    path.write_text(path.read_text().replace(
        "    config(\n", "    config(\n        maintenance_max_age_hours=0,\n        snapshot_retention_hours=0,\n", 1))
    own, _ = statements_of("shop_orders")
    assert len(own) > IDLE_INVOCATION_STATEMENTS
    (last,) = project.query(
        f"select maintenance from {project.schema}.cdc_merge_runs where target_table = '{orders}' "
        "order by finished_at desc limit 1")
    assert last["maintenance"] == "maintained"

    # A missing mirror is rebuilt.
    project.spark.sql(f"drop table {orders}")
    project.dbt("run", "--select", "shop_orders")
    assert_mirrors_equal_replay(project, project.waves[0].delivered, "hard")


def test_an_idle_run_on_databend_costs_no_statement_per_mirror_and_writes_nothing_to_it(databend_shop):
    project = databend_shop
    before = runs_rows(project)
    versions = {model: project.table_version(f"{project.schema}.{model}") for model in SHOP_MODELS}
    logged = len(project.dbt_log())
    project.dbt("run", "--select", *SHOP_MODELS)
    log = project.dbt_log()[logged:]
    assert log.count(": nothing new (offset = current raw snapshot") == 3, log[-3000:]
    counts = statements_per_model(log)
    # The first mirror reads the facts of all; the last to finish writes the runs rows of all.
    assert sum(counts.values()) <= DATABEND_IDLE_INVOCATION_STATEMENTS, counts
    assert sum(1 for model in SHOP_MODELS if counts.get(model, 0)) <= 2, counts
    assert {model: project.table_version(f"{project.schema}.{model}") for model in SHOP_MODELS} == versions
    idle = [row for row in runs_rows(project) if row not in before]
    assert sorted(row["target_table"] for row in idle) == sorted(f"{project.schema}.{model}" for model in SHOP_MODELS)
    assert all(row["chunks"] == 0 and row["events_read"] == 0 for row in idle)

    # New events: every mirror applies them.
    write_wave(project.waves[1], project.inbox)
    project.land(KEYS)
    logged = len(project.dbt_log())
    project.dbt("run", "--select", *SHOP_MODELS)
    assert "nothing new" not in project.dbt_log()[logged:]
    assert_mirrors_equal_replay(project, project.waves[0].delivered + project.waves[1].delivered, "hard")

    # A changed model takes the full path: the mirror gets the new column without new events.
    path = project.project_dir / "models" / "mirrors" / "shop_orders.sql"
    path.write_text(path.read_text().replace("'status': 'string',", "'status': 'string',\n            'note': 'string',"))
    logged = len(project.dbt_log())
    project.dbt("run", "--select", "shop_orders")
    assert "nothing new" not in project.dbt_log()[logged:]
    assert "note" in project.query(f"select * from {project.schema}.shop_orders limit 1")[0]
    logged = len(project.dbt_log())
    project.dbt("run", "--select", "shop_orders")
    assert "nothing new" in project.dbt_log()[logged:]


def test_a_mirror_left_half_created_by_a_killed_process_is_rebuilt_by_the_next_run(dbt_project, warehouse):
    """A process killed inside a Hadoop catalog's CREATE leaves the table's directory with an
    uncommitted metadata file and no version: SHOW TABLES lists it, nothing can load it. The next
    run must rebuild that mirror from the start of the log, not fail on it."""
    project = applied_once(dbt_project)
    # As a new process finds it: nothing of the table kept loaded by this session's catalog.
    project.spark.sql(f"refresh table {project.schema}.shop_orders")
    metadata = warehouse / project.schema / "shop_orders" / "metadata"
    for path in metadata.iterdir():
        if path.name == "version-hint.text" or path.name.startswith(("v", ".v")):
            path.unlink() if path.name != "v1.metadata.json" else path.rename(metadata / f"{uuid.uuid4()}.metadata.json")
    assert "shop_orders" in [row["tableName"] for row in project.query(f"show tables in {project.schema}")]

    project.dbt("run", "--select", *SHOP_MODELS)
    assert "shop_orders: listed by the catalog but without a committed version" in project.dbt_log()
    assert_mirrors_equal_replay(project, project.waves[0].delivered, "hard")
