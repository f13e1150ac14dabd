"""cdc-verify of a MariaDB table keyed on a BIT column: its mirror holds each key as its number, and
the source's keys are sampled as those numbers too (not as the column's bytes, which are no text:
b'10000000' is the byte 0x80), so the check ranges both sides alike, finds each row that differs,
and --repair reads its range again. A bigint unsigned key (a decimal(20,0) mirror key) is ranged by
its exact numbers on Databend too."""

from __future__ import annotations

import json

import pytest

from harness.mariadb_server import create_mariadb_capture_user
from harness.mirror_project import make_project
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL
from python_jobs.verify import cli as verify_cli
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_online_snapshots_mariadb import execute

PROFILES = verify_cli.Path(__file__).resolve().parent.parent / "profiles"


def test_a_table_keyed_on_bits_is_verified_by_ranges_and_repaired(mariadb, dbt_project, monkeypatch):
    execute(mariadb, "create database shop", "use shop",
            "create table shop.flags (k bit(64) primary key, n int)",
            "insert into shop.flags select seq * 72057594037927936 + seq, seq from seq_1_to_255",
            "insert into shop.flags values (b'0', 0), (b'1', -1), (b'" + "1" * 64 + "', -2)",
            "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    execute(mariadb, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    monkeypatch.setenv("MYSQL_PWD", password)
    state = dbt_project.work_dir / "state.json"
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.flags",), out=dbt_project.inbox, state=state)
    capture_mysql.run(config)
    (table,) = scaffold.mysql_tables("127.0.0.1", mariadb.port, user, password, ["shop.flags"])
    (dbt_project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))

    def apply() -> None:
        assert dbt_project.land({"shop.flags": ["k"]}).counts["rejected"] == 0
        dbt_project.dbt("run", "--select", table.model_name)

    def verify(*options: str) -> int:
        return verify_cli.main(["--project-dir", str(dbt_project.project_dir), "--profiles-dir", str(PROFILES),
                                "--target", dbt_project.target, "--select", table.model_name,
                                "--mysql", f"{user}@127.0.0.1:{mariadb.port}", *options])

    apply()
    assert verify() == 0, dbt_project.dbt_log()[-3000:]
    assert "every row" in dbt_project.dbt_log()
    high = 200 * 72057594037927936 + 200  # its first byte 0xc8
    dbt_project.execute(f"delete from {dbt_project.schema}.{table.model_name} where k = {high}")
    dbt_project.execute(f"update {dbt_project.schema}.{table.model_name} set n = 99 where k = 1")
    assert verify("--repair", "--state", str(state)) == 1
    log = dbt_project.dbt_log()
    assert f'missing from the mirror: key ["{high}"]' in log and 'key ["1"]: n' in log, log[-3000:]
    assert capture_mysql.run(config).snapshot_rows > 0
    apply()
    assert verify() == 0, dbt_project.dbt_log()[-3000:]


@pytest.fixture
def databend_project(spark, tmp_path, databend_url):
    return make_project(spark, tmp_path, "databend_local")


def test_a_bigint_unsigned_key_on_databend_is_ranged_by_its_exact_numbers_and_repaired(mariadb, databend_project, monkeypatch):
    """The mirror's decimal(20,0) key sampled on Databend as its number, not as a double: 2 was the bound
    '2.0', which the capture refused ("invalid literal for int()"), and 18446744073709551614 was 2**64."""
    project = databend_project
    execute(mariadb, "create database shop", "use shop",
            "create table shop.big (id bigint unsigned primary key, n int)",
            "insert into shop.big select seq, seq from seq_1_to_60",
            "insert into shop.big values (18446744073709551614, -1), (18446744073709551615, -2), (9223372036854775808, -3)",
            "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    execute(mariadb, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    monkeypatch.setenv("MYSQL_PWD", password)
    state = project.work_dir / "state.json"
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.big",), out=project.inbox, state=state)
    capture_mysql.run(config)
    (table,) = scaffold.mysql_tables("127.0.0.1", mariadb.port, user, password, ["shop.big"])
    (project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))

    def apply() -> None:
        assert project.land({"shop.big": ["id"]}).counts["rejected"] == 0
        project.dbt("run", "--select", table.model_name)

    def verify(*options: str) -> int:
        return verify_cli.main(["--project-dir", str(project.project_dir), "--profiles-dir", str(PROFILES),
                                "--target", project.target, "--select", table.model_name, "--segments", "4",
                                "--leaf-rows", "8", "--mysql", f"{user}@127.0.0.1:{mariadb.port}", *options])

    apply()
    assert verify() == 0, project.dbt_log()[-3000:]
    mirror = f"{project.schema}.{table.model_name}"
    project.execute(f"delete from {mirror} where id in (3, 18446744073709551614)")
    project.execute(f"update {mirror} set n = 99 where id = 18446744073709551615")
    assert verify("--repair", "--state", str(state)) == 1
    requests = [json.loads(path.read_text()) for path in sorted(state.parent.glob(state.name + ".requests/*.json"))]
    bounds = [text for request in requests for side in ("from", "to") for text in request.get(side) or ()]
    assert bounds and all(text.isdigit() for text in bounds), requests
    assert capture_mysql.run(config).snapshot_rows > 0
    apply()
    assert verify() == 0, project.dbt_log()[-3000:]
