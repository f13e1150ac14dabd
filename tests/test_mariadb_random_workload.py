"""A seeded random workload on a real MariaDB, differentially checked: several sessions change three
tables (a composite key; long text, blob and json; decimal, datetime(6), float, bit, enum and unsigned
columns) at once, on the same keys, in transactions that commit or roll back, with savepoints, key
updates, multi-row and multi-table statements, a TRUNCATE, ALTER TABLE ... ADD COLUMN ... DEFAULT and
a lossy ALTER TABLE ... MODIFY (datetime(6) made datetime(3), which the capture reads again online),
while cdc-capture-mysql follows the binlog and is killed (SIGKILL) and started again at random, a
key range is read again online (cdc-snapshot) and the mirrors are landed and applied at random
points. Then every mirror equals its source table row by row, and by cdc_verify; so do the current
versions of three histories (hard and soft deletes, one whose versions open only on changes of one
column), which take the columns added on the way in place
(docs/history.md, "Columns the model adds"), and whose data tests pass.

CDC_RANDOM_WORKLOAD_ROUNDS (default 3) sets how many rounds of faults and applies a seed runs;
CDC_RANDOM_WORKLOAD_SEEDS (e.g. 1-20 or 3,7) runs other seeds than the suite's two, on each engine of
CDC_RANDOM_WORKLOAD_ENGINES (tests/workload_seeds.py); CDC_RANDOM_WORKLOAD_MAINTAIN_CHANCE runs cdc_maintain
after applies, with the shortest retention, and at the end mirrors built anew from what it left of the
log equal their sources too; CDC_RANDOM_WORKLOAD_REBUILD_CHANCE rebuilds one mirror (or, without
maintenance, history) with --full-refresh after applies.

Why longer than 300 lines: the sessions' statements, the faults and the checks of one workload, read together."""

from __future__ import annotations

import base64
import json
import os
import random
import threading
import time
from decimal import Decimal

import pymysql
import pytest

from python_jobs import scaffold
from raw_history import raw_history
from workload_seeds import Maintenance, Rebuilds, history_tests, workload_cases, workload_project
from test_capture_faults import capture, mariadb  # noqa: F401 - mariadb is a fixture
from test_capture_mysql_swapped_column_names import captured
from test_online_snapshots_mariadb import execute

ROUNDS = int(os.environ.get("CDC_RANDOM_WORKLOAD_ROUNDS", "3"))
TABLES = {"shop.lines": ["order_id", "line_no"], "shop.docs": ["id"], "shop.nums": ["id"]}
# Histories of two tables ({model: (source table, deletes, other config)}), hard and soft deletes, one
# whose versions open only on changes of state (the other columns change in place): their current
# versions are the source's rows.
HISTORIES = {"nums_versions": ("shop.nums", "hard", ""), "lines_versions": ("shop.lines", "soft", ""),
             "nums_by_state": ("shop.nums", "hard", "        track_columns=['state'],\n")}
SCHEMA = (
    "use shop",
    "create table shop.lines (order_id int, line_no smallint, qty int not null, note varchar(20), "
    "primary key (order_id, line_no))",
    "create table shop.docs (id int primary key, body longtext, data blob, meta json)",
    "create table shop.nums (id int unsigned primary key, price decimal(12,3), at datetime(6), f float, "
    "flags bit(10), state enum('new','paid','gone'), big bigint unsigned, small tinyint unsigned)",
    "insert into shop.lines select seq div 4, seq mod 4, seq, concat('n', seq) from seq_4_to_23",
    "insert into shop.docs select seq, repeat('x', seq * 100), unhex(repeat('00ff', seq)), "
    "json_object('k', seq) from seq_1_to_5",
    "insert into shop.nums select seq, seq / 8, '2026-01-02 03:04:05.000006', seq / 4, seq, 'new', seq, seq "
    "from seq_1_to_5",
)


def values(chance: random.Random, table: str, key: int) -> tuple[str, tuple]:
    """An INSERT's column list and values for a row of table with key."""
    if table == "lines":
        note = chance.choice([None, "ü€", "a b"])
        return "(order_id, line_no, qty, note)", (key // 4, key % 4, chance.randint(-9, 99), note)
    if table == "docs":
        body = "".join(chance.choice("aé z\n'\\") for _ in range(chance.choice([0, 5, 300, 70000])))
        data = bytes(chance.randrange(256) for _ in range(chance.randint(0, 600)))
        return "(id, body, data, meta)", (key, body, data, json.dumps({"k": key, "v": [chance.random(), "ü"]}))
    return "(id, price, at, f, flags, state, big, small)", (
        key, Decimal(chance.randint(-10**8, 10**8)) / 1000,
        f"2026-{chance.randint(1, 12)}-03 23:59:58.{chance.randint(0, 999999):06d}",
        chance.randint(-4000, 4000) / 8, chance.randrange(1024), chance.choice(["new", "paid", "gone", None]),
        chance.choice([0, 2**64 - 1, 2**63, chance.randrange(2**64)]), chance.randrange(256))


KEYS = {"lines": "order_id = %s div 4 and line_no = %s mod 4", "docs": "id = %s", "nums": "id = %s"}


def statement(chance: random.Random) -> tuple[str, tuple]:
    table, key = chance.choice(["lines", "docs", "nums"]), chance.randint(4, 27)
    roll, where = chance.random(), KEYS[table]
    columns, row = values(chance, table, key)
    marks = ", ".join(["%s"] * len(row))
    if roll < 0.2:
        return f"insert ignore into shop.{table} {columns} values ({marks})", row
    if roll < 0.3:
        return f"replace into shop.{table} {columns} values ({marks})", row
    if roll < 0.4:
        change = {"lines": "qty = qty + 1, note = 'dup'", "docs": "body = concat(body, 'd'), data = null",
                  "nums": "price = price + 1, at = at + interval 1 microsecond, flags = flags ^ 1"}[table]
        return f"insert into shop.{table} {columns} values ({marks}) on duplicate key update {change}", row
    if roll < 0.55:
        change = {"lines": "qty = qty * 2 + 1", "docs": "body = left(body, 7), meta = json_set(meta, '$.u', 1)",
                  "nums": "f = f * 2, state = 'paid', big = 2 * (big div 3), small = small div 2"}[table]
        return f"update shop.{table} set {change} where {where}", (key, key)[: where.count("%s")]
    if roll < 0.68:  # the key itself moves
        other = chance.randint(4, 27)
        if table == "lines":
            return (f"update ignore shop.lines set order_id = %s div 4, line_no = %s mod 4 where {where}",
                    (other, other, key, key))
        return f"update ignore shop.{table} set id = %s where id = %s", (other, key)
    if roll < 0.8:
        return f"delete from shop.{table} where {where}", (key, key)[: where.count("%s")]
    if roll < 0.86:
        return ("update shop.lines set qty = qty - 1, note = left(concat(ifnull(note, ''), 'm'), 20) "
                "where order_id between %s and %s", (key // 4, key // 4 + 1))
    if roll < 0.9:
        return "delete from shop.lines where order_id = %s and line_no >= %s", (key // 4, chance.randint(0, 3))
    if roll < 0.95:
        return ("update shop.lines l join shop.nums n on n.id = l.order_id * 4 + l.line_no "
                "set l.qty = l.qty + 7, n.small = (n.small + 1) %% 256, n.price = -n.price where l.order_id = %s",
                (key // 4,))
    return ("delete l, d from shop.lines l join shop.docs d on d.id = l.order_id * 4 + l.line_no "
            "where l.order_id = %s", (key // 4,))


class Session(threading.Thread):
    """One connection's transactions: one to four statements, some in a savepoint rolled back to, then
    a commit (three in four) or a rollback; deadlocks and lock waits roll back and go on."""

    def __init__(self, server, seed: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.server, self.chance, self.stop, self.commits, self.error = server, random.Random(seed), stop, 0, None

    def run(self) -> None:
        connection = self.server.connect(database="shop")
        try:
            with connection.cursor() as cursor:
                cursor.execute("set session innodb_lock_wait_timeout = 1")
                while not self.stop.is_set():
                    self.transaction(connection, cursor)
        except Exception as error:  # noqa: BLE001 - reported by the test
            self.error = error
        finally:
            connection.close()

    def transaction(self, connection, cursor) -> None:
        chance = self.chance
        try:
            cursor.execute("begin")
            for number in range(chance.randint(1, 4)):
                savepoint = chance.random() < 0.15
                if savepoint:
                    cursor.execute(f"savepoint s{number}")
                for _ in range(chance.randint(1, 2)):
                    try:
                        cursor.execute(*statement(chance))
                    except pymysql.err.IntegrityError:
                        pass  # the statement alone is undone
                if savepoint and chance.random() < 0.7:
                    cursor.execute(f"rollback to savepoint s{number}")
                time.sleep(chance.uniform(0, 0.01))
            if chance.random() < 0.75:
                connection.commit()
                self.commits += 1
            else:
                connection.rollback()
        except pymysql.err.OperationalError as error:
            if error.args[0] not in (1205, 1213):  # lock wait timeout, deadlock
                raise
            connection.rollback()


def models_written(project, config) -> dict:
    """Each table's model as cdc-scaffold writes it from the catalog now (added columns too), and the
    histories' models; the source table of each model."""
    tables = scaffold.mysql_tables(config.host, config.port, config.user, config.password, list(TABLES))
    models = {}
    for table in tables:
        (project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))
        models[table.model_name] = table.qualified
        for name, (history_of, deletes, config) in HISTORIES.items():
            if history_of == table.qualified:
                (project.project_dir / "models" / "mirrors" / f"{name}.sql").write_text(scaffold.model_sql(table).replace(
                    "config(\n", f"config(\n        materialized='cdc_history',\n        deletes='{deletes}',\n{config}", 1))
                models[name] = table.qualified
    (project.project_dir / "models" / "mirrors" / "_histories.yml").write_text(
        history_tests({name: table for name, (table, _, _) in HISTORIES.items()}))
    return models


def apply(project, config, maintenance: Maintenance | None = None, rebuilds: Rebuilds | None = None) -> dict:
    models = models_written(project, config)
    summary = project.land(TABLES)
    assert summary.counts["rejected"] == 0 and "quarantined 0 lines" in summary.status(), summary.status()
    project.dbt("run", "--select", *models)
    if maintenance:
        maintenance.maybe(project, models)
    if rebuilds is not None:
        # Histories too, unless maintenance trims the log, from which a history is not built again (docs/history.md).
        rebuilds.maybe(project, [model for model in models if model not in HISTORIES or not maintenance])
    return models


def rendered(data_type: str, column: str, mirror: bool, databend: bool = False) -> str:
    """A column as both sides hold the same value exactly (the mirror's types: docs/type_mapping.md);
    databend: the mirror is on Databend, whose date_format takes MySQL's patterns."""
    if data_type == "float":
        return f"cast({column} as double)"
    if data_type == "bit":
        return column if mirror else f"cast({column} as unsigned)"
    if data_type == "blob":
        return column if mirror else f"replace(to_base64({column}), '\\n', '')"
    if data_type == "datetime":
        if mirror and databend:
            return f"to_string({column})"  # always six digits of the second's fraction
        return f"date_format({column}, " + ("'yyyy-MM-dd HH:mm:ss.SSSSSS')" if mirror else "'%Y-%m-%d %H:%i:%s.%f')")
    return column


def normal(value):
    return base64.b64encode(value).decode() if isinstance(value, bytes) else value


def assert_mirrors_equal(mariadb, project, models: dict) -> None:
    """Each mirror, and each history's current versions in its columns, equal to its source table."""
    connection = mariadb.connect()
    for model, qualified in models.items():
        history = model in HISTORIES
        with connection.cursor() as cursor:
            cursor.execute("select column_name, data_type from information_schema.columns where concat(table_schema, "
                           "'.', table_name) = %s order by ordinal_position", (qualified,))
            columns = cursor.fetchall()
            source_columns = ", ".join(rendered(kind, name, False) for name, kind in columns)
            cursor.execute(f"select {source_columns} from {qualified}")
            source = sorted((tuple(normal(value) for value in row) for row in cursor.fetchall()), key=repr)
        current = " where is_current and not coalesce(is_deleted, false)" if history else ""
        mirrored = sorted((tuple(normal(value) for value in row.values()) for row in project.query(
            f"select {', '.join(rendered(kind, name, True, project.on_databend) for name, kind in columns)} "
            f"from {project.schema}.{model}{current}")),
            key=repr)
        missing, extra = set(source) - set(mirrored), set(mirrored) - set(source)
        assert (len(source), missing, extra) == (len(mirrored), set(), set()), (
            f"{qualified}: only in the source {sorted(missing, key=repr)[:5]}, only in the mirror "
            f"{sorted(extra, key=repr)[:5]}\n"
            + raw_history(project, qualified, model, TABLES[qualified], [name for name, _ in columns], missing | extra))
    connection.close()


@pytest.mark.parametrize("seed, engine", workload_cases())
def test_a_random_concurrent_workload_is_mirrored_exactly(mariadb, request, spark, tmp_path, monkeypatch,  # noqa: F811
                                                          seed, engine):
    chance = random.Random(seed)
    dbt_project = workload_project(request, spark, tmp_path, engine)
    config = captured(mariadb, dbt_project, tmp_path, TABLES, *SCHEMA)  # the first snapshot
    monkeypatch.setenv("MYSQL_PWD", config.password)
    args = ["--port", str(mariadb.port), "--user", config.user, "--tables", ",".join(TABLES), "--out",
            str(dbt_project.inbox), "--state", str(config.state), "--snapshot", "online", "--snapshot-page-rows", "4",
            "--max-wait-seconds", "0.2"]
    stop = threading.Event()
    sessions = [Session(mariadb, seed * 100 + number, stop) for number in range(3)]
    for session in sessions:
        session.start()
    following = capture("mysql", *args, follow=True)
    once = {name: chance.randrange(ROUNDS) for name in ("truncate", "range", "alter", "apply", "retype")}
    maintenance, rebuilds = Maintenance(seed), Rebuilds(seed)
    try:
        for number in range(ROUNDS):
            time.sleep(chance.uniform(0.5, 2.0))
            following.kill()  # SIGKILL, anywhere in its work
            following.wait(timeout=30)
            following = capture("mysql", *args, follow=True)
            if number == once["range"] or chance.random() < 0.2:
                key, table = chance.randint(1, 6), chance.choice(["shop.docs", "shop.nums"])
                bounds = chance.choice([["--table", "shop.lines", "--from", f"{key},0", "--to", f"{key + 1},3"],
                                        ["--table", table],
                                        ["--table", table, "--from", str(key * 2), "--to", str(key * 4)]])
                ranged = capture("snapshot_requests", "--state", str(config.state), *bounds, "--wait-seconds", "0")
                assert ranged.returncode == 0, ranged.stderr
            if number == once["truncate"] or chance.random() < 0.1:
                execute(mariadb, f"truncate table shop.{chance.choice(['lines', 'docs', 'nums'])}")
            if number == once["alter"] or chance.random() < 0.1:
                execute(mariadb, f"alter table shop.nums add column tag{number} varchar(8) not null default 'tag', "
                        f"add column score{number} int default {number}",
                        f"alter table shop.{chance.choice(['docs', 'lines'])} add column n{number} decimal(5,2) "
                        "default 1.5")
            if number == once["retype"]:  # the server cuts every row's microseconds with no row event: read again
                execute(mariadb, "alter table shop.nums modify at datetime(3)")
            if number == once["apply"] or chance.random() < 0.5:
                apply(dbt_project, config, maintenance, rebuilds)
    finally:
        stop.set()
        for session in sessions:
            session.join(timeout=30)
        following.kill()
        following.wait(timeout=30)
    assert [session.error for session in sessions] == [None] * 3 and all(session.commits > 5 for session in sessions)
    assert rebuilds.chance == 0 or rebuilds.runs > 0, "no mirror rebuilt"
    for _ in range(5):  # the stream to its end, and the pages of a range read again
        finished = capture("mysql", *args)
        assert finished.returncode == 0, finished.stderr
        if not json.loads(config.state.read_text()).get("snapshots"):
            break
    assert capture("mysql", *args).returncode == 0
    models = apply(dbt_project, config)
    assert_mirrors_equal(mariadb, dbt_project, models)
    dbt_project.dbt("test", "--select", *HISTORIES)
    mirrors = [model for model in models if model not in HISTORIES]
    dbt_project.dbt("run-operation", "cdc_verify", "--args", json.dumps(
        {"source": {"mysql": f"{config.user}@127.0.0.1:{mariadb.port}"}, "select": mirrors}))
    reports = [line for line in dbt_project.dbt_log().splitlines() if " vs shop." in line][-len(mirrors):]
    assert len(reports) == len(mirrors) and all(": equal: " in report for report in reports), reports
    if maintenance:  # a last maintenance, mirrors built anew from the log it leaves, and a run after it
        maintenance.now(dbt_project, models)
        rebuilt = maintenance.rebuilt(dbt_project, mirrors)
        models = apply(dbt_project, config)
        assert_mirrors_equal(mariadb, dbt_project, {**models, **{copy: models[mirror] for copy, mirror in rebuilt.items()}})
