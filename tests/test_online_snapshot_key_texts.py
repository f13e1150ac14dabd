"""Online snapshots of PostgreSQL keys whose text is not the order or the form the mirror compares
(docs/online_snapshots.md): a page's key range must be the same rows in the source and in the
mirror, or the range record deletes rows the source still has. Each test reads the table online
(or a range of it again, as cdc-snapshot asks) on a real PostgreSQL 15, applies it with dbt and
compares the mirror with the source table's own rows."""

from __future__ import annotations

import contextlib
import os
import threading
import time

import pytest

from harness.postgres_server import create_capture_user
from python_jobs.capture import postgres as capture_postgres
from python_jobs.capture import snapshot_requests
from python_jobs.capture.snapshot_requests import write_request
from test_capture_faults import postgres  # noqa: F401 - fixture
from test_online_snapshots import execute, mirror_and_source_rows

ITEMS = "{{ cdc_merge.cdc_columns({'id': 'string', 'qty': 'int'}) }}, {{ cdc_merge.cdc_metadata_columns() }}"


def capture_config(dsn, project, tmp_path, **options):
    return capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.items",), slot="key_texts", out=project.inbox,
                                          state=tmp_path / "capture-state.json", **options)


@contextlib.contextmanager
def local_time_zone(zone: str):
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TZ")
        else:
            os.environ["TZ"] = before
        time.tzset()


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


def mirrored_uuid_items(postgres, project, tmp_path, rows: int):
    """shop.items keyed by uuid, captured and applied: the capture's config and the source's rows."""
    execute(postgres, "create schema shop; create table shop.items (id uuid primary key, qty int);"
                      f"insert into shop.items select md5(g::text)::uuid, g from generate_series(1, {rows}) g")
    dsn = create_capture_user(postgres, ["shop"])
    project.write_model("items", "unique_key='id', source_table='shop.items'", ITEMS)
    config = capture_config(dsn, project, tmp_path, page_rows=4)
    capture_postgres.run(config)
    apply(project)
    items = mirror_and_source_rows(project, postgres, "items", "shop.items", "id, qty")[1]
    assert len(items) == rows
    return config, items


def test_a_range_asked_for_with_a_uuid_in_upper_case_deletes_no_row_the_source_has(postgres, dbt_project, tmp_path):  # noqa: F811
    """cdc-snapshot --from as a person may type a uuid: the mirror holds its lower-case text, which
    sorts after the upper case, so its range began before the pages' and lost the rows between."""
    config, items = mirrored_uuid_items(postgres, dbt_project, tmp_path, 60)
    # From the first key starting with 'c' to the last starting with 'd': the mirror has 'a' and 'b' keys before them.
    start = next(key for key, _ in items if key.startswith("c"))
    end = [key for key, _ in items if key.startswith("d")][-1]
    write_request(config.state, "shop.items", [start.upper()], [end])
    assert capture_postgres.run(config).snapshot_rows > 0
    apply(dbt_project)
    assert mirror_and_source_rows(dbt_project, postgres, "items", "shop.items", "id, qty") == (items, items)


def test_a_request_the_capture_cannot_serve_is_reported_refused(postgres, dbt_project, tmp_path, capsys):  # noqa: F811
    """A bound that is not a value of the key's type (or a table the capture does not read) was left out
    with a log line only, while cdc-snapshot and cdc-verify --repair had said "will be read again": the
    range stayed unrepaired and no one was told. The capture refuses it where they look, and they say so."""
    config, items = mirrored_uuid_items(postgres, dbt_project, tmp_path, 20)
    capture = threading.Timer(0.5, capture_postgres.run, [config])  # takes the requests once they are written
    capture.start()
    refused = snapshot_requests.main(["--state", str(config.state), "--table", "shop.items", "--from", "c0ffee",
                                      "--wait-seconds", "60"])
    capture.join()
    said = capsys.readouterr().err
    assert refused == 1, said
    assert "shop.items keys c0ffee to end: refused by the capture: c0ffee: invalid input syntax for type uuid" in said, said
    assert list((snapshot_requests.requests_folder(config.state) / "refused").glob("*.json"))
    apply(dbt_project)
    assert mirror_and_source_rows(dbt_project, postgres, "items", "shop.items", "id, qty") == (items, items)


def test_a_range_of_time_stamps_asked_for_in_other_zones_deletes_no_row_the_source_has(postgres, dbt_project, tmp_path):  # noqa: F811
    """cdc-snapshot --from/--to of a timestamptz key with another zone, or none, which the source's
    session (UTC) reads: the range record read one without a zone in the capture machine's zone."""
    execute(postgres, "create schema shop; create table shop.moments (at timestamptz primary key, qty int);"
                      "insert into shop.moments select timestamptz '2026-01-01 00:00:00+00' + g * interval '1 hour', g "
                      "from generate_series(1, 48) g")
    dsn = create_capture_user(postgres, ["shop"])
    dbt_project.write_model("moments", "unique_key='at', source_table='shop.moments'",
                            "{{ cdc_merge.cdc_columns({'at': 'timestamp', 'qty': 'int'}) }}, {{ cdc_merge.cdc_metadata_columns() }}")
    config = capture_postgres.CaptureConfig(dsn=dsn, tables=("shop.moments",), slot="key_texts", out=dbt_project.inbox,
                                            state=tmp_path / "capture-state.json", page_rows=4)
    capture_postgres.run(config)

    def mirrored():
        assert "quarantined 0 lines" in dbt_project.land({"shop.moments": ["at"]}).status()
        dbt_project.dbt("run", "--select", "moments")
        return sorted((str(row["at"]), row["qty"]) for row in dbt_project.query(
            f"select at, qty from {dbt_project.schema}.moments"))

    moments = mirrored()
    assert len(moments) == 48
    # 10:00 to 20:00 UTC, asked for in New York's time and without a zone.
    write_request(config.state, "shop.moments", ["2026-01-01 05:00:00-05"], ["2026-01-01 20:00:00"])
    with local_time_zone("America/New_York"):  # the capture's machine's: not the source session's UTC
        assert capture_postgres.run(config).snapshot_rows == 11
    assert mirrored() == moments
