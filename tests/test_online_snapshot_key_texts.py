"""Online snapshots of PostgreSQL keys whose text is not the order or the form the mirror compares
(docs/online_snapshots.md): a page's key range must be the same rows in the source and in the
mirror, or the range record deletes rows the source still has. Each test reads the table online
(or a range of it again, as cdc-snapshot asks) on a real PostgreSQL 15, applies it with dbt and
compares the mirror with the source table's own rows."""

from __future__ import annotations

import pytest

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_online_snapshots import execute, mirror_and_source_rows

ITEMS = "{{ cdc_merge.cdc_columns({'id': 'string', 'qty': 'int'}) }}, {{ cdc_merge.cdc_metadata_columns() }}"


def capture_config(dsn, project, tmp_path, **options):
    return capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot="key_texts", out=project.inbox,
                                          state=tmp_path / "capture-state.json", **options)


def apply(project) -> None:
    assert "quarantined 0 lines" in project.land({"shop.items": ["id"]}).status()
    project.dbt("run", "--select", "items")


@pytest.mark.parametrize("key_type, keys", [
    # A negative scale adds digits: numeric(37,-2) holds 39, more than a mirror's decimal, so it is mirrored
    # as its text (docs/type_mapping.md), which orders 1000 before 200.
    ("numeric(37,-2)", "select g * 100 from generate_series(1, 150) g"),
    # A scale over 38 is as wide: a text, whose order reverses the negative numbers' (-0.002 after -0.001).
    ("numeric(38,40)", "select g * -0.0001 from generate_series(1, 60) g"),
])
def test_numeric_keys_wider_than_a_mirror_decimal_are_paged_in_their_texts_order(postgres, dbt_project, tmp_path,  # noqa: F811
                                                                                   key_type, keys):
    """Paged in the numbers' order while the mirror compared their texts, each page's range record
    deleted the rows of earlier pages whose text fell in it: 53 of 150 rows were left, 1 of 60."""
    execute(postgres, f"create schema shop; create table shop.items (id {key_type} primary key, qty int);"
                      f"insert into shop.items select k, 1 from ({keys}) as keys (k)")
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("items", "unique_key='id', source_table='shop.items'", ITEMS)
    config = capture_config(dsn, dbt_project, tmp_path, snapshot_mode="online", page_rows=3)
    capture_postgres.run(config)
    apply(dbt_project)
    mirrored, source = mirror_and_source_rows(dbt_project, postgres, "items", "shop.items", "id, qty")
    assert len(mirrored) == len(source) and mirrored == source
