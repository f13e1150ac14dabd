"""Pure DataFrame steps of the landing job."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from python_jobs.landing import io
from python_jobs.landing.schemas import INPUT_FILE_SCHEMA, QUARANTINE_SCHEMA, RAW_EVENT_SCHEMA
from python_jobs.landing.transforms import (
    PARSED_LINES_SCHEMA,
    BatchPlace,
    landed_events,
    lines_in_driver,
    parse_cdc_lines,
    parsed_lines,
    quarantined_records,
    split_lines,
)

LANDED_AT = dt.datetime(2026, 11, 22, 12, 0, 0)
KEYS = {"shop.orders": ["id"]}
INSERT = ('{"after":{"id":1,"amount":10.50},"source":{"connector":"postgresql","schema":"shop",'
          '"table":"orders","lsn":100,"ts_ms":1767225600000},"op":"c"}')
DELETE = ('{"before":{"id":1},"after":null,"source":{"connector":"postgresql","schema":"shop",'
          '"table":"orders","lsn":200,"ts_ms":1767225601000},"op":"d"}')


def parsed_sample(spark):
    files = spark.createDataFrame(
        [("a.json", f"{INSERT}\nnot json\n\n{DELETE}\nnull\n")], INPUT_FILE_SCHEMA
    )
    return parse_cdc_lines(split_lines(files), KEYS)


def test_split_lines_numbers_lines_from_one(spark):
    files = spark.createDataFrame([("a.json", "x\ny\n")], INPUT_FILE_SCHEMA)
    assertDataFrameEqual(
        split_lines(files),
        spark.createDataFrame([("a.json", 1, "x", False), ("a.json", 2, "y", False), ("a.json", 3, "", False)],
                              "landed_file string, landed_line int, line_text string, not_utf8 boolean"),
    )


def test_landed_events_keep_provenance_and_exact_images(spark):
    expected = spark.createDataFrame(
        [
            ("shop.orders", '["1"]', "insert", '{"id":1,"amount":10.50}', None,
             "00000000000000000100.00000000000000000000.0000000000.1", dt.datetime(2026, 1, 1, 0, 0, 0),
             "a.json", 1, LANDED_AT, None, None, None),
            ("shop.orders", '["1"]', "delete", None, '{"id":1}',
             "00000000000000000200.00000000000000000000.0000000000.1", dt.datetime(2026, 1, 1, 0, 0, 1),
             "a.json", 4, LANDED_AT, None, None, None),
        ],
        RAW_EVENT_SCHEMA,
    )
    assertDataFrameEqual(landed_events(parsed_sample(spark), LANDED_AT, BatchPlace(1, {"a.json": 0})), expected)


def test_events_without_a_log_position_are_ordered_by_batch_file_line_and_row(spark):
    """Canal carries no log position: a message's rows, and the lines after it, sort in the order
    they were written (the same es and id on every line), in one file and across files."""
    insert = ('{"data":[{"id":"1","v":"a"},{"id":"2","v":"b"}],"database":"shop","table":"t","pkNames":["id"],'
              '"isDdl":false,"type":"INSERT","es":1700000000000,"id":7,"ts":1700000000100}')
    update = insert.replace('"type":"INSERT"', '"type":"UPDATE"').replace('{"id":"2","v":"b"}', '{"id":"1","v":"c"}')
    positioned = INSERT
    files = spark.createDataFrame(
        [("f1", f"{insert}\n{update}\n{positioned}\n"), ("f2", f"{update}\n")], INPUT_FILE_SCHEMA
    )
    place = BatchPlace(1_795_000_000_000, {"f1": 0, "f2": 1})
    events = landed_events(parse_cdc_lines(split_lines(files), KEYS), LANDED_AT, place)
    seqs = [(row.landed_file, row.landed_line, row.key, row.seq) for row in events.orderBy("seq").collect()]
    zero = "00000000000000000000.00000000000000000000.0000000000.1"
    assert seqs == [
        ("f1", 1, '["1"]', f"{zero}.001795000000000.000000.0000000001.0000000000"),
        ("f1", 1, '["2"]', f"{zero}.001795000000000.000000.0000000001.0000000001"),
        ("f1", 2, '["1"]', f"{zero}.001795000000000.000000.0000000002.0000000000"),
        ("f1", 2, '["1"]', f"{zero}.001795000000000.000000.0000000002.0000000001"),
        ("f2", 1, '["1"]', f"{zero}.001795000000000.000001.0000000001.0000000000"),
        ("f2", 1, '["1"]', f"{zero}.001795000000000.000001.0000000001.0000000001"),
        ("f1", 3, '["1"]', "00000000000000000100.00000000000000000000.0000000000.1"),
    ]


def test_quarantine_gets_the_rejected_line_with_file_line_and_reason(spark):
    expected = spark.createDataFrame(
        [("a.json", 2, "not json", "invalid JSON: line is not a JSON object", LANDED_AT)], QUARANTINE_SCHEMA
    )
    assertDataFrameEqual(quarantined_records(parsed_sample(spark), LANDED_AT), expected)


def test_few_lines_parsed_in_the_driver_equal_the_python_workers_parse(spark):
    """The lines the JVM fast path leaves are parsed in the driver when few (land.py): the same rows
    as the Python UDF's, for events of two formats, a Canal line of two rows, a {schema, payload}
    envelope, a Kafka tombstone, a blank line, a line that is no JSON and one that is not UTF-8."""
    canal = ('{"data":[{"id":"1","v":"a"},{"id":"2","v":"b"}],"database":"shop","table":"t","pkNames":["id"],'
             '"isDdl":false,"type":"INSERT","es":1700000000000,"id":7,"ts":1700000000100}')
    enveloped = '{"schema":{"type":"struct"},"payload":' + DELETE + '}'
    text = f"{INSERT}\n{canal}\n{enveloped}\nnull\n\nnot json\n{{\"a\":\"\ufffd\"}}\n"
    files = spark.createDataFrame([("a.json", text)], INPUT_FILE_SCHEMA)
    # Line 7 stands for a line whose bytes were not UTF-8 (split_lines marks such lines).
    lines = split_lines(files).withColumn("not_utf8", F.col("landed_line") == 7)
    keys = {**KEYS, "shop.t": ["id"]}

    in_driver = io.local_relation(spark, parsed_lines(lines_in_driver(lines), keys), PARSED_LINES_SCHEMA)

    assert in_driver._jdf.queryExecution().optimizedPlan().getClass().getSimpleName() == "LocalRelation"
    assertDataFrameEqual(in_driver, parse_cdc_lines(lines, keys), checkRowOrder=False)
    statuses = sorted(row["status"] for row in in_driver.collect())
    assert statuses.count("event") == 4 and "tombstone" in statuses and statuses.count("rejected") == 2, statuses


def test_lines_read_in_the_driver_equal_split_lines_of_the_file_source(spark, tmp_path):
    """A small batch's files read in the driver (input_files.lines_of_local_files) give the lines
    split_lines gives of Spark's file source: names, numbers, texts, a last empty line, none of an
    empty file; a file that is not UTF-8 is left to Spark."""
    inbox = tmp_path / "in box"
    inbox.mkdir()
    (inbox / "a.json").write_text(f"{INSERT}\n\n{DELETE}\n", encoding="utf-8")
    (inbox / "b c.json").write_bytes("caf\u00e9 \u2603\r\nlast line".encode("utf-8"))
    (inbox / "empty.json").write_bytes(b"")
    files = (spark.read.format("text").option("wholetext", "true").load(str(inbox))
             .select(F.col("_metadata.file_path").alias("landed_file"), F.col("value").alias("content")))
    names = [row.landed_file for row in files.select("landed_file").collect()] + [
        "file:" + str(inbox / "empty.json").replace(" ", "%20")]

    read = io.lines_of_local_files(names)

    assert sorted(read) == sorted(lines_in_driver(split_lines(files)))
    assert len(read) == 6 and not any(line[3] for line in read)
    (inbox / "latin1.json").write_bytes("caf\u00e9".encode("latin-1"))
    assert io.lines_of_local_files(names + ["file:" + str(inbox / "latin1.json").replace(" ", "%20")]) is None
    assert io.lines_of_local_files(["s3a://bucket/a.json"]) is None
