"""An online snapshot of a text key in a database whose encoding is not UTF-8, on a real PostgreSQL 15
(docs/online_snapshots.md): its pages' key ranges must be the mirrors' ranges, whose strings compare
by their UTF-8 bytes. Paged by the database's own bytes (collate "C"), LATIN9 puts 'Š' (0xA6) before
'ª' (0xAA), a mirror after it (U+0160, U+00AA): the last page's range record deleted 'Š'."""

from __future__ import annotations

from python_jobs.capture import postgres as capture_postgres
from test_capture_faults import postgres  # noqa: F401 - postgres is a fixture


def test_text_keys_of_a_latin9_database_are_paged_in_the_mirrors_order(postgres, dbt_project, tmp_path):
    admin = postgres.connect()
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute("create database legacy encoding 'LATIN9' lc_collate 'C' lc_ctype 'C' template template0")
        cursor.execute("create role cdc login replication")
    admin.close()
    legacy = postgres.connect("legacy")
    legacy.autocommit = True
    with legacy.cursor() as cursor:
        cursor.execute("create schema shop; create table shop.items (id text primary key, qty int);"
                       "insert into shop.items values ('a', 1), ('Š', 2), ('ª', 3), ('é', 4), ('z', 5);"
                       "grant usage on schema shop to cdc; grant select on all tables in schema shop to cdc")
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'",
                            "{{ cdc_merge.cdc_columns({'id': 'string', 'qty': 'int'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")
    config = capture_postgres.CaptureConfig(dsn=f"host=127.0.0.1 port={postgres.port} user=cdc dbname=legacy",
                                            tables=("shop.items",), slot="latin9", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json", snapshot_mode="online", page_rows=1)
    assert capture_postgres.run(config).snapshot_rows == 5
    dbt_project.land({"shop.items": ["id"]})
    dbt_project.dbt("run", "--select", "items")
    mirrored = sorted((row["id"], row["qty"]) for row in dbt_project.query(f"select id, qty from {dbt_project.schema}.items"))
    with legacy.cursor() as cursor:
        cursor.execute("select id, qty from shop.items")
        assert mirrored == sorted(cursor.fetchall())
    legacy.close()
