"""The landing job against real Iceberg tables created by the dbt DDL macros."""

from __future__ import annotations

import os
import shutil
import time

import json

import pytest

from conftest import FIXTURES
from python_jobs.landing import io
from python_jobs.landing.schemas import QUARANTINE_SCHEMA, RAW_EVENT_SCHEMA

PRODUCTS = {"inventory.products": ["id"]}
FLINK_MYSQL = FIXTURES / "flink" / "debezium-data-schema-exclude.txt"


def test_raw_tables_from_the_dbt_macro_match_the_python_schemas(dbt_project, spark):
    raw = spark.table(f"{dbt_project.raw_schema}.raw_events").schema
    quarantine = spark.table(f"{dbt_project.raw_schema}.quarantine").schema
    assert [(f.name, f.dataType) for f in raw] == [(f.name, f.dataType) for f in RAW_EVENT_SCHEMA]
    assert [(f.name, f.dataType) for f in quarantine] == [(f.name, f.dataType) for f in QUARANTINE_SCHEMA]


def test_every_line_is_landed_quarantined_or_counted_as_tombstone(dbt_project, spark):
    lines = FLINK_MYSQL.read_text().splitlines()
    garbage = ['{"op": "c", "after": {"id": 1', "\x00\x01 binary junk", '{"op":"c","after":{"name":"no key"},"source":{}}']
    mixed = lines[:8] + garbage + ["null"] + lines[8:]
    (dbt_project.inbox / "part-1.json").write_text("\n".join(mixed) + "\n")

    summary = dbt_project.land(PRODUCTS)

    assert summary.counts["event"] == len(lines) == 16
    assert summary.counts["rejected"] == 3
    assert summary.counts["tombstone"] == 1
    quarantined = dbt_project.rows(f"{dbt_project.raw_schema}.quarantine", "landed_line")
    assert [(row.landed_line, row.raw_text) for row in quarantined] == [(9, garbage[0]), (10, garbage[1]), (11, garbage[2])]
    assert all(row.landed_file.endswith("part-1.json") and row.reason for row in quarantined)
    assert "invalid JSON" in quarantined[0].reason and "source.table" in quarantined[2].reason
    raw = dbt_project.rows(f"{dbt_project.raw_schema}.raw_events", "landed_line")
    assert len(raw) == 16 and raw[0].landed_line == 1 and raw[-1].landed_line == len(mixed)


def test_a_file_is_never_landed_twice(dbt_project, spark):
    shutil.copy(FLINK_MYSQL, dbt_project.inbox / "part-1.json")
    assert dbt_project.land(PRODUCTS).counts["event"] == 16
    # Rewritten under the same name, and a run with nothing new: both land nothing.
    (dbt_project.inbox / "part-1.json").write_text(FLINK_MYSQL.read_text())
    assert dbt_project.land(PRODUCTS).counts["event"] == 0
    shutil.copy(FLINK_MYSQL, dbt_project.inbox / "part-2.json")
    assert dbt_project.land(PRODUCTS).counts["event"] == 16
    table = f"{dbt_project.raw_schema}.raw_events"
    assert spark.sql(f"select count(*) from {table}").first()[0] == 32
    # Each batch is one commit.
    assert spark.sql(f"select count(*) from {table}.snapshots").first()[0] == 2


def test_landed_files_leave_the_input_folder_when_landed_is_set(dbt_project, spark):
    """landing.yml's landed: each file moves there once its batch is in the checkpoint, so each
    landing lists only new files; a name that comes again is still never landed twice."""
    landed = dbt_project.work_dir / "landed"
    shutil.copy(FLINK_MYSQL, dbt_project.inbox / "part-1.json")
    shutil.copy(FLINK_MYSQL, dbt_project.inbox / "part-2.json")
    assert dbt_project.land(PRODUCTS, landed=str(landed), max_files_per_batch=1).counts["event"] == 32
    assert sorted(path.name for path in dbt_project.inbox.iterdir()) == []
    assert sorted(path.name for path in landed.iterdir()) == ["part-1.json", "part-2.json"]
    # A name landed before lands nothing and stays where it came, in sight; a new name lands and moves.
    shutil.copy(FLINK_MYSQL, dbt_project.inbox / "part-1.json")
    shutil.copy(FLINK_MYSQL, dbt_project.inbox / "part-3.json")
    assert dbt_project.land(PRODUCTS, landed=str(landed)).counts["event"] == 16
    assert sorted(path.name for path in dbt_project.inbox.iterdir()) == ["part-1.json"]
    assert sorted(path.name for path in landed.iterdir()) == ["part-1.json", "part-2.json", "part-3.json"]
    assert spark.sql(f"select count(*) from {dbt_project.raw_schema}.raw_events").first()[0] == 48


def test_a_retried_batch_is_not_appended_again(dbt_project, spark):
    table = f"{dbt_project.raw_schema}.raw_events"
    rows = spark.createDataFrame([("t.x", '["1"]', "insert", "{}", None, "1", None, "f", 1, None, None, None, None)],
                                 RAW_EVENT_SCHEMA)
    assert io.append_once(rows, table, "query-1/7") is True
    assert io.append_once(rows, table, "query-1/7") is False
    assert io.append_once(rows, table, "query-1/8") is True
    assert spark.sql(f"select count(*) from {table}").first()[0] == 2


def test_a_checkpoint_lands_into_one_destination_only(dbt_project, spark):
    """A checkpoint lists the files landed into one table: used for another, it would skip them all."""
    (dbt_project.inbox / "part-1.json").write_text("\n".join(FLINK_MYSQL.read_text().splitlines()[:4]) + "\n")
    assert dbt_project.land(PRODUCTS).counts["event"] == 4
    dbt_project.execute(f"create table {dbt_project.raw_schema}.other_events using iceberg as "
                        f"select * from {dbt_project.raw_schema}.raw_events where false")

    with pytest.raises(io.LandingError, match=r"belongs to iceberg table raw_\d+.raw_events in .*skip them all.*checkpoint of its own"):
        dbt_project.land(PRODUCTS, raw_table=f"{dbt_project.raw_schema}.other_events")
    assert dbt_project.query(f"select count(*) as events from {dbt_project.raw_schema}.other_events")[0]["events"] == 0
    summary = dbt_project.land(PRODUCTS, raw_table=f"{dbt_project.raw_schema}.other_events",
                               checkpoint=str(dbt_project.work_dir / "checkpoint-other"))
    assert summary.counts["event"] == 4


def test_a_raw_table_made_again_empty_is_not_landed_into_with_the_old_checkpoint(dbt_project, spark):
    """A warehouse folder lost, emptied or restored from elsewhere: dbt makes the raw table again,
    empty, at the same name; the checkpoint still lists every file landed, so a landing with it
    would skip them all and the mirrors, rebuilt from the new raw table, would miss their rows."""
    (dbt_project.inbox / "part-1.json").write_text("\n".join(FLINK_MYSQL.read_text().splitlines()[:4]) + "\n")
    assert dbt_project.land(PRODUCTS).counts["event"] == 4
    raw = f"{dbt_project.raw_schema}.raw_events"
    dbt_project.execute(f"create table {raw}_shape using iceberg as select * from {raw} where false")
    dbt_project.execute(f"drop table {raw}")
    dbt_project.execute(f"create table {raw} using iceberg as select * from {raw}_shape")
    shutil.copy(FLINK_MYSQL, dbt_project.inbox / "part-2.json")

    with pytest.raises(io.LandingError, match=r"is not the table .* landed into.*skip.*remove the checkpoint"):
        dbt_project.land(PRODUCTS)
    assert dbt_project.query(f"select count(*) as events from {raw}")[0]["events"] == 0
    # As the message says: without the checkpoint every file lands again, into the new table.
    shutil.rmtree(dbt_project.work_dir / "checkpoint")
    assert dbt_project.land(PRODUCTS).counts["event"] == 20
    # The checkpoint now belongs to the new table: the next landing goes on as usual.
    shutil.copy(FLINK_MYSQL, dbt_project.inbox / "part-3.json")
    assert dbt_project.land(PRODUCTS).counts["event"] == 16


def test_missing_raw_table_says_how_to_create_it(dbt_project, spark):
    config = dbt_project.landing_config(PRODUCTS, raw_table="nowhere.raw_events")
    dbt_project.inbox
    with pytest.raises(io.LandingError, match="dbt run-operation create_raw_tables"):
        from python_jobs.landing import land

        land.run(config)


def test_only_a_batch_an_earlier_run_planned_is_checked_for_an_earlier_commit(spark, tmp_path):
    """The commit check (append_once) is skipped for batches the running query planned itself;
    a retried batch gets the place in the order of landed files that its first try had."""
    inbox, checkpoint = tmp_path / "inbox", tmp_path / "checkpoint"
    inbox.mkdir()
    started = int(time.time())
    for offset, name in enumerate(("a", "b")):
        (inbox / f"{name}.json").write_text("{}\n")
        os.utime(inbox / f"{name}.json", (started - 100 + offset, started - 100 + offset))
    calls, places = [], []

    def land_batch(batch, tag, place, may_be_retry):
        calls.append((tag.split("/")[1], may_be_retry))
        places.append(place)
        if len(calls) == 2:
            raise RuntimeError("died in batch 1")

    assert io.latest_planned_batch(checkpoint) == -1
    with pytest.raises(Exception, match="died in batch 1"):
        io.run_available_batches(io.read_new_files(spark, inbox, 1, "*.json"), checkpoint, land_batch)
    assert io.latest_planned_batch(checkpoint) == 1
    (inbox / "c.json").write_text("{}\n")
    settings = {name: spark.conf.get(name, None) for name in io.input_scan_conf(spark)}
    io.run_available_batches(io.read_new_files(spark, inbox, 1, "*.json"), checkpoint, land_batch)
    assert calls == [("0", False), ("1", False), ("1", True), ("2", False)]
    assert places[1] == places[2] and places[0].started_ms <= places[1].started_ms < places[3].started_ms
    assert [list(place.file_ranks) for place in places] == [[(inbox / name).as_uri().replace("file:///", "file:/")]
                                                            for name in ("a.json", "b.json", "b.json", "c.json")]
    assert {name: spark.conf.get(name, None) for name in settings} == settings, "the landing's scan settings are put back"


def test_a_raw_table_from_before_the_transaction_columns_gets_them_and_transaction_ends_land(conformance_project):
    project = conformance_project
    raw = f"{project.raw_schema}.raw_events"
    for column in ("tx_id", "tx_order", "tx_events"):
        project.execute(f"alter table {raw} drop column {column}")
    source = {"connector": "postgresql", "schema": "shop", "table": "orders", "ts_ms": 1700000000000}

    def event(key, lsn, order):
        return {"before": None, "after": {"id": key}, "source": {**source, "lsn": lsn}, "op": "c",
                "transaction": {"id": "571:90", "total_order": order, "data_collection_order": order}}

    lines = [{"status": "BEGIN", "id": "571:90", "event_count": None, "data_collections": None},
             event(1, 80, 1), event(2, 85, 2),
             {"status": "END", "id": "571:90", "ts_ms": 1700000000001, "event_count": 2,
              "data_collections": [{"data_collection": "shop.orders", "event_count": 2}]}]
    (project.inbox / "part-1.json").write_text("\n".join(json.dumps(line) for line in lines) + "\n")

    summary = project.land({"shop.orders": ["id"]})

    assert (summary.counts["event"], summary.counts["ignored"]) == (3, 1)
    assert summary.status() == "landed 3 events (1 of them transaction ends), quarantined 1 lines", summary.status()
    rows = project.query(f"select table_name, action, tx_id, tx_order, tx_events from {raw} order by landed_line")
    assert [tuple(row.values()) for row in rows] == [
        ("shop.orders", "insert", "571:90", 1, None),
        ("shop.orders", "insert", "571:90", 2, None),
        ("_cdc_merge.transactions", "tx_end", "571:90", None, 2),
    ]
