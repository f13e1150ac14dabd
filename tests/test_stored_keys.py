"""A small batch's stored keys read in the driver (adapter/dbt/adapters/cdc_spark/stored_keys.py and
jvm/iceberg/cdc_merge/iceberg/StoredKeys.java), on a real Iceberg table with a delete file: the
rows a Spark query finds, with the same file hashes and positions, without a Spark job; and a
classification that looks them up (classify.sql stored_row_sql) computed without one either."""

from __future__ import annotations

import itertools
import json

import pytest

from dbt.adapters.cdc_spark import raw_ranges, stored_keys
from python_jobs.apply import key_index
from test_raw_ranges import jobs_run_by

_tables = itertools.count(1)
# Keys with what a SQL string literal or JSON must escape.
KEYS = ["plain", "it's", "back\\slash", '{"id":7}', "ü"]


@pytest.fixture()
def table(spark) -> str:
    """Keys of KEYS and k0..k9 in two data files; k3 deleted through a position delete file."""
    name = f"stored_keys.t{next(_tables)}"
    spark.sql("create namespace if not exists stored_keys")
    spark.sql(f"create table {name} (_cdc_key string, _cdc_seq string, v int) using iceberg "
              "tblproperties ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')")
    first = [(key, f"s{n}", n) for n, key in enumerate(KEYS)]
    second = [(f"k{n}", f"t{n}", n) for n in range(10)]
    for rows in (first, second):
        spark.createDataFrame(rows, "_cdc_key string, _cdc_seq string, v int").coalesce(1).writeTo(name).append()
    spark.sql(f"delete from {name} where _cdc_key = 'k3'")
    return name


def keys_in_driver(spark, keys: list[str]):
    return raw_ranges.in_driver(spark.createDataFrame([(key,) for key in keys], "_cdc_key string"))


def current_snapshot(spark, table: str) -> str:
    return str(spark.sql(f"select snapshot_id from {table}.snapshots order by committed_at desc limit 1").first()[0])


def decoded(found: str) -> dict:
    return json.loads(bytes.fromhex(found).decode("utf-8"))


def test_the_stored_rows_of_the_keys_are_what_spark_reads_without_a_job(spark, table):
    wanted = KEYS + ["k1", "k3", "k9", "absent", "k1"]
    keys = keys_in_driver(spark, wanted)
    snapshot = current_snapshot(spark, table)
    found = []
    jobs = jobs_run_by(spark, lambda: found.extend(stored_keys.stored_rows_hex(spark, keys, [(table, snapshot, True), (table, snapshot, False)])))

    assert jobs == 0
    expected = {
        row._cdc_key: {"_cdc_seq": row._cdc_seq, "_cdc_stored_file_hash": row.file_hash, "_cdc_stored_pos": row._pos}
        for row in spark.sql(f"select _cdc_key, _cdc_seq, xxhash64(_file) as file_hash, _pos from {table}").collect()
        if row._cdc_key in wanted
    }
    assert sorted(expected) == sorted(KEYS + ["k1", "k9"])  # k3 is deleted, "absent" never stored
    assert decoded(found[0]) == expected
    assert decoded(found[1]) == {key: {"_cdc_seq": row["_cdc_seq"]} for key, row in expected.items()}


def test_a_classification_looks_the_rows_up_without_a_job(spark, table):
    keys = keys_in_driver(spark, ["it's", "k9", "new"])
    (found,) = stored_keys.stored_rows_hex(spark, keys, [(table, current_snapshot(spark, table), True)])
    # What classify.sql's stored_row_sql writes for each batch row.
    looked_up = (f"try_element_at(from_json(cast(unhex('{found}') as string), "
                 "'map<string, struct<_cdc_seq: string, _cdc_stored_file_hash: bigint, _cdc_stored_pos: bigint>>'), _cdc_key)")
    keys.createOrReplaceTempView("stored_keys_batch")
    classified = spark.sql(f"select _cdc_key, {looked_up}._cdc_seq as stored_seq, {looked_up}._cdc_stored_pos as pos from stored_keys_batch")
    rows = []
    assert jobs_run_by(spark, lambda: rows.extend(classified.collect())) == 0
    assert sorted((row._cdc_key, row.stored_seq) for row in rows) == [("it's", "s1"), ("k9", "t9"), ("new", None)]


def test_large_tables_and_batches_not_in_the_driver_are_left_to_spark(spark, table, monkeypatch):
    snapshot = current_snapshot(spark, table)
    keys = keys_in_driver(spark, ["k1"])
    assert stored_keys.stored_rows_hex(spark, keys, [(table, snapshot, True)]) is not None
    # A table without a snapshot holds nothing, and is not read.
    assert stored_keys.stored_rows_hex(spark, keys, [(table, None, True)]) == ["{}".encode().hex()]
    # More rows than one driver thread reads: all left to the classification's scan.
    monkeypatch.setattr(stored_keys, "MAX_DRIVER_RECORDS", 10)
    assert stored_keys.stored_rows_hex(spark, keys, [(table, None, True), (table, snapshot, True)]) is None
    monkeypatch.undo()
    # Keys the driver does not hold, or more than are listed.
    assert stored_keys.stored_rows_hex(spark, spark.sql("select 'k1' as _cdc_key from range(1)"), [(table, snapshot, True)]) is None
    monkeypatch.setattr(raw_ranges, "MAX_LISTED_KEYS", 0)
    assert stored_keys.stored_rows_hex(spark, keys, [(table, snapshot, True)]) is None


def test_a_key_stored_twice_is_an_error_naming_it(spark, table):
    spark.createDataFrame([("k1", "u1", 1)], "_cdc_key string, _cdc_seq string, v int").writeTo(table).append()
    with pytest.raises(Exception, match="holds the key k1 more than once"):
        stored_keys.stored_rows_hex(spark, keys_in_driver(spark, ["k1"]), [(table, current_snapshot(spark, table), False)])


def index_kept(spark):
    from dbt.adapters.cdc_spark.iceberg_jvm import jvm_class

    return jvm_class(spark, "cdc_merge.iceberg.KeyIndex")


def test_where_the_process_keeps_key_indexes_the_rows_are_the_same_and_the_index_kept(spark, table, monkeypatch):
    monkeypatch.setenv(key_index.KEY_INDEX_MAX_KEYS_ENV, "1000")
    index_kept(spark).dropAll()
    wanted = KEYS + ["k1", "k3", "absent"]
    snapshot = current_snapshot(spark, table)
    keys = keys_in_driver(spark, wanted)
    from_index = []
    jobs = jobs_run_by(spark, lambda: from_index.extend(stored_keys.stored_rows_hex(spark, keys, [(table, snapshot, True)])))

    assert jobs == 0
    assert index_kept(spark).keptSnapshot(table) == int(snapshot)
    monkeypatch.setenv(key_index.KEY_INDEX_MAX_KEYS_ENV, "0")
    (from_files,) = stored_keys.stored_rows_hex(spark, keys, [(table, snapshot, True)])
    assert decoded(from_index[0]) == decoded(from_files) and len(decoded(from_files)) == len(KEYS) + 1


def test_the_indexes_kept_hold_at_most_the_keys_allowed_the_least_recently_used_dropped(spark, table, monkeypatch):
    other = f"{table}_other"
    spark.sql(f"create table {other} using iceberg as select * from {table}")
    rows = spark.table(table).count()
    monkeypatch.setenv(key_index.KEY_INDEX_MAX_KEYS_ENV, str(2 * rows - 1))  # room for one table's keys, not two
    index_kept(spark).dropAll()
    keys = keys_in_driver(spark, ["k1"])

    for name in (table, other, table):
        (found,) = stored_keys.stored_rows_hex(spark, keys, [(name, current_snapshot(spark, name), False)])
        assert decoded(found) == {"k1": {"_cdc_seq": "t1"}}
        assert index_kept(spark).keptSnapshot(name) == int(current_snapshot(spark, name))
    assert index_kept(spark).keptSnapshot(other) is None  # dropped to make room for table's again
    # A table with more keys than allowed is read from its files, and not indexed.
    monkeypatch.setenv(key_index.KEY_INDEX_MAX_KEYS_ENV, str(rows - 1))
    index_kept(spark).dropAll()
    (found,) = stored_keys.stored_rows_hex(spark, keys, [(other, current_snapshot(spark, other), False)])
    assert decoded(found) == {"k1": {"_cdc_seq": "t1"}} and index_kept(spark).keptSnapshot(other) is None
