"""Changes inside the window of an online snapshot's first page (docs/online_snapshots.md), on a real
MariaDB, that change rows with no rows event in the binlog: the table is read again, and the mirror
equals the source table."""

from __future__ import annotations

import dataclasses

from python_jobs.capture import mysql as capture_mysql
from test_capture_faults import mariadb  # noqa: F401 - fixture
from test_capture_mysql_statements import assert_mirrors_equal_sources, execute
from test_mariadb_first_day import CASCADES, captured_with_signal_table


def test_a_cascade_inside_the_first_pages_window_has_the_table_read_again(mariadb, dbt_project, tmp_path, monkeypatch):
    """A parent deleted after the first page of shop.child read its rows, before the page's high
    watermark: the read asked for again was taken for one waiting unstarted, so the child rows the
    cascade deleted (ids 1 and 2), written with the page, stayed in the mirror."""
    from python_jobs.capture import mysql_pages

    connection = mariadb.connect(autocommit=True)
    execute(connection, "create database shop", *CASCADES)
    user, password, config = captured_with_signal_table(mariadb, connection, ["shop.child"], dbt_project, tmp_path)
    read_page, pages_read = mysql_pages.read_page, []

    def cascaded_in_the_first_window(*args, **kwargs):
        page = read_page(*args, **kwargs)
        pages_read.append(page)
        if len(pages_read) == 1:  # after the page's rows were read, before its high watermark
            execute(connection, "delete from shop.parent where id = 1")
        return page

    monkeypatch.setattr(mysql_pages, "read_page", cascaded_in_the_first_window)
    config = dataclasses.replace(config, snapshot_mode="online", page_rows=10)
    capture_mysql.run(config)
    capture_mysql.run(config)  # and any read it asked for after its last page
    assert [int(row["id"]) for row in pages_read[0].rows] == [1, 2, 3, 4]
    assert_mirrors_equal_sources(mariadb, connection, dbt_project, user, password, ["shop.child"])
    connection.close()
