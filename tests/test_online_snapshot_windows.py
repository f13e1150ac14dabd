"""Changes around an online snapshot's page window (docs/online_snapshots.md), on a real PostgreSQL
15, then the mirror compared with the source table. A change committed inside the window: the page
leaves out the changed key's row, so the stream's change alone must make the mirror's row (the
first two tests change a row of the second page after its rows were read, before its high
watermark). A commit in the log before the low watermark but visible only after the page's SELECT:
the page must not hold the row as it was before it."""

from __future__ import annotations

import threading
import time

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from test_capture_faults import postgres  # noqa: F401 - postgres is a fixture
from test_online_snapshots import execute, mirror_and_source_rows


def read_with_a_change_in_the_second_window(server, project, tmp_path, monkeypatch, change: str) -> None:
    from python_jobs.capture import postgres_pages

    read_page, pages_read = postgres_pages.read_page, []

    def changed_after_the_second_page(*args, **kwargs):
        page = read_page(*args, **kwargs)
        pages_read.append(page)
        if len(pages_read) == 2:  # between the page's SELECT and its high watermark
            execute(server, change)
        return page

    monkeypatch.setattr(postgres_pages, "read_page", changed_after_the_second_page)
    dsn = create_capture_user(server, ["shop"])
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot="windows", out=project.inbox,
                                            state=tmp_path / "capture-state.json", snapshot_mode="online", page_rows=5)
    capture_postgres.run(config)
    assert len(pages_read) > 2
    project.land({"shop.items": ["id"]})
    project.dbt("run", "--select", "items")


def test_an_update_in_a_window_that_leaves_a_toast_value_unsent_keeps_it(postgres, dbt_project, tmp_path, monkeypatch):
    """wal2json sends no out-of-line value an update left unchanged: the mirror of a first snapshot,
    which had no row for the key the page left out, held null."""
    execute(postgres, "create schema shop; create table shop.items (id int primary key, qty int, doc text);"
                      "alter table shop.items alter column doc set storage external;"  # stored out of line
                      "insert into shop.items select g, g, repeat(md5(g::text), 200) from generate_series(1, 20) g")
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'",
                            "{{ cdc_merge.cdc_columns({'id': 'int', 'qty': 'int', 'doc': 'string'}) }}, "
                            "{{ cdc_merge.cdc_metadata_columns() }}")
    read_with_a_change_in_the_second_window(postgres, dbt_project, tmp_path, monkeypatch,
                                            "update shop.items set qty = -1 where id = 7")
    mirrored, source = mirror_and_source_rows(dbt_project, postgres, "items", "shop.items", "id, qty, doc")
    assert ("7", "-1", "None") not in mirrored
    assert mirrored == source


def test_a_key_of_a_domain_type_changed_in_a_window_is_left_out_of_the_page(postgres, dbt_project, tmp_path, monkeypatch):
    """wal2json sends a domain's value as its text ('2026-01-01 07:00:00'), the page has its base
    type's ('2026-01-01T07:00:00'): the changed key was not found among the page's, and the page's
    row, read before the change, was written after it."""
    execute(postgres, "create schema shop; create domain shop.at as timestamp;"
                      "create table shop.items (id shop.at primary key, qty int);"
                      "insert into shop.items select timestamp '2026-01-01' + g * interval '1 hour', g "
                      "from generate_series(1, 20) g")
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'",
                            "{{ cdc_merge.cdc_columns({'id': 'timestamp', 'qty': 'int'}) }}, "
                            "{{ cdc_merge.cdc_metadata_columns() }}")
    read_with_a_change_in_the_second_window(postgres, dbt_project, tmp_path, monkeypatch,
                                            "update shop.items set qty = -1 where qty = 7")
    mirrored = sorted(row["qty"] for row in dbt_project.query(f"select qty from {dbt_project.schema}.items"))
    assert mirrored == sorted([-1, *range(1, 7), *range(8, 21)])


def test_a_commit_in_the_log_before_the_low_watermark_but_not_yet_visible_is_in_the_page(postgres, dbt_project, tmp_path,
                                                                                          monkeypatch):
    """A commit waiting for a synchronous standby is in the log (the stream carries it) before it is
    visible. One written before a page's low watermark and seen after its SELECT sat before the
    window, and the page's older row after it: the mirror kept qty 7 where the source has -1."""
    from python_jobs.capture import postgres_pages

    execute(postgres, "create schema shop; create table shop.items (id int primary key, code text, qty int);"
                      "insert into shop.items select g, 'c' || g, g from generate_series(1, 20) g")
    dsn = create_capture_user(postgres, ["shop"])
    # A standby that never answers; every session but the writer's commits without it.
    execute(postgres, "alter role postgres set synchronous_commit = local; alter role cdc set synchronous_commit = local")
    admin = postgres.connect()
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute("alter system set synchronous_standby_names = 'absent'")
        cursor.execute("select pg_reload_conf()")
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'",
                            "{{ cdc_merge.cdc_columns({'id': 'int', 'code': 'string', 'qty': 'int'}) }}, "
                            "{{ cdc_merge.cdc_metadata_columns() }}")

    def write_waiting_for_the_standby() -> None:
        writer = postgres.connect()
        with writer.cursor() as cursor:
            cursor.execute("set synchronous_commit = on; update shop.items set qty = -1 where id = 7")
        writer.commit()  # returns once its wait is cancelled
        writer.close()

    emit, lows = postgres_pages.emit_watermark, []

    def watermark(connection, page, mark):
        if mark == "low" and len(lows) == 1:  # before the second page's
            threading.Thread(target=write_waiting_for_the_standby, daemon=True).start()
            with admin.cursor() as cursor:
                for _ in range(200):
                    cursor.execute("select pid from pg_stat_activity where wait_event = 'SyncRep'")
                    waiting = cursor.fetchall()
                    if waiting:
                        break
                    time.sleep(0.02)
                assert waiting, "the writer's commit does not wait for the standby"
                # A second later the wait is cancelled: the commit becomes visible.
                threading.Timer(1, lambda: admin.cursor().execute("select pg_cancel_backend(%s)", waiting[0])).start()
        lows.extend([mark] if mark == "low" else [])
        emit(connection, page, mark)

    monkeypatch.setattr(postgres_pages, "emit_watermark", watermark)
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot="unseen", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json", snapshot_mode="online", page_rows=5)
    capture_postgres.run(config)
    time.sleep(1.5)
    capture_postgres.run(config)  # the commit, if the first run ended before it was visible
    dbt_project.land({"shop.items": ["id"]})
    dbt_project.dbt("run", "--select", "items")
    mirrored, source = mirror_and_source_rows(dbt_project, postgres, "items", "shop.items", "id, code, qty")
    assert ("7", "c7", "-1") in source
    assert mirrored == source
