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


class KeyedMirror:
    """A MariaDB table made by statements, captured, scaffolded as the user's mirror model and applied;
    capture() captures again, apply() lands and runs the model, verify(*options) runs cdc-verify on it."""

    def __init__(self, server, project, monkeypatch, table: str, key: str, statements: list[str],
                 verify_options: tuple[str, ...] = ()) -> None:
        execute(server, *statements, "create database cdc_merge", SIGNAL_TABLE_DDL.format(table=SIGNAL_TABLE))
        user, password = create_mariadb_capture_user(server, [table.split(".")[0]])
        execute(server, f"grant insert on {SIGNAL_TABLE} to {user}@'%'")
        monkeypatch.setenv("MYSQL_PWD", password)
        self.project, self.table, self.key = project, table, key
        self.state = project.work_dir / "state.json"
        self.config = capture_mysql.CaptureConfig(host="127.0.0.1", port=server.port, user=user, password=password,
                                                  tables=(table,), out=project.inbox, state=self.state)
        self.source = ["--mysql", f"{user}@127.0.0.1:{server.port}", *verify_options]
        self.capture()
        (scaffolded,) = scaffold.mysql_tables("127.0.0.1", server.port, user, password, [table])
        self.model = scaffolded.model_name
        self.mirror = f"{project.schema}.{self.model}"
        (project.project_dir / "models" / "mirrors" / f"{self.model}.sql").write_text(scaffold.model_sql(scaffolded))
        self.apply()

    def capture(self):
        return capture_mysql.run(self.config)

    def apply(self) -> None:
        assert self.project.land({self.table: [self.key]}).counts["rejected"] == 0
        self.project.dbt("run", "--select", self.model)

    def verify(self, *options: str) -> int:
        return verify_cli.main(["--project-dir", str(self.project.project_dir), "--profiles-dir", str(PROFILES),
                                "--target", self.project.target, "--select", self.model, *self.source, *options])


def test_a_table_keyed_on_bits_is_verified_by_ranges_and_repaired(mariadb, dbt_project, monkeypatch):  # noqa: F811
    table = KeyedMirror(mariadb, dbt_project, monkeypatch, "shop.flags", "k", [
        "create database shop", "use shop",
        "create table shop.flags (k bit(64) primary key, n int)",
        "insert into shop.flags select seq * 72057594037927936 + seq, seq from seq_1_to_255",
        "insert into shop.flags values (b'0', 0), (b'1', -1), (b'" + "1" * 64 + "', -2)"])
    assert table.verify() == 0, dbt_project.dbt_log()[-3000:]
    assert "every row" in dbt_project.dbt_log()
    high = 200 * 72057594037927936 + 200  # its first byte 0xc8
    dbt_project.execute(f"delete from {table.mirror} where k = {high}")
    dbt_project.execute(f"update {table.mirror} set n = 99 where k = 1")
    assert table.verify("--repair", "--state", str(table.state), "--repair-wait-seconds", "0") == 1
    log = dbt_project.dbt_log()
    assert f'missing from the mirror: key ["{high}"]' in log and 'key ["1"]: n' in log, log[-3000:]
    assert table.capture().snapshot_rows > 0
    table.apply()
    assert table.verify() == 0, dbt_project.dbt_log()[-3000:]


@pytest.fixture
def databend_project(spark, tmp_path, databend_url):
    return make_project(spark, tmp_path, "databend_local")


def test_a_bigint_unsigned_key_on_databend_is_ranged_by_its_exact_numbers_and_repaired(mariadb, databend_project, monkeypatch):  # noqa: F811
    """The mirror's decimal(20,0) key sampled on Databend as its number, not as a double: 2 was the bound
    '2.0', which the capture refused ("invalid literal for int()"), and 18446744073709551614 was 2**64."""
    project = databend_project
    table = KeyedMirror(mariadb, project, monkeypatch, "shop.big", "id", [
        "create database shop", "use shop",
        "create table shop.big (id bigint unsigned primary key, n int)",
        "insert into shop.big select seq, seq from seq_1_to_60",
        "insert into shop.big values (18446744073709551614, -1), (18446744073709551615, -2), (9223372036854775808, -3)"],
        verify_options=("--segments", "4", "--leaf-rows", "8"))
    assert table.verify() == 0, project.dbt_log()[-3000:]
    project.execute(f"delete from {table.mirror} where id in (3, 18446744073709551614)")
    project.execute(f"update {table.mirror} set n = 99 where id = 18446744073709551615")
    assert table.verify("--repair", "--state", str(table.state), "--repair-wait-seconds", "0") == 1
    state = table.state
    requests = [json.loads(path.read_text()) for path in sorted(state.parent.glob(state.name + ".requests/*.json"))]
    bounds = [text for request in requests for side in ("from", "to") for text in request.get(side) or ()]
    assert bounds and all(text.isdigit() for text in bounds), requests
    assert table.capture().snapshot_rows > 0
    table.apply()
    assert table.verify() == 0, project.dbt_log()[-3000:]
