"""A MariaDB table keyed on a YEAR column holding 0000: the key's text in a mirror is "0", which the
server reads as the two-digit year 2000 when a statement compares the column with it. cdc-verify's
ranges and a range read again (--repair, cdc-snapshot --from/--to) compare it as the year 0000, so
the check finds what differs and the repair brings it back instead of removing the row."""

from __future__ import annotations

from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_verify_mariadb_bit_keys import KeyedMirror


def test_a_table_keyed_on_years_with_0000_is_verified_and_repaired(mariadb, dbt_project, monkeypatch):  # noqa: F811
    table = KeyedMirror(mariadb, dbt_project, monkeypatch, "shop.seasons", "y", [
        "create database shop",
        "create table shop.seasons (y year primary key, n int)",
        "insert into shop.seasons values (0, 0), (1901, 1), (1999, 2), (2000, 3), (2026, 4), (2155, 5)"])
    assert table.verify() == 0, dbt_project.dbt_log()[-3000:]
    dbt_project.execute(f"update {table.mirror} set n = 99 where y in (0, 2000)")
    assert table.verify("--repair", "--state", str(table.state), "--repair-wait-seconds", "0") == 1
    log = dbt_project.dbt_log()
    assert 'key ["0"]: n' in log and 'key ["2000"]: n' in log, log[-3000:]
    assert table.capture().snapshot_rows > 0
    table.apply()
    mirrored = sorted((row["y"], row["n"]) for row in dbt_project.query(f"select y, n from {table.mirror}"))
    assert mirrored == [(0, 0), (1901, 1), (1999, 2), (2000, 3), (2026, 4), (2155, 5)]
    assert table.verify() == 0, dbt_project.dbt_log()[-3000:]
