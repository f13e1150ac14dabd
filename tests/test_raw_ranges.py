"""Where a raw range read once for all the mirrors of a run is kept (adapter/.../raw_ranges.py): a
small one in the driver, where a mirror's filter on its own source table runs no Spark job and
scans nothing; a larger one in Spark's block store; a large one not at all."""

from __future__ import annotations

import uuid

from dbt.adapters.cdc_spark import raw_ranges


def jobs_run_by(spark, action) -> int:
    group = f"raw_ranges_{uuid.uuid4().hex}"
    spark.sparkContext.setJobGroup(group, "counted")
    try:
        action()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


def test_a_small_range_is_kept_in_the_driver_a_larger_in_the_block_store_a_large_not_at_all(spark, monkeypatch):
    monkeypatch.setattr(raw_ranges, "MAX_DRIVER_EVENTS", 10)
    monkeypatch.setattr(raw_ranges, "MAX_KEPT_EVENTS", 20)
    events = spark.range(30).selectExpr("cast(id as string) as key", "concat('shop.t', id % 3) as table_name")
    ranges = raw_ranges.RawRanges()
    reads = []

    def read():
        reads.append(1)
        return events

    session = spark.sparkContext.applicationId
    small = ranges.rows(session, "raw", None, "1", 10, read)
    larger = ranges.rows(session, "raw", None, "2", 20, read)
    large = ranges.rows(session, "raw", None, "3", 21, read)
    assert small._jdf.queryExecution().analyzed().getClass().getSimpleName() == "LocalRelation"
    assert larger._jdf.queryExecution().analyzed().getClass().getSimpleName() == "LogicalRDD"
    assert large._jdf.queryExecution().analyzed().getClass().getSimpleName() not in ("LocalRelation", "LogicalRDD")

    def own_table(rows):
        return sorted(row["key"] for row in rows.where("table_name = 'shop.t1'").collect())

    expected = sorted(str(n) for n in range(1, 30, 3))
    assert own_table(small) == own_table(larger) == own_table(large) == expected
    assert jobs_run_by(spark, lambda: own_table(small)) == 0
    assert jobs_run_by(spark, lambda: own_table(larger)) >= 1

    # The kept ones are read once, the large one at every ask.
    assert ranges.rows(session, "raw", None, "1", 10, read) is small
    assert ranges.rows(session, "raw", None, "2", 20, read) is larger
    ranges.rows(session, "raw", None, "3", 21, read)
    assert len(reads) == 4
    ranges.forget()


def test_a_small_batch_in_the_driver_gives_its_key_hashes_without_a_job_others_none(spark):
    events = spark.range(12).selectExpr("cast(id % 10 as string) as key", "concat('shop.t', id % 2) as table_name")
    kept = raw_ranges.in_driver(events)
    keys = kept.where("table_name = 'shop.t0'").select("key")
    listed = []
    assert jobs_run_by(spark, lambda: listed.extend(raw_ranges.key_hashes_in_driver(keys))) == 0
    expected = [row[0] for row in events.where("table_name = 'shop.t0'").selectExpr("xxhash64(key)").collect()]
    assert sorted(listed) == sorted(expected) and len(listed) == 6
    # Over the limit, or not held in the driver: the classification broadcasts the hashes instead.
    assert raw_ranges.key_hashes_in_driver(keys, limit=5) is None
    assert raw_ranges.key_hashes_in_driver(events.select("key")) is None


def test_a_range_in_the_driver_is_deduplicated_once_to_each_tables_newest_event_per_key(spark, monkeypatch):
    monkeypatch.setattr(raw_ranges, "MAX_DRIVER_EVENTS", 10)
    rows = [
        # table, key, seq, landed_file, landed_line, action
        ("shop.a", "1", "0003", "f1", 1, "update"),
        ("shop.a", "1", "0005", "f1", 2, "update"),  # the newest of shop.a's key 1
        ("shop.b", "1", "0004", "f1", 3, "delete"),  # the same key of another table: its own newest
        ("shop.a", "2", "0007", "f1", 4, "insert"),
        ("shop.a", "2", "0007", "f2", 1, "update"),  # a tie in seq: the later file wins
        ("shop.a", "", "0009", "f2", 2, "truncate"),  # not a key's event
    ]
    schema = "table_name string, key string, seq string, landed_file string, landed_line int, action string"
    events = spark.createDataFrame(rows, schema).selectExpr("*", "'INSERT' as _change_type")
    ranges = raw_ranges.RawRanges()
    session = spark.sparkContext.applicationId
    ranges.rows(session, "raw", None, "1", len(rows), lambda: events)
    newest = ranges.newest(session, "raw", None, "1")
    assert newest is ranges.newest(session, "raw", None, "1")  # once for all mirrors
    assert newest._jdf.queryExecution().analyzed().getClass().getSimpleName() == "LocalRelation"
    got = sorted((row.table_name, row.key, row.seq, row.landed_file) for row in newest.collect())
    assert got == [("shop.a", "1", "0005", "f1"), ("shop.a", "2", "0007", "f2"), ("shop.b", "1", "0004", "f1")]
    # A range kept in the block store, or not kept: each mirror deduplicates its own batch.
    ranges.rows(session, "raw", "1", "2", 11, lambda: events)
    assert ranges.newest(session, "raw", "1", "2") is None
    assert ranges.newest(session, "raw", "2", "3") is None


RANGE_SCHEMA = ("table_name string, key string, action string, raw_data string, seq string, landed_file string, "
                "landed_line int, source_ts timestamp")
RANGE_ROWS = [
    ("shop.a", "1", "insert", '{"id": 1, "note": "x"}', "0003", "f1", 1),
    ("shop.a", "1", "update", '{"id": 1, "note": "__debezium_unavailable_value"}', "0005", "f1", 2),
    ("shop.a", "ü2", "update", '{"id": 2, "price": 3}', "0007", "f1", 3),
    ("shop.a", "ü2", "delete", None, "0007", "f2", 1),  # a tie in seq: the later file
    ("shop.a", "3", "read", "[1, 2]", None, "f1", 4),  # not an object: no fields; no seq: oldest
    ("shop.a", "3", "update", "not json", None, "f1", 5),  # no seq either: the later line
    ("shop.a", None, "update", '{"id": null, "extra": {"nested": 1}}', "0008", "f3", 1),  # a null key is a key
    ("shop.a", None, "update", '{"id": null}', "0009", None, 2),
    ("shop.a", "4", None, '{"id": 4}', "0010", "f3", 3),  # no action: neither a key's nor the table's
    ("shop.a", "", "schema", '{"columns": [], "existing_rows": {"c": 1}}', "0011", "f3", 4),
    ("shop.a", "", "schema", '{"columns": []}', "0012", "f3", 5),
    ("shop.a", "", "range", '{"low": "1", "high": "9"}', "0013", "f3", 6),
    ("shop.b", "1", "delete", '{"id": 1}', "0004", "f1", 6),  # delete images name no fields
    ("shop.b", "0", "update", "{}", "0004", "f1", 7),
    ("shop.c", "", "range", None, "0014", "f4", 1),  # only a table's event
    (None, "9", "insert", '{"id": 9}', "0001", "f1", 9),  # no table
]


def range_in_driver(spark, rows):
    frame = spark.createDataFrame([(*row, None) for row in rows], RANGE_SCHEMA)
    return raw_ranges.in_driver(frame.selectExpr("*", "'INSERT' as _change_type"))


def test_a_range_in_the_driver_is_planned_and_deduplicated_there_as_spark_does(spark):
    from dbt.adapters.cdc_spark import local_rows, range_plan

    rows = range_in_driver(spark, RANGE_ROWS)
    found = {}
    assert jobs_run_by(spark, lambda: found.update(plans=local_rows.range_plans(rows), newest=local_rows.newest_events(rows))) == 0
    by_spark = range_plan.plans_by_table(range_plan.range_plan_frame(rows).collect())
    assert found["plans"] == {table: plan for table, plan in by_spark.items() if table is not None}
    assert found["plans"]["shop.a"]["min_key_hex"] == "31" and found["plans"]["shop.a"]["max_key_hex"] == "C3BC32"
    assert found["plans"]["shop.a"]["fields"] == ["extra", "id", "note", "price"]

    newest = found["newest"]
    assert raw_ranges.rows_in_driver(newest, 100) and newest.columns == rows.columns
    # Spark's window over the same rows, but for key 1's placeholder, which the driver fills (below).
    filled = '{"id": 1, "note": "x"}'
    by_window = [tuple(filled if value == RANGE_ROWS[1][3] else value for value in row) for row in raw_ranges.newest_events(rows).collect()]
    assert sorted(map(tuple, newest.collect()), key=repr) == sorted(by_window, key=repr)
    assert {(row.key, row.landed_file, row.landed_line) for row in newest.where("table_name = 'shop.a'").collect()} == {
        ("1", "f1", 2), ("ü2", "f2", 1), ("3", "f1", 5), (None, None, 2)}


UNSENT = '"__debezium_unavailable_value"'
LONG = "é" * 40_000


def test_a_range_in_the_driver_fills_each_newest_image_s_toast_placeholders_from_the_key_s_older_events(spark):
    """The newest event alone then gives the row the key's events give applied one by one in order
    (dedup.sql's rounds): each placeholder takes the JSON text the key's newest older event sent;
    one that no older event sent stays (the write keeps the mirror's stored value); past a delete,
    null."""
    from dbt.adapters.cdc_spark import local_rows

    rows = [  # table, key, action, raw_data, seq, landed_file, landed_line
        ("shop.a", "1", "insert", '{"id": 1, "body": "A", "n": 12345678901234567890.10, "doc": {"k": [1, 2]}}', "01", "f1", 1),
        ("shop.a", "1", "update", f'{{"id": 1, "body": {UNSENT}, "n": {UNSENT}, "doc": {UNSENT}}}', "02", "f1", 2),
        ("shop.a", "1", "update", f'{{"id":1,"body":{UNSENT},"n":{UNSENT},"doc":{{"k":null}}}}', "03", "f1", 3),
        ("shop.b", "1", "update", '{"id": 1, "body": "another table"}', "04", "f1", 4),
        ("shop.a", "2", "update", f'{{"id": 2, "body": {UNSENT}}}', "05", "f1", 5),  # nothing older: stays
        ("shop.a", "3", "insert", '{"id": 3, "body": "gone"}', "06", "f1", 6),
        ("shop.a", "3", "delete", None, "07", "f1", 7),
        ("shop.a", "3", "update", f'{{"id": 3, "body": {UNSENT}}}', "08", "f1", 8),  # past a delete: null
        ("shop.a", "4", "update", '{"id": 4, "body": "tie, earlier file"}', "09", "f1", 9),
        ("shop.a", "4", "update", '{"id": 4, "body": "q\\"u\\u00fc, later file"}', "09", "f2", 1),
        ("shop.a", "4", "update", f'{{"id": 4, "body": {UNSENT}}}', "10", "f1", 10),
        ("shop.a", "4", "schema", '{"body": "a table event"}', "11", "f1", 11),
        # Beyond the parser's first buffer (a text over 32 KB is read through a Reader).
        ("shop.a", "5", "insert", f'{{"id": 5, "n": 1, "body": "{LONG}", "tail": "t"}}', "12", "f1", 12),
        ("shop.a", "5", "update", f'{{"id": 5, "n": 2, "body": {UNSENT}, "tail": {UNSENT}}}', "13", "f1", 13),
    ]
    newest = local_rows.newest_events(range_in_driver(spark, rows))
    got = {(row.table_name, row.key): row.raw_data for row in newest.collect()}
    assert got == {
        ("shop.a", "1"): '{"id":1,"body":"A","n":12345678901234567890.10,"doc":{"k":null}}',
        ("shop.b", "1"): '{"id": 1, "body": "another table"}',
        ("shop.a", "2"): f'{{"id": 2, "body": {UNSENT}}}',
        ("shop.a", "3"): '{"id": 3, "body": null}',
        ("shop.a", "4"): '{"id": 4, "body": "q\\"u\\u00fc, later file"}',
        ("shop.a", "5"): f'{{"id": 5, "n": 2, "body": "{LONG}", "tail": "t"}}',
    }


def test_a_range_with_a_truncate_is_planned_by_spark(spark):
    from dbt.adapters.cdc_spark import local_rows

    truncate = [("shop.a", "", "truncate", None, "0002", "f1", 8)]
    rows = range_in_driver(spark, RANGE_ROWS + truncate)
    assert local_rows.range_plans(rows) is None  # its source time is text in the session's time zone
    ranges = raw_ranges.RawRanges()
    session = spark.sparkContext.applicationId
    ranges.rows(session, "raw", None, "1", len(RANGE_ROWS) + 1, lambda: rows)
    assert ranges.plan(session, "raw", None, "1", "shop.a")["truncate_seq"] == "0002"
    assert ranges.plan(session, "raw", None, "1", "shop.c")["snapshot_ranges"] == [["0014", None]]
    ranges.forget()


def chunk_plan_sql(view: str, source_table: str) -> str:
    """raw_log.sql's chunk_plan_sql, rendered as dbt renders it on Spark."""
    import re
    from pathlib import Path

    import jinja2

    text = (Path(__file__).parents[1] / "macros/materializations/cdc_merge/raw_log.sql").read_text()
    body = re.search(r"{% macro chunk_plan_sql\(changes_view, source_table\) %}(.*?){% endmacro %}", text, re.S).group(1)
    marker = "contains(coalesce(raw_data, ''), '__debezium_unavailable_value')"
    macros = type("Macros", (), {"has_unavailable_sql": staticmethod(lambda column: marker)})
    return jinja2.Template(body).render(changes_view=view, source_table=source_table, cdc_merge=macros)


def test_a_range_read_through_a_thrift_server_is_planned_by_one_query_as_the_pass_plans_it(spark):
    from dbt.adapters.cdc_spark import range_plan

    truncate = [("shop.a", "", "truncate", None, "0002", "f1", 8)]
    rows = range_in_driver(spark, RANGE_ROWS + truncate)
    view = f"plan_rows_{uuid.uuid4().hex}"
    rows.createOrReplaceTempView(view)
    by_pass = range_plan.plans_by_table(range_plan.range_plan_frame(rows).collect())
    for table in ("shop.a", "shop.b", "shop.c"):
        found = spark.sql(chunk_plan_sql(view, table)).collect()[0]
        assert range_plan.plan_from_query(list(found.asDict()), list(found)) == by_pass[table], table
    spark.catalog.dropTempView(view)
