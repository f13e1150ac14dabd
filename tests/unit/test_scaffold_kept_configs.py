"""cdc-scaffold --overwrite writes a model anew from the source's catalog and keeps the configs the user
added to it (python_jobs/scaffold.py kept_configs): a mirror whose consistency_group was dropped left its
group silently, and reads at the cut no longer held whole transactions of it."""

from __future__ import annotations

from python_jobs import scaffold
from python_jobs.scaffold import SourceColumn, SourceTable

COLUMNS = (SourceColumn("id", "bigint", 64, 0), SourceColumn("amount", "numeric", 12, 1))
EDITED = """{{
    config(
        unique_key='id',
        source_table='shop.orders',
        consistency_group='orders',
        deletes='soft', meta={'owner': 'a,  b'},
        max_events_per_chunk=(1000 * 2),
    )
}}

select 1
"""


def test_the_configs_a_user_added_are_read_as_written():
    assert scaffold.kept_configs(EDITED) == [
        "consistency_group='orders'", "deletes='soft'", "meta={'owner': 'a,  b'}", "max_events_per_chunk=(1000 * 2)"]
    assert scaffold.kept_configs("select 1") == []
    assert scaffold.kept_configs("{{ config(unique_key='id', source_table='a.b') }}") == []
    assert scaffold.kept_configs("{{ config(unique_key='id'") == []  # unfinished: nothing it can read


def test_overwrite_keeps_them_and_takes_the_catalog_for_the_rest(tmp_path, capsys):
    table = SourceTable("shop", "orders", COLUMNS, ("id",))
    path = tmp_path / f"{table.model_name}.sql"
    path.write_text(EDITED.replace("'shop.orders'", "'shop.old_orders'"))
    scaffold.write([table], tmp_path, None, overwrite=True)
    written = path.read_text()
    assert written == scaffold.model_sql(table, ["consistency_group='orders'", "deletes='soft'", "meta={'owner': 'a,  b'}",
                                                 "max_events_per_chunk=(1000 * 2)"])
    assert "source_table='shop.orders',\n        consistency_group='orders',\n        deletes='soft',\n" in written
    assert "'amount': 'decimal(12,1)'" in written
    assert "keeps its configs consistency_group='orders', deletes='soft'" in capsys.readouterr().err
    # A model it writes the first time has only the scaffolded configs.
    assert scaffold.model_sql(table).count("=") == 2
