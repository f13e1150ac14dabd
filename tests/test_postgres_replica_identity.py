"""Source tables whose changes the server would log without their old primary key, with one key
held by two rows, or under other tables' names (a table others INHERIT from), and those whose rows
the capture's user reads only in part (ROW LEVEL SECURITY)
(python_jobs/capture/postgres_columns.py identity_problem): the capture, as the
least-privileged user the docs prescribe, refuses them before it makes its slot, saying what to
change (and cdc-scaffold writes them no model), and stops before its next file when a table becomes one, or when an ALTER TABLE changes its
primary key. Under REPLICA IDENTITY DEFAULT, a
bulk key change of rows whose large values it did not change reaches the mirror whole, and so do
updates that left them unchanged, decoded after a column of their table was dropped."""

from __future__ import annotations

import time

import pytest

from harness.postgres_server import create_capture_user
from python_jobs import scaffold
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture.output import CaptureError
from test_capture_postgres import postgres  # noqa: F401 (a fixture)

SETUP = """
create schema shop;
create table shop.parted (id int primary key, v text) partition by range (id);
create table shop.parted_low partition of shop.parted for values from (0) to (100);
create table shop.parted_high partition of shop.parted for values from (100) to (200);
alter table shop.parted_high replica identity nothing;
create table shop.nothing (id int primary key, v text);
alter table shop.nothing replica identity nothing;
create table shop.deferred (id int primary key deferrable initially deferred, v text);
create table shop.by_code (id int primary key, code text not null, v text);
create unique index by_code_code on shop.by_code (code);
alter table shop.by_code replica identity using index by_code_code;
create table shop.by_key_and_code (id int primary key, code text not null, v text);
create unique index by_key_and_code_index on shop.by_key_and_code (code, id);
alter table shop.by_key_and_code replica identity using index by_key_and_code_index;
create table shop.full_key (id int primary key deferrable initially deferred, v text);
alter table shop.full_key replica identity full;
insert into shop.by_key_and_code select n, 'c' || n, 'v' || n from generate_series(1, 3) as n;
create table shop.inherited (id int primary key, v text);
create table shop.inherited_2025 (primary key (id)) inherits (shop.inherited);
create table shop.tenants (id int primary key, tenant text);
alter table shop.tenants enable row level security;
"""
REFUSED = {
    # A partitioned table's changes are logged by its partitions' identities.
    "shop.parted": "table shop.parted_high has REPLICA IDENTITY NOTHING",
    "shop.nothing": "run: alter table shop.nothing replica identity default",
    "shop.deferred": "the primary key of table shop.deferred is DEFERRABLE.*recreate the key without DEFERRABLE",
    # Logged in full, the old keys are there; but `update ... set id = id + 1` logs key 4's creation
    # (row 3's new key) before its deletion (row 4's old key).
    "shop.full_key": "the primary key of table shop.full_key is DEFERRABLE",
    "shop.by_code": "REPLICA IDENTITY is an index without every primary key column",
    # A read of it shows the child's rows, whose changes the log names by the child.
    "shop.inherited": "table shop.inherited is inherited by shop.inherited_2025 .INHERITS.",
    # Its reads would show the capture's user no row (no policy), the log every row's changes.
    "shop.tenants": "table shop.tenants has ROW LEVEL SECURITY, which shows the capture's user cdc.*alter role cdc bypassrls",
}


def config_for(dsn: str, table: str, tmp_path, slot: str) -> capture_postgres.CaptureConfig:
    return capture_postgres.CaptureConfig(dsn=dsn, tables=(table,), slot=slot, out=tmp_path / "inbox" / slot,
                                          state=tmp_path / f"{slot}.json")


def slots(connection) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("select slot_name from pg_replication_slots order by 1")
        return [row[0] for row in cursor.fetchall()]


def test_tables_logged_without_their_old_key_are_refused_before_any_slot(postgres, tmp_path):
    connection = postgres.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute(SETUP)
    dsn = create_capture_user(postgres, ["shop"])
    for table, message in REFUSED.items():
        with pytest.raises(CaptureError, match=message):
            capture_postgres.run(config_for(dsn, table, tmp_path, "refused"))
        # cdc-scaffold (and cdc-init) write no model for it, in the same words; a partitioned table's
        # partitions are the capture's to check.
        if table != "shop.parted":
            with pytest.raises(scaffold.ScaffoldError, match=message):
                scaffold.postgres_tables(dsn, [table])
    assert slots(connection) == []
    assert [table.name for table in scaffold.postgres_tables(dsn, ["shop.by_key_and_code"])] == ["by_key_and_code"]

    # An identity index that holds the key is taken; set to NOTHING later, the capture stops before
    # its next file, and the slot keeps the changes it did not write.
    config = config_for(dsn, "shop.by_key_and_code", tmp_path, "taken")
    capture_postgres.run(config)
    written = sorted(config.out.glob("*.json"))
    with connection.cursor() as cursor:
        cursor.execute("alter table shop.by_key_and_code replica identity nothing")
        cursor.execute("update shop.by_key_and_code set v = 'changed' where id = 1")
    with pytest.raises(CaptureError, match="REPLICA IDENTITY NOTHING"):
        capture_postgres.run(config)
    assert sorted(config.out.glob("*.json")) == written
    with connection.cursor() as cursor:
        cursor.execute("select count(*) from pg_logical_slot_peek_changes('taken', null, null)")
        assert cursor.fetchone()[0] > 0
    connection.close()


def test_a_primary_key_an_alter_table_changes_stops_the_capture_before_its_next_file(postgres, tmp_path):
    """The rows are no longer one per mirror key (two rows of id 1): the capture stops naming both
    keys, writes none of the changes and keeps them in its slot; run again, it stops there again."""
    connection = postgres.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute("create schema shop; create table shop.keyed (id int primary key, region text not null, v text);"
                       "insert into shop.keyed values (1, 'eu', 'a'), (2, 'eu', 'b')")
    config = config_for(create_capture_user(postgres, ["shop"]), "shop.keyed", tmp_path, "keyed")
    capture_postgres.run(config)
    written = sorted(config.out.glob("*.json"))
    with connection.cursor() as cursor:
        cursor.execute("alter table shop.keyed drop constraint keyed_pkey, add primary key (id, region)")
        cursor.execute("insert into shop.keyed values (1, 'us', 'c')")
    for _ in range(2):
        with pytest.raises(CaptureError, match=r"shop\.keyed is keyed on \(id, region\) since an ALTER TABLE, not on "
                                               r"\(id\) as captured: change its mirror's unique_key"):
            capture_postgres.run(config)
        assert sorted(config.out.glob("*.json")) == written
    connection.close()


DOCS = "{{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string', 'body': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}"


def test_a_bulk_key_change_keeps_the_unchanged_toast_values(postgres, dbt_project, tmp_path):
    """Under REPLICA IDENTITY DEFAULT a key change logs neither image's unchanged out-of-line (TOAST)
    values: the capture reads them from the table for each new key (postgres_snapshot.fill_unsent_toast,
    1,000 keys a query). 2,500 rows of incompressible 9,600-character text get new keys in one
    transaction; the mirror then equals the source, every large value included."""
    connection = postgres.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        # Each body 300 md5 digests (9,600 characters of hex): stored out of line, not compressed.
        cursor.execute("create schema shop; create table shop.docs (id int primary key, title text, body text);"
                       "insert into shop.docs select g, 't' || g, (select string_agg(md5(random()::text || g || n), '') "
                       "from generate_series(1, 300) n) from generate_series(1, 2500) g")
        cursor.execute("select min(pg_column_size(body)) from shop.docs")
        assert cursor.fetchone()[0] >= 9600
    config = capture_postgres.CaptureConfig(dsn=create_capture_user(postgres, ["shop"]), tables=("shop.docs",),
                                            slot="docs", out=dbt_project.inbox, state=tmp_path / "docs.json")
    dbt_project.write_model("docs", "unique_key='id', source_table='shop.docs'", DOCS)
    capture_postgres.run(config)
    with connection.cursor() as cursor:
        cursor.execute("update shop.docs set id = id + 100000")
    started = time.monotonic()
    summary = capture_postgres.run(config)
    print(f"capture of the 2,500-row key change: {time.monotonic() - started:.2f} s, {summary.events} events")
    assert summary.events == 5000  # a delete of each old key, an insert of each new one
    mirrored = apply_and_compare_docs(dbt_project, connection)
    assert len(mirrored) == 2500 and mirrored[0][0] == 100001
    connection.close()


def apply_and_compare_docs(dbt_project, connection) -> list[tuple]:
    """shop.docs landed and applied: its mirror's rows, equal to the source's."""
    assert dbt_project.land({"shop.docs": ["id"]}).counts["rejected"] == 0
    dbt_project.dbt("run", "--select", "docs")
    mirrored = [tuple(row.values()) for row in dbt_project.query(f"select id, title, body from {dbt_project.schema}.docs order by id")]
    with connection.cursor() as cursor:
        cursor.execute("select id, title, body from shop.docs order by id")
        source = [tuple(row) for row in cursor.fetchall()]
    assert mirrored == source, [row[:2] for row, expected in zip(mirrored, source) if row != expected][:5]
    return mirrored


def test_updates_decoded_after_a_column_was_dropped_keep_their_unchanged_toast_values(postgres, dbt_project, tmp_path):
    """An update that leaves a large value unchanged, decoded once a column of its table is dropped, names
    a column the catalog no longer has: the capture cannot tell which columns it left out, and wrote no
    marker, so the mirror held null there with no error (a walkthrough: 152 rows). The capture now reads
    such a table again online after the updates, and the mirror equals the source."""
    connection = postgres.connect()
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute("create schema shop; create table shop.docs (id int primary key, title text, body text, extra int);"
                       "insert into shop.docs select g, 't' || g, (select string_agg(md5(random()::text || g || n), '') "
                       "from generate_series(1, 300) n), g from generate_series(1, 60) g")
    config = capture_postgres.CaptureConfig(dsn=create_capture_user(postgres, ["shop"]), tables=("shop.docs",),
                                            slot="docs", out=dbt_project.inbox, state=tmp_path / "docs.json")
    dbt_project.write_model("docs", "unique_key='id', source_table='shop.docs'", DOCS)
    capture_postgres.run(config)
    with connection.cursor() as cursor:
        cursor.execute("update shop.docs set title = title || '!' where id <= 20")  # body unchanged: not logged
        cursor.execute("alter table shop.docs drop column extra")
    summary = capture_postgres.run(config)
    assert summary.snapshot_rows == 60, summary
    apply_and_compare_docs(dbt_project, connection)
    connection.close()
