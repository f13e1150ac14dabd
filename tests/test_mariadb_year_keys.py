"""A MariaDB table keyed on a YEAR column holding 0000: the key's text in a mirror is "0", which the
server reads as the two-digit year 2000 when a statement compares the column with it. cdc-verify's
ranges and a range read again (--repair, cdc-snapshot --from/--to) compare it as the year 0000, so
the check finds what differs and the repair brings it back instead of removing the row."""

from __future__ import annotations

from harness.mariadb_server import create_mariadb_capture_user
from python_jobs import scaffold
from python_jobs.capture import mysql as capture_mysql
from python_jobs.capture.mysql_pages import SIGNAL_TABLE, SIGNAL_TABLE_DDL
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_online_snapshots_mariadb import execute
from test_verify_mariadb_bit_keys import PROFILES, verify_cli


def test_a_table_keyed_on_years_with_0000_is_verified_and_repaired(mariadb, dbt_project, monkeypatch):
    execute(mariadb, "create database shop",
            "create table shop.seasons (y year primary key, n int)",
            "insert into shop.seasons values (0, 0), (1901, 1), (1999, 2), (2000, 3), (2026, 4), (2155, 5)",
            "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
    user, password = create_mariadb_capture_user(mariadb, ["shop"])
    execute(mariadb, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
    monkeypatch.setenv("MYSQL_PWD", password)
    state = dbt_project.work_dir / "state.json"
    config = capture_mysql.CaptureConfig(host="127.0.0.1", port=mariadb.port, user=user, password=password,
                                         tables=("shop.seasons",), out=dbt_project.inbox, state=state)
    capture_mysql.run(config)
    (table,) = scaffold.mysql_tables("127.0.0.1", mariadb.port, user, password, ["shop.seasons"])
    (dbt_project.project_dir / "models" / "mirrors" / f"{table.model_name}.sql").write_text(scaffold.model_sql(table))

    def apply() -> None:
        assert dbt_project.land({"shop.seasons": ["y"]}).counts["rejected"] == 0
        dbt_project.dbt("run", "--select", table.model_name)

    def verify(*options: str) -> int:
        return verify_cli.main(["--project-dir", str(dbt_project.project_dir), "--profiles-dir", str(PROFILES),
                                "--target", dbt_project.target, "--select", table.model_name,
                                "--mysql", f"{user}@127.0.0.1:{mariadb.port}", *options])

    apply()
    assert verify() == 0, dbt_project.dbt_log()[-3000:]
    dbt_project.execute(f"update {dbt_project.schema}.{table.model_name} set n = 99 where y in (0, 2000)")
    assert verify("--repair", "--state", str(state)) == 1
    log = dbt_project.dbt_log()
    assert 'key ["0"]: n' in log and 'key ["2000"]: n' in log, log[-3000:]
    assert capture_mysql.run(config).snapshot_rows > 0
    apply()
    mirrored = sorted((row["y"], row["n"]) for row in dbt_project.query(
        f"select y, n from {dbt_project.schema}.{table.model_name}"))
    assert mirrored == [(0, 0), (1901, 1), (1999, 2), (2000, 3), (2026, 4), (2155, 5)]
    assert verify() == 0, dbt_project.dbt_log()[-3000:]
