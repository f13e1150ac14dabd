"""The cdc_merge materialization's contract beyond the happy path: config errors before
any SQL, rebuilds, expired offsets, and idle runs that change nothing.

Why longer than 300 lines: one file for the contract, so its cases read side by side."""

from __future__ import annotations

import re
import shutil
from decimal import Decimal

import pytest

from dbt.adapters.cdc_spark import raw_range_methods, stored_keys

from conftest import FIXTURES
from python_jobs import crash_points
from python_jobs.apply import one_commit

PRODUCTS = {"inventory.products": ["id"]}
FLINK_MYSQL = FIXTURES / "flink" / "debezium-data-schema-exclude.txt"

GOOD_CONFIG = "unique_key='id', source_table='inventory.products'"
GOOD_COLUMNS = "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('name', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}"


def write_model(dbt_project, name: str, config: str = GOOD_CONFIG, columns: str = GOOD_COLUMNS) -> None:
    dbt_project.write_model(name, config, columns)


def run_error(result) -> str:
    assert not result.success
    if result.exception is not None:
        return str(result.exception)
    return "\n".join(str(node.message) for node in result.result.results)


def table_exists(spark, name: str) -> bool:
    return spark.catalog.tableExists(name)


@pytest.mark.parametrize(
    ("config", "columns", "message"),
    [
        # Each config's own checks: tests/unit/test_mirror_config.py; here one of them reaches dbt run.
        ("source_table='inventory.products'", GOOD_COLUMNS, "set unique_key to the primary-key column"),
        (GOOD_CONFIG + ", max_events_per_chunk='lots'", GOOD_COLUMNS, "max_events_per_chunk must be a positive whole number"),
        (
            GOOD_CONFIG,
            GOOD_COLUMNS + " {% set second = source('cdc_raw', 'quarantine') %}",
            "reads exactly one raw table",
        ),
        (
            GOOD_CONFIG,
            "{{ cdc_merge.cdc_columns({'id': 'int', 'name': 'string'}, json_fields={'name': 'id'}) }}, {{ cdc_merge.cdc_metadata_columns() }}",
            "JSON field 'id' is named twice",
        ),
        (
            GOOD_CONFIG,
            "{{ cdc_merge.cdc_columns({'id': 'int'}, json_fields={'name': 'title'}) }}, {{ cdc_merge.cdc_metadata_columns() }}",
            "json_fields names name, which are not in its columns",
        ),
        # dbt keeps any config name: delete='soft' built a hard mirror without a word.
        (GOOD_CONFIG + ", delete='soft'", GOOD_COLUMNS, "delete is not a config of cdc_merge, which would ignore it: did you mean deletes?"),
    ],
    ids=["no-key", "text-chunk", "two-sources", "field-twice", "unknown-json-field", "misspelled-deletes"],
)
def test_config_errors_fail_before_any_sql(dbt_project, spark, config, columns, message):
    write_model(dbt_project, "bad_products", config, columns)
    result = dbt_project.dbt("run", "--select", "bad_products", expect_success=False)
    error = run_error(result)
    assert message in error and "bad_products" in error
    # The first statement of a run creates the offsets table: it never ran.
    assert not table_exists(spark, f"{dbt_project.schema}.cdc_merge_offsets")


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ("{{ cdc_merge.cdc_column('id', 'int') }}, _cdc_key, _cdc_seq", "must select _cdc_action"),
        ("{{ cdc_merge.cdc_column('name', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}", "unique_key column id is not selected"),
    ],
    ids=["no-metadata", "key-not-selected"],
)
def test_model_output_errors_fail_before_the_mirror_is_written(dbt_project, spark, columns, message):
    shutil.copy(FLINK_MYSQL, dbt_project.inbox / "part-1.json")
    dbt_project.land(PRODUCTS)
    write_model(dbt_project, "bad_products", columns=columns)
    error = run_error(dbt_project.dbt("run", "--select", "bad_products", expect_success=False))
    assert message in error
    assert not table_exists(spark, f"{dbt_project.schema}.bad_products")


MODEL_OVER_FINAL = """{{{{ config(unique_key='id', source_table='inventory.products') }}}}
with events as (select * from {{{{ cdc_merge.cdc_events(ref('raw_events')) }}}}),
final as (select {{{{ cdc_merge.cdc_columns({{'id': 'int', 'name': 'string'}}) }}}}, {{{{ cdc_merge.cdc_metadata_columns() }}}} from events)
{last}
"""


def test_a_model_that_can_leave_out_or_repeat_rows_is_refused_before_the_mirror_is_written(conformance_project):
    """A filter in a mirror model would leave a row that moved out of it as it was (docs/mirror_models.md):
    such a model, or one with a join and a limit, is refused by its plan (Spark's analyzed plan,
    Databend's raw one), on its first run and when it changes, before anything is written; a plain
    one (a window and a scalar subquery keep every row) runs."""
    project = conformance_project
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    model = project.project_dir / "models" / "mirrors" / "products.sql"
    model.write_text(MODEL_OVER_FINAL.format(last="select * from final where name <> 'scooter'"))
    error = run_error(project.dbt("run", "--select", "products", expect_success=False))
    assert "cdc_merge model 'products': its SQL can leave out or repeat rows of cdc_events: a where" in error
    assert "(Filter)" in error
    assert not (project.query(f"show tables from {project.schema} like 'products'") if project.on_databend
                else table_exists(project.spark, f"{project.schema}.products"))

    model.write_text(MODEL_OVER_FINAL.format(
        last="select final.*, rank() over (order by _cdc_seq) as _rank, (select max(1) from (select 1) as one) as _one from final"))
    project.dbt("run", "--select", "products")
    mirrored = products(project)
    assert len(mirrored) > 5
    model.write_text(MODEL_OVER_FINAL.format(
        last="select final.* from final left join (select 101 as id) as known on final.id = known.id limit 100"))
    error = run_error(project.dbt("run", "--select", "products", expect_success=False))
    assert ("a limit (GlobalLimit), a limit (LocalLimit), a join (Join)" in error
            or "a limit or offset (Limit), a join, intersect or except (Join)" in error), error
    assert products(project) == mirrored


def products(project) -> list[tuple]:
    return [tuple(row.values()) for row in project.query(f"select id, name from {project.schema}.products order by id")]


def test_idle_run_changes_nothing_and_full_refresh_rebuilds_the_same_mirror(conformance_project):
    project = conformance_project
    write_model(project, "products")
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "products")
    mirrored = products(project)
    assert len(mirrored) == 10  # ids 101..110, as in the fixture's .expected.txt
    before = project.table_version(f"{project.schema}.products")

    project.dbt("run", "--select", "products")
    assert project.table_version(f"{project.schema}.products") == before

    project.dbt("run", "--select", "products", "--full-refresh")
    assert products(project) == mirrored
    assert project.table_version(f"{project.schema}.products") != before


def test_an_expired_offset_fails_and_says_how_to_rebuild(conformance_project):
    project = conformance_project
    write_model(project, "products")
    raw = f"{project.raw_schema}.raw_events"
    shutil.copy(FLINK_MYSQL, project.inbox / "part-1.json")
    project.land(PRODUCTS)
    project.dbt("run", "--select", "products")
    shutil.copy(FLINK_MYSQL, project.inbox / "part-2.json")
    project.land(PRODUCTS)
    shutil.copy(FLINK_MYSQL, project.inbox / "part-3.json")
    project.land(PRODUCTS)
    # Keep only the newest raw snapshot: the mirror's offset (the first) is gone.
    assert project.history_length(raw) == 3
    newest = project.table_version(raw)
    project.expire_history(raw)
    assert (project.history_length(raw), project.table_version(raw)) == (1, newest)

    error = run_error(project.dbt("run", "--select", "products", expect_success=False))
    assert "is no longer in that table's history" in error
    assert "dbt run --full-refresh --select products" in error

    project.dbt("run", "--select", "products", "--full-refresh")
    assert [row[0] for row in products(project)] == list(range(101, 111))


def postgres_line(op: str, lsn: int, row: dict) -> str:
    import json

    return json.dumps({
        "before": row if op == "d" else None,
        "after": None if op == "d" else row,
        "source": {"connector": "postgresql", "schema": "public", "table": "docs", "lsn": lsn, "snapshot": "false",
                   "ts_ms": 1_767_225_600_000 + lsn},
        "op": op,
    })


def test_odd_field_names_and_times_an_engine_cannot_hold(conformance_project):
    """Fields named with a quote or a backslash read as any other (they were null, or failed the
    run); a time outside what the engine holds is null (Databend's dates run from year 1000 to 9999:
    it clamped year 500 to 1000-01-01 and failed the run at 'infinity'), as on Spark."""
    import datetime as dt

    project = conformance_project
    project.write_model("docs", "unique_key='id', source_table='public.docs'",
                        "{{ cdc_merge.cdc_columns({'id': 'int', 'quoted': 'string', 'slashed': 'string', "
                        "'ts': 'timestamp', 'day': 'date'}, json_fields={'quoted': \"it's\", 'slashed': 'back\\\\slash'}) }}, "
                        "{{ cdc_merge.cdc_metadata_columns() }}")
    rows = [{"id": 1, "it's": "q", "back\\slash": "b", "ts": "2026-01-02T03:04:05.123456Z", "day": "2026-01-02"},
            {"id": 2, "ts": "0500-06-01T00:00:00Z", "day": "0099-06-01"},
            {"id": 3, "ts": "infinity", "day": "-infinity"}]
    (project.inbox / "1.json").write_text("\n".join(postgres_line("c", 100 + row["id"], row) for row in rows) + "\n")
    project.land({"public.docs": ["id"]})
    project.dbt("run", "--select", "docs")
    mirrored = [tuple(row.values()) for row in project.query(
        f"select id, quoted, slashed, ts, day from {project.schema}.docs order by id")]
    early = (None, None) if project.on_databend else (dt.datetime(500, 6, 1), dt.date(99, 6, 1))
    assert mirrored == [(1, "q", "b", dt.datetime(2026, 1, 2, 3, 4, 5, 123456), dt.date(2026, 1, 2)),
                        (2, None, None, *early), (3, None, None, None, None)]


def test_text_reaches_spark_as_written(spark):
    """The adapter's string literal: quotes, backslashes, and ${...}, which Spark substitutes in a
    statement's text before it parses it (a range's key '${x}' became '')."""
    from dbt.adapters.cdc_spark.impl import _sql_literal

    for text in ("it's", "back\\slash", "${x}", "${spark:x}z", "$", "\\u0024", "line\nbreak"):
        assert spark.sql(f"select {_sql_literal(text)} as t").first().t == text


def test_unavailable_toast_values_keep_what_the_source_last_sent(conformance_project):
    dbt_project = conformance_project
    unavailable = "__debezium_unavailable_value"
    dbt_project.write_model(
        "docs", "unique_key='id', source_table='public.docs'",
        "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('title', 'string') }}, "
        "{{ cdc_merge.cdc_column('body', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}",
    )
    docs = {"public.docs": ["id"]}
    first = [
        postgres_line("c", 100, {"id": 1, "title": "a", "body": "A"}),
        postgres_line("c", 110, {"id": 2, "title": "p", "body": "X"}),
        # Key 3 is first seen in an update that did not send its body.
        postgres_line("u", 150, {"id": 3, "title": "q", "body": unavailable}),
        postgres_line("u", 200, {"id": 1, "title": "b", "body": unavailable}),
    ]
    (dbt_project.inbox / "1.json").write_text("\n".join(first) + "\n")
    second = [
        postgres_line("u", 300, {"id": 2, "title": "p", "body": "Y"}),
        postgres_line("u", 400, {"id": 2, "title": "z", "body": unavailable}),
    ]
    (dbt_project.inbox / "2.json").write_text("\n".join(second) + "\n")
    dbt_project.land(docs)
    dbt_project.dbt("run", "--select", "docs")

    def mirrored():
        return [tuple(row.values()) for row in dbt_project.query(
            f"select id, title, body from {dbt_project.schema}.docs order by id")]

    assert mirrored() == [(1, "b", "A"), (2, "z", "Y"), (3, "q", None)]

    (dbt_project.inbox / "3.json").write_text(postgres_line("u", 500, {"id": 1, "title": "c", "body": unavailable}) + "\n")
    dbt_project.land(docs)
    dbt_project.dbt("run", "--select", "docs")
    assert mirrored() == [(1, "c", "A"), (2, "z", "Y"), (3, "q", None)]
    if dbt_project.target == "local":
        # The update took its unsent body from the stored row its one commit deleted: no branch, no MERGE.
        (head,) = dbt_project.query(
            f"select summary['cdc-merge.apply'] as apply, summary['added-position-deletes'] as positions, "
            f"summary['added-records'] as records from {dbt_project.schema}.docs.snapshots order by committed_at desc limit 1")
        assert head == {"apply": "one-commit", "positions": "1", "records": "1"}


def test_a_key_updated_many_times_without_its_toast_value_shows_progress_and_keeps_the_value(conformance_project):
    """Where the engine applies such a key's events a round each (Databend: dedup.sql bucket_rounds), a
    batch of hundreds of them took minutes and said nothing until its end; it now says how far it is."""
    project = conformance_project
    unsent = "__debezium_unavailable_value"
    project.write_model(
        "docs", "unique_key='id', source_table='public.docs'",
        "{{ cdc_merge.cdc_column('id', 'int') }}, {{ cdc_merge.cdc_column('title', 'string') }}, "
        "{{ cdc_merge.cdc_column('body', 'string') }}, {{ cdc_merge.cdc_metadata_columns() }}",
    )
    lines = [postgres_line("c", 100, {"id": 1, "title": "t0", "body": "B" * 50}), postgres_line("c", 101, {"id": 2, "title": "x", "body": "C"})]
    lines += [postgres_line("u", 200 + i, {"id": 1, "title": f"t{i}", "body": unsent}) for i in range(1, 61)]
    (project.inbox / "1.json").write_text("\n".join(lines) + "\n")
    project.land({"public.docs": ["id"]})
    project.dbt("run", "--select", "docs")
    assert [tuple(row.values()) for row in project.query(f"select id, title, body from {project.schema}.docs order by id")] == [
        (1, "t60", "B" * 50), (2, "x", "C")]
    if project.on_databend:
        log = project.dbt_log()
        assert "applying events with unchanged TOAST values a round each: 25 of 61 rounds" in log, log[-3000:]
        assert "61 of 61 rounds" in log


# Waves of a key's events whose updates left their TOAST value unsent ahead of the older events that sent
# it, and the mirror after each (id, title, body): an older event fills, one older than the filler does
# not, a delete in between leaves null, a newer update without the value carries what is kept.
UNSENT = "__debezium_unavailable_value"
UNSENT_MODEL_COLUMNS = ("{{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string', 'body': 'string'}) }}, "
                        "{{ cdc_merge.cdc_metadata_columns() }}")
UNSENT_WAVES = [
    [postgres_line("c", 100, {"id": 1, "title": "a", "body": "A"}),
     postgres_line("u", 300, {"id": 1, "title": "c", "body": UNSENT}),
     postgres_line("u", 150, {"id": 2, "title": "q", "body": UNSENT}),
     postgres_line("c", 110, {"id": 3, "title": "s", "body": "X"}),
     postgres_line("u", 400, {"id": 3, "title": "t", "body": UNSENT})],
    [postgres_line("u", 200, {"id": 1, "title": "b", "body": "B"}),
     postgres_line("c", 140, {"id": 2, "title": "p", "body": "P"}),
     postgres_line("d", 200, {"id": 3, "title": "s", "body": "X"})],
    [postgres_line("u", 180, {"id": 1, "title": "x", "body": "older than B"}),
     postgres_line("c", 250, {"id": 3, "title": "r", "body": "Z"}),
     postgres_line("u", 500, {"id": 2, "title": "w", "body": UNSENT})],
    [postgres_line("u", 145, {"id": 2, "title": "y", "body": "Q"})],
]
UNSENT_EXPECTED = [
    [(1, "c", "A"), (2, "q", None), (3, "t", "X")],
    [(1, "c", "B"), (2, "q", "P"), (3, "t", None)],
    [(1, "c", "B"), (2, "w", "P"), (3, "t", "Z")],
    [(1, "c", "B"), (2, "w", "Q"), (3, "t", "Z")],
]


def test_an_update_without_its_toast_value_takes_it_from_an_older_event_that_arrives_later(conformance_project):
    """An update applied before the key's older event that sent the value (a late file) keeps the
    column as unsent (unsent_columns.sql): the older event fills it when it arrives, an event older
    than the one that filled it does not, a delete in between leaves null, and a newer update
    without the value carries what is kept, across maintenance. Landing every file again changes nothing."""
    from test_maintenance import maintain

    project = conformance_project
    project.write_model("docs", "unique_key='id', source_table='public.docs'", UNSENT_MODEL_COLUMNS)
    waves, expected = UNSENT_WAVES, UNSENT_EXPECTED

    def mirrored() -> list[tuple]:
        return [tuple(row.values()) for row in project.query(f"select id, title, body from {project.schema}.docs order by id")]

    def dead_and_live_entries() -> tuple[int, int]:
        return tuple(project.query(f"select count(*) as entries from {project.schema}.docs__cdc_unsent "
                                   f"where row_seq {kind} (select _cdc_seq from {project.schema}.docs)")[0]["entries"]
                     for kind in ("not in", "in"))

    for number, (lines, rows) in enumerate(zip(waves, expected), start=1):
        (project.inbox / f"{number}.json").write_text("\n".join(lines) + "\n")
        project.land({"public.docs": ["id"]})
        project.dbt("run", "--select", "docs")
        assert mirrored() == rows, number
        if number == 3:
            # Maintenance removes the entries of rows replaced since (key 2's at 150), and keeps the live ones.
            assert dead_and_live_entries()[0] > 0
            maintain(project, ["docs"])
            assert dead_and_live_entries()[0] == 0 and dead_and_live_entries()[1] > 0
    for number in range(1, len(waves) + 1):
        (project.inbox / f"again-{number}.json").write_text("\n".join(waves[number - 1]) + "\n")
    project.land({"public.docs": ["id"]})
    project.dbt("run", "--select", "docs")
    assert mirrored() == expected[-1]


def test_an_unchanged_toast_value_is_not_taken_from_a_late_event_older_than_the_stored_row(conformance_project):
    """A batch held in the driver fills an update's unsent value from the key's older events of the
    batch (LocalRawRanges.java). A late event older than the stored row is one the mirror skips: its
    value is not the row's. The fill stands in only where every event is newer than the mirror."""
    project = conformance_project
    unsent = "__debezium_unavailable_value"
    project.write_model("docs", "unique_key='id', source_table='public.docs'",
                        "{{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string', 'body': 'string'}) }}, "
                        "{{ cdc_merge.cdc_metadata_columns() }}")
    docs = {"public.docs": ["id"]}
    (project.inbox / "1.json").write_text("\n".join([
        postgres_line("c", 100, {"id": 1, "title": "a", "body": "current"}),
        postgres_line("c", 110, {"id": 2, "title": "b", "body": "B"}),
    ]) + "\n")
    project.land(docs)
    project.dbt("run", "--select", "docs")
    (project.inbox / "2.json").write_text("\n".join([
        postgres_line("u", 50, {"id": 1, "title": "late", "body": "replaced since"}),  # older than the stored row
        postgres_line("u", 120, {"id": 1, "title": "c", "body": unsent}),
        postgres_line("u", 130, {"id": 2, "title": "d", "body": "B2"}),
        postgres_line("u", 140, {"id": 2, "title": "e", "body": unsent}),
    ]) + "\n")
    project.land(docs)
    project.dbt("run", "--select", "docs")
    assert [tuple(row.values()) for row in project.query(f"select id, title, body from {project.schema}.docs order by id")] == [
        (1, "c", "current"), (2, "e", "B2")]


def test_unchanged_toast_values_of_columns_named_apart_from_their_field_keep_the_mirrors_value(conformance_project):
    """A column read from a JSON field of another name (cdc_columns' json_fields, which cdc-scaffold
    writes for a source column named `order` or `two words`; cdc_column's json_field) held Debezium's
    placeholder text after an update that left its TOAST value unchanged: _cdc_unavailable named the
    field, and the mirror looked for the column's name."""
    project = conformance_project
    unsent = "__debezium_unavailable_value"
    columns = "{{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string', 'content': 'string'}, json_fields={'content': 'body'}) }}"
    project.write_model("docs", "unique_key='id', source_table='public.docs'",
                        f"{columns}, {{{{ cdc_merge.cdc_column('note', 'string', json_field='two words') }}}}, "
                        "{{ cdc_merge.cdc_metadata_columns() }}")
    (project.inbox / "1.json").write_text("\n".join([
        postgres_line("c", 100, {"id": 1, "title": "a", "body": "A", "two words": "N"}),
        postgres_line("u", 150, {"id": 2, "title": "q", "body": unsent, "two words": unsent}),
        postgres_line("u", 200, {"id": 1, "title": "b", "body": unsent, "two words": unsent}),
    ]) + "\n")
    project.land({"public.docs": ["id"]})
    project.dbt("run", "--select", "docs")
    assert [tuple(row.values()) for row in project.query(
        f"select id, title, content, note from {project.schema}.docs order by id")] == [(1, "b", "A", "N"), (2, "q", None, None)]

    # The renames are noted as the columns render: the metadata columns after them.
    project.write_model("docs", "unique_key='id', source_table='public.docs'", "{{ cdc_merge.cdc_metadata_columns() }}, " + columns)
    error = run_error(project.dbt("run", "--select", "docs", expect_success=False))
    assert "selects cdc_metadata_columns() before the columns it reads from JSON fields of other names (content)" in error


def test_unchanged_toast_values_skip_the_events_a_newer_one_sends_over(conformance_project, monkeypatch):
    """A key's events with TOAST placeholders were applied one per round, each round a MERGE of 2-4 s:
    a key updated 20 times without its TOAST value took 20 rounds (46 s against 3 s with the value
    sent). An event whose next newer one sends every field it sends is skipped: the mirror holds
    the same rows. On Databend only the events before one without placeholders are skipped. On Spark
    a batch held in the driver needs no rounds: each key's newest event takes the values its older
    events sent there (LocalRawRanges.java), and the batch is one commit; that every event is newer
    than the mirror is read from its manifests' bounds of _cdc_seq, with no query."""
    project = conformance_project
    unsent = "__debezium_unavailable_value"
    stored_seq_queries = []
    newest_stored_seq = raw_range_methods._newest_stored_seq
    monkeypatch.setattr(raw_range_methods, "_newest_stored_seq",
                        lambda *args: stored_seq_queries.append(args) or newest_stored_seq(*args))
    project.write_model("docs", "unique_key='id', source_table='public.docs'",
                        "{{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string', 'body': 'string', 'note': 'string'}) }}, "
                        "{{ cdc_merge.cdc_metadata_columns() }}")
    docs = {"public.docs": ["id"]}
    (project.inbox / "1.json").write_text("\n".join([
        postgres_line("c", 100, {"id": 1, "title": "a", "body": "A", "note": "N"}),
        postgres_line("c", 110, {"id": 2, "title": "p", "body": "X", "note": "M"}),
    ]) + "\n")
    project.land(docs)
    project.dbt("run", "--select", "docs")
    (project.inbox / "2.json").write_text("\n".join([
        # Key 1: b and c go (each next one sends what they send); d sent the body, e keeps it.
        *(postgres_line("u", lsn, {"id": 1, "title": title, "body": unsent, "note": unsent}) for lsn, title in ((200, "b"), (210, "c"))),
        postgres_line("u", 220, {"id": 1, "title": "d", "body": "B", "note": unsent}),
        postgres_line("u", 230, {"id": 1, "title": "e", "body": unsent, "note": unsent}),
        # Key 2: each sends a value the other does not: both apply.
        postgres_line("u", 300, {"id": 2, "title": "q", "body": unsent, "note": "M2"}),
        postgres_line("u", 310, {"id": 2, "title": "r", "body": "X2", "note": unsent}),
        # Key 3: deleted and inserted again in the batch; its update after keeps the new values.
        postgres_line("c", 400, {"id": 3, "title": "s", "body": "S", "note": "T"}),
        postgres_line("u", 410, {"id": 3, "title": "t", "body": unsent, "note": unsent}),
        postgres_line("d", 420, {"id": 3, "title": "t", "body": unsent, "note": unsent}),
        postgres_line("c", 430, {"id": 3, "title": "u", "body": "U", "note": "V"}),
        *(postgres_line("u", 440 + n, {"id": 3, "title": f"w{n}", "body": unsent, "note": unsent}) for n in range(20)),
    ]) + "\n")
    project.land(docs)
    snapshots = None if project.on_databend else len(project.query(f"select * from {project.schema}.docs.snapshots"))
    project.dbt("run", "--select", "docs")
    assert [tuple(row.values()) for row in project.query(f"select id, title, body, note from {project.schema}.docs order by id")] == [
        (1, "e", "B", "N"), (2, "r", "X2", "M2"), (3, "w19", "U", "V")]
    summary = [line for line in project.dbt_log().splitlines() if f"{project.schema}.docs: 1 chunk(s)" in line][-1]
    # The rounds' counts add up: on Databend 28 events in 22 rounds (before the skips, all 30 in 24);
    # on Spark one event a key, in one commit (with the rounds, 7 events in 3 rounds and commits).
    assert ("28 keys changed" if project.on_databend else "3 keys changed") in summary, summary
    if not project.on_databend:
        assert len(project.query(f"select * from {project.schema}.docs.snapshots")) == snapshots + 1
        assert stored_seq_queries == []


def docs_mirror_with_a_pending_batch(project) -> str:
    """A mirror of public.docs holding ids 1-3, and a landed batch that updates 1, deletes 2, inserts 4."""
    project.write_model(
        "docs", "unique_key='id', source_table='public.docs'",
        "{{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}",
    )
    docs = {"public.docs": ["id"]}
    (project.inbox / "1.json").write_text("\n".join(
        postgres_line("c", 100 + i, {"id": i, "title": "v1"}) for i in (1, 2, 3)) + "\n")
    project.land(docs)
    project.dbt("run", "--select", "docs")
    (project.inbox / "2.json").write_text("\n".join([
        postgres_line("u", 200, {"id": 1, "title": "v2"}),
        postgres_line("d", 210, {"id": 2, "title": "v1"}),
        postgres_line("c", 220, {"id": 4, "title": "v1"}),
    ]) + "\n")
    project.land(docs)
    return f"{project.schema}.docs"


def record_statements(monkeypatch, dies_at: str | None = None) -> list[str]:
    """Every statement the session's cursor runs from now on (session_cursor.py), without dbt's
    comment, and every query the adapter keeps as a checkpoint ("checkpoint <view> as <query>"); the
    run dies (raises) at the first one that contains dies_at."""
    from dbt.adapters.cdc_spark.impl import CdcSparkAdapter
    from dbt.adapters.cdc_spark.session_cursor import KeptSettingsCursor

    statements = []
    execute = KeptSettingsCursor.execute
    create_checkpoint_view = CdcSparkAdapter.create_checkpoint_view

    def record(sql):
        statements.append(" ".join(re.sub(r"^\s*/\*.*?\*/", "", sql, flags=re.S).split()))
        if dies_at is not None and dies_at in statements[-1]:
            raise RuntimeError(f"killed at {dies_at}")

    def recorded(self, sql, *parameters):
        record(sql)
        return execute(self, sql, *parameters)

    def recorded_checkpoint(self, view_name, sql, *observed):
        record(f"checkpoint {view_name} as {sql}")
        return create_checkpoint_view(self, view_name, sql, *observed)

    monkeypatch.setattr(KeptSettingsCursor, "execute", recorded)
    monkeypatch.setattr(CdcSparkAdapter, "create_checkpoint_view", recorded_checkpoint)
    return statements


def delete_replaced_rows_by_merge(monkeypatch) -> None:
    """The apply deletes replaced rows with a MERGE, as it does where deletes by position are not
    available (thrift, partitioned or format-3 mirrors): position_deletes.py with its jar turned off."""
    monkeypatch.setenv("CDC_MERGE_ICEBERG_JVM_JAR", "")


def test_a_small_batch_is_one_commit_and_a_run_that_dies_before_it_leaves_no_file(dbt_project, monkeypatch, warehouse):
    """A small batch's deletes by position and new rows are written as files and committed to main
    together (OneCommitBatch.java), with no branch; a run that dies once the files are written and
    before the commit changes nothing readers see and leaves none of its files."""
    project = dbt_project
    mirror = docs_mirror_with_a_pending_batch(project)
    files_before = {path.name for path in warehouse.rglob("*.parquet")}

    def dies_before_commit(point):
        if point == "apply-before-publish":
            raise RuntimeError("killed before the commit")

    with monkeypatch.context() as patch:
        patch.setattr(crash_points, "crash_point", dies_before_commit)
        statements = record_statements(patch)
        assert "killed before the commit" in run_error(project.dbt("run", "--select", "docs", expect_success=False))
    assert not [sql for sql in statements if "branch" in sql], statements
    # Classified against the stored rows read in the driver (stored_keys.py), not by a scan of the mirror.
    (classification,) = [sql for sql in statements if sql.startswith("checkpoint docs__cdc_changes as")]
    assert "try_element_at( from_json(" in classification and "stored._cdc_key" not in classification
    assert [(row["id"], row["title"]) for row in project.query(f"select id, title from {mirror} order by id")] == [
        (1, "v1"), (2, "v1"), (3, "v1")]
    assert not [name for name in {path.name for path in warehouse.rglob("*.parquet")} - files_before if "cdc-merge" in name]

    project.dbt("run", "--select", "docs")
    assert [(row["id"], row["title"]) for row in project.query(f"select id, title from {mirror} order by id")] == [
        (1, "v2"), (3, "v1"), (4, "v1")]
    (head,) = project.query(
        f"select operation, summary['cdc-merge.apply'] as apply, summary['added-position-deletes'] as positions, "
        f"summary['added-records'] as records from {mirror}.snapshots order by committed_at desc limit 1")
    assert head == {"operation": "overwrite", "apply": "one-commit", "positions": "2", "records": "2"}
    assert sorted(row["name"] for row in project.query(f"select name from {mirror}.refs")) == ["main"]


@pytest.mark.parametrize("deleted_by", ["position", "merge"])
def test_a_run_that_dies_between_the_mirrors_two_writes_leaves_it_as_it_was(dbt_project, monkeypatch, deleted_by):
    """The delete of replaced rows and the INSERT of new ones write to a branch that is published in
    one commit: a run that dies in between changes nothing readers see, and the next run applies
    the batch (BENCHMARKS.md, "Applied since (6)" and "(7)")."""
    project = dbt_project
    mirror = docs_mirror_with_a_pending_batch(project)
    if deleted_by == "merge":
        delete_replaced_rows_by_merge(monkeypatch)
    # A batch this small would go to the mirror in one commit (the test below): here the branch path.
    monkeypatch.setattr(one_commit, "ONE_COMMIT_MAX_EVENTS", 0)

    def mirrored():
        return [(row["id"], row["title"]) for row in project.query(f"select id, title from {mirror} order by id")]

    def branches():
        return sorted(row["name"] for row in project.query(f"select name from {mirror}.refs"))

    with monkeypatch.context() as patch:
        statements = record_statements(patch, dies_at=f"insert into {mirror}.branch_")
        assert f"killed at insert into {mirror}.branch_" in run_error(project.dbt("run", "--select", "docs", expect_success=False))
    merges = [sql for sql in statements if sql.startswith(f"merge into {mirror} ") or sql.startswith(f"merge into {mirror}.")]
    (branch_head,) = project.query(
        f"select summary['cdc-merge.deletes'] as deletes, summary['added-position-deletes'] as positions "
        f"from {mirror}.snapshots where snapshot_id = (select snapshot_id from {mirror}.refs where name = 'cdc_merge_batch')")
    if deleted_by == "merge":
        assert len(merges) == 1 and merges[0].startswith(f"merge into {mirror}.branch_cdc_merge_batch as mirror"), merges
        assert merges[0].endswith("then delete")
        assert branch_head == {"deletes": None, "positions": "2"}
    else:
        assert merges == []
        assert branch_head == {"deletes": "by-position", "positions": "2"}
        classification = next(sql for sql in statements if sql.startswith("checkpoint docs__cdc_changes as"))
        assert f"from {mirror}.branch_cdc_merge_batch as stored" in classification
    assert branches() == ["cdc_merge_batch", "main"]
    assert mirrored() == [(1, "v1"), (2, "v1"), (3, "v1")]

    project.dbt("run", "--select", "docs")
    assert mirrored() == [(1, "v2"), (3, "v1"), (4, "v1")]
    assert branches() == ["main"]
    (offset,) = project.query(
        f"select rows_inserted, rows_updated, rows_deleted from {project.schema}.cdc_merge_offsets "
        f"where target_table = '{mirror}' order by offset_ordinal desc limit 1")
    assert offset == {"rows_inserted": 1, "rows_updated": 1, "rows_deleted": 1}


@pytest.mark.parametrize("kept_in", ["driver", "block store"])
def test_the_classified_batch_is_kept_in_memory_only_while_it_applies(dbt_project, monkeypatch, spark, kept_in):
    """In dbt's own SparkSession the classified batch is kept in memory, not as an Iceberg table, and
    its counts are observed while it is computed: a batch of one commit in the driver (a local
    relation), a larger one as a local checkpoint whose rows leave Spark's block store with the batch."""
    from dbt.adapters.cdc_spark.impl import CdcSparkAdapter
    from python_jobs.apply import one_commit

    project = dbt_project
    mirror = docs_mirror_with_a_pending_batch(project)
    if kept_in == "block store":
        monkeypatch.setattr(one_commit, "ONE_COMMIT_MAX_EVENTS", 0)

    def persisted_rdds():
        # By id: an RDD left persisted by an earlier test may be cleaned up while this one runs.
        return set(spark.sparkContext._jsc.getPersistentRDDs().keys())

    persisted = {"before": persisted_rdds()}
    drop_checkpoint_view = CdcSparkAdapter.drop_checkpoint_view

    def dropped(self, view_name):
        persisted["while kept"] = persisted_rdds()
        drop_checkpoint_view(self, view_name)
        # Measured at once: rows nobody references would otherwise leave at some later JVM GC.
        persisted["after the batch"] = persisted_rdds()

    with monkeypatch.context() as patch:
        statements = record_statements(patch)
        patch.setattr(CdcSparkAdapter, "drop_checkpoint_view", dropped)
        project.dbt("run", "--select", "docs")
    assert [sql for sql in statements if "__cdc_changes as" in sql][0].startswith("checkpoint docs__cdc_changes as")
    assert not [sql for sql in statements if sql.startswith("create or replace table")]
    assert not [sql for sql in statements if "count_if(_cdc_change = 'insert')" in sql]
    (offset,) = project.query(
        f"select rows_inserted, rows_updated, rows_deleted from {project.schema}.cdc_merge_offsets "
        f"where target_table = '{mirror}' order by offset_ordinal desc limit 1")
    assert offset == {"rows_inserted": 1, "rows_updated": 1, "rows_deleted": 1}
    kept = persisted["while kept"] - persisted["before"]
    # The classified batch leaves with the batch; the raw range the run read stays for the next
    # mirror that reads it (raw_ranges.py).
    assert len(kept - persisted["after the batch"]) == (1 if kept_in == "block store" else 0), persisted
    assert len(kept & persisted["after the batch"]) <= 1, persisted
    assert not spark.catalog.tableExists("docs__cdc_changes")
    assert [row["id"] for row in project.query(f"select id from {mirror} order by id")] == [1, 3, 4]


def test_the_mirrors_merge_runs_with_settings_that_prune_the_mirror_by_bloom_filter(dbt_project, monkeypatch, spark):
    """Runtime bloom filters, which Spark's defaults leave to scans over 10 GB, are on for the mirror's
    MERGE alone (where replaced rows are not deleted by position), and with them a shuffle join of the mirror with filtered keys prunes the mirror."""
    from python_jobs.landing import io

    project = dbt_project
    mirror = docs_mirror_with_a_pending_batch(project)
    delete_replaced_rows_by_merge(monkeypatch)
    with monkeypatch.context() as patch:
        statements = record_statements(patch)
        project.dbt("run", "--select", "docs")
    merge = next(i for i, sql in enumerate(statements) if sql.startswith(f"merge into {mirror}.branch_"))
    settings = {}
    for sql in reversed(statements[:merge]):
        if not sql.startswith("set "):
            break
        settings.update([sql[len("set "):].split("=", 1)])
    assert "spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold" in settings
    assert statements[merge + 1: merge + 1 + len(settings)] == [f"reset {name}" for name in reversed(settings)]
    assert not [sql for sql in statements[:merge - len(settings)] + statements[merge + 1:] if sql.startswith("set ") and "=" in sql]

    join = (f"select stored.id from {mirror} as stored join {project.raw_schema}.raw_events as raw "
            "on stored._cdc_key = raw.key where raw.action = 'delete'")
    with io.session_conf(spark, {**settings, "spark.sql.autoBroadcastJoinThreshold": "-1"}):
        assert "might_contain" in spark.sql(join)._jdf.queryExecution().optimizedPlan().toString()
    with io.session_conf(spark, {"spark.sql.autoBroadcastJoinThreshold": "-1"}):
        assert "might_contain" not in spark.sql(join)._jdf.queryExecution().optimizedPlan().toString()


@pytest.mark.parametrize("path", ["one-commit", "branch"])
def test_tombstones_are_inserted_until_a_key_of_the_batch_has_one_then_merged(dbt_project, monkeypatch, path):
    """A batch none of whose keys has a tombstone adds its deletes' tombstones with an INSERT; one
    that meets a tombstone needs the MERGE, which moves it forward, drops it when the key comes back,
    and keeps an older event from bringing a deleted key back. A small batch (one commit) writes the
    same by position in one commit of the tombstones, once they have a snapshot to classify against."""
    project = dbt_project
    if path == "branch":
        monkeypatch.setattr(one_commit, "ONE_COMMIT_MAX_EVENTS", 0)
    mirror = docs_mirror_with_a_pending_batch(project)
    tombstones = f"{mirror}__cdc_tombstones"
    keys = {row["id"]: row["_cdc_key"] for row in project.query(f"select id, _cdc_key from {mirror}")}

    def newest_commit():
        rows = project.query(f"select snapshot_id, summary['cdc-merge.apply'] as apply from {tombstones}.snapshots "
                             "order by committed_at desc limit 1")
        return rows[0] if rows else None

    def run_batch(lines=None):
        if lines:
            (project.inbox / f"{len(list(project.inbox.iterdir())) + 1}.json").write_text("\n".join(lines) + "\n")
            project.land({"public.docs": ["id"]})
        before = newest_commit()
        with monkeypatch.context() as patch:
            statements = record_statements(patch)
            project.dbt("run", "--select", "docs")
        writes = [sql.split(" ", 1)[0] for sql in statements if f"into {tombstones} " in sql]
        after = newest_commit()
        if after != before and after["apply"] == "one-commit":
            writes.append("one-commit")
        ids = [row["id"] for row in project.query(f"select id from {mirror} order by id")]
        stored = {row["_cdc_key"] for row in project.query(f"select _cdc_key from {tombstones}")}
        return writes, ids, stored

    # The pending batch deletes 2: no key of it has a tombstone, and the tombstones no snapshot yet.
    assert run_batch() == (["insert"], [1, 3, 4], {keys[2]})
    # 2 comes back and 4 goes: the MERGE drops 2's tombstone and adds 4's.
    keys[4] = project.query(f"select _cdc_key from {mirror} where id = 4")[0]["_cdc_key"]
    assert run_batch([
        postgres_line("c", 300, {"id": 2, "title": "v3"}),
        postgres_line("d", 310, {"id": 4, "title": "v1"}),
    ]) == (["merge" if path == "branch" else "one-commit"], [1, 2, 3], {keys[4]})
    # An update of 4 older than its delete arrives late: its tombstone skips it, and stays.
    assert run_batch([postgres_line("u", 305, {"id": 4, "title": "late"})]) == ([], [1, 2, 3], {keys[4]})
    # 4 is deleted again, later: its tombstone moves forward, and an event between the two deletes stays skipped.
    assert run_batch([postgres_line("d", 400, {"id": 4, "title": "v1"})])[::2] == (
        ["merge" if path == "branch" else "one-commit"], {keys[4]})
    assert project.query(f"select _cdc_seq from {tombstones}") == project.query(
        f"select max(seq) as _cdc_seq from {project.raw_schema}.raw_events where action = 'delete'")
    assert run_batch([postgres_line("u", 350, {"id": 4, "title": "late"})]) == ([], [1, 2, 3], {keys[4]})


def test_text_keys_of_any_characters_find_their_rows_inside_the_batch_key_range(conformance_project):
    """The mirror's reads are bounded by each bucket's key range (hex-encoded literals); keys at its
    ends, with quotes, backslashes, control and non-ASCII characters, must still find their rows."""
    project = conformance_project
    project.write_model(
        "tags", "unique_key='code', source_table='public.docs', max_events_per_chunk=3",
        "{{ cdc_merge.cdc_columns({'code': 'string', 'title': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}",
    )
    codes = ["O'Brien", 'say "hi"', "back\\slash", "\\'", "caf\u00e9 \U0001F600", "tab\tand\nline", "zz", "A"]
    (project.inbox / "1.json").write_text(
        "\n".join(postgres_line("c", 100 + i, {"code": code, "title": "v1"}) for i, code in enumerate(codes)) + "\n")
    project.land({"public.docs": ["code"]})
    project.dbt("run", "--select", "tags")
    # The first and last keys in text order are deleted, every other key updated.
    ends = {min(codes), max(codes)}
    (project.inbox / "2.json").write_text("\n".join(
        postgres_line("d", 200 + i, {"code": code}) if code in ends else postgres_line("u", 200 + i, {"code": code, "title": "v2"})
        for i, code in enumerate(codes)) + "\n")
    project.land({"public.docs": ["code"]})
    project.dbt("run", "--select", "tags")
    rows = [tuple(row.values()) for row in project.query(f"select code, title from {project.schema}.tags")]
    assert sorted(rows) == sorted((code, "v2") for code in codes if code not in ends)


def test_a_chunked_mirror_on_a_shared_raw_table_chunks_its_own_events(dbt_project):
    """The raw snapshots' added records count every source table's events; a chunked mirror plans
    with its own table's (snapshot_events.py), so the landings of other tables make no chunks."""
    project = dbt_project
    project.write_model(
        "docs", "unique_key='id', source_table='public.docs', max_events_per_chunk=15",
        "{{ cdc_merge.cdc_columns({'id': 'int', 'title': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}",
    )
    tables = {"public.docs": ["id"], "public.notes": ["id"]}
    lsn = iter(range(100, 10_000))

    def land(table: str, title: str) -> None:
        lines = [postgres_line("c", next(lsn), {"id": i, "title": title}) for i in range(10)]
        if table == "notes":
            lines = [line.replace('"table": "docs"', '"table": "notes"') for line in lines]
        (project.inbox / f"{next(lsn)}.json").write_text("\n".join(lines) + "\n")
        project.land(tables)

    land("docs", "v1")
    for _ in range(5):
        land("notes", "n")
    land("docs", "v2")
    project.dbt("run", "--select", "docs")

    # 70 raw events in 7 snapshots, 20 of them the mirror's: 2 chunks, not one per snapshot.
    chunks = project.query(f"select offset_ordinal, rows_inserted, rows_updated from {project.schema}.cdc_merge_offsets "
                           f"where target_table = '{project.schema}.docs' order by offset_ordinal")
    assert [(row["rows_inserted"], row["rows_updated"]) for row in chunks] == [(10, 0), (0, 10)]
    rows = project.query(f"select id, title from {project.schema}.docs order by id")
    assert [tuple(row.values()) for row in rows] == [(i, "v2") for i in range(10)]


def test_the_batch_key_range_bounds_the_mirrors_reads_only_where_it_skips_data_files(dbt_project, monkeypatch):
    """Spark checks the key range on every stored key it reads: it is added only where Iceberg's
    file bounds say it skips a data file of the mirror. (Read by Spark's scan: a small mirror's
    keys are otherwise read in the driver, stored_keys.py, where Iceberg prunes by the keys.)"""
    monkeypatch.setattr(stored_keys, "MAX_DRIVER_RECORDS", -1)
    project = dbt_project
    project.write_model(
        "tags", "unique_key='code', source_table='public.docs'",
        "{{ cdc_merge.cdc_columns({'code': 'string', 'title': 'string'}) }}, {{ cdc_merge.cdc_metadata_columns() }}",
    )
    lsn = iter(range(100, 1000))

    def run_batch(codes: list[str], title: str) -> bool:
        """Lands a change of each code and applies it; whether the mirror's keys were read within a key range."""
        path = project.inbox / f"{next(lsn)}.json"
        path.write_text("\n".join(postgres_line("c", next(lsn), {"code": code, "title": title}) for code in codes) + "\n")
        project.land({"public.docs": ["code"]})
        with monkeypatch.context() as patch:
            statements = record_statements(patch)
            project.dbt("run", "--select", "tags")
        classification = next(sql for sql in statements if sql.startswith("checkpoint tags__cdc_changes as"))
        return "between cast(unhex(" in classification

    # Two data files: the a-keys, then the b-keys.
    run_batch(["a1", "a2", "a3", "a4"], "v1")
    run_batch(["b1", "b2", "b3", "b4"], "v1")
    assert run_batch(["a2", "a3"], "v2") is True
    assert run_batch(["a1", "b4"], "v2") is False
    rows = dict(tuple(row.values()) for row in project.query(f"select code, title from {project.schema}.tags"))
    assert rows == {"a1": "v2", "a2": "v2", "a3": "v2", "a4": "v1", "b1": "v1", "b2": "v1", "b3": "v1", "b4": "v2"}


ITEMS_COLUMNS = {"id": "int", "title": "string", "price": "decimal(10,2)", "sold_at": "timestamp", "qty": "bigint"}


def test_cdc_columns_give_what_cdc_column_gives(conformance_project):
    """cdc_columns() parses the row once; its values must be cdc_column()'s, renamed fields included."""
    project = conformance_project
    one_by_one = ", ".join(
        f"{{{{ cdc_merge.cdc_column('{name}', '{data_type}'{', ' + repr('title text') if name == 'title' else ''}) }}}}"
        for name, data_type in ITEMS_COLUMNS.items()
    )
    together = f"{{{{ cdc_merge.cdc_columns({ITEMS_COLUMNS!r}, json_fields={{'title': 'title text'}}) }}}}"
    for name, columns in (("items_one_by_one", one_by_one), ("items_together", together)):
        project.write_model(name, "unique_key='id', source_table='public.docs'",
                            columns + ", {{ cdc_merge.cdc_metadata_columns() }}")
    lines = [
        postgres_line("c", 100, {"id": 1, "title text": "a", "price": 12.5, "sold_at": "2026-01-02T03:04:05.123Z", "qty": 2**40}),
        postgres_line("c", 110, {"id": 2, "title text": None, "price": 0.1, "sold_at": None, "qty": None}),
        postgres_line("u", 120, {"id": 1, "title text": "b \u00e9", "price": 99999999.99, "sold_at": "2026-01-03T00:00:00Z", "qty": -1}),
        postgres_line("c", 130, {"id": 3, "price": 7}),
    ]
    (project.inbox / "1.json").write_text("\n".join(lines) + "\n")
    project.land({"public.docs": ["id"]})
    project.dbt("run", "--select", "items_one_by_one", "items_together")

    def mirrored(name):
        return [tuple(row.values()) for row in project.query(
            f"select {', '.join(ITEMS_COLUMNS)} from {project.schema}.{name} order by id")]

    expected = mirrored("items_one_by_one")
    assert [row[:3] for row in expected] == [(1, "b \u00e9", Decimal("99999999.99")), (2, None, Decimal("0.10")), (3, None, Decimal("7.00"))]
    assert mirrored("items_together") == expected


def test_cdc_columns_parse_each_row_once_on_spark(dbt_project, spark):
    """Spark's optimizer cuts a bare from_json(...).field down to that one field, so each column
    would parse the row again; every from_json of cdc_columns() must keep the whole schema."""
    dbt_project.write_model("items", "unique_key='id', source_table='public.docs'",
                            f"{{{{ cdc_merge.cdc_columns({ITEMS_COLUMNS!r}) }}}}, {{{{ cdc_merge.cdc_metadata_columns() }}}}")
    # Rows from a table, not literals: the optimizer would fold a literal row into constants.
    spark.sql(f"""insert into {dbt_project.raw_schema}.raw_events
                  select 'public.docs', concat('["', id, '"]'), 'insert', concat('{{"id": ', id, '}}'), null,
                      cast(id as string), null, 'items.json', cast(id as int), current_timestamp(), null, null, null
                  from range(1, 3)""")
    # dbt compile puts the pending events' query in place of cdc_events() (preview.sql).
    dbt_project.dbt("compile", "--select", "items")
    compiled = next((dbt_project.project_dir / "target" / "compiled").rglob("items.sql")).read_text()
    plan = spark.sql(compiled)._jdf.queryExecution().optimizedPlan().toString()
    schemas = re.findall(r"from_json\((.*?), \(mode,PERMISSIVE\)", plan)
    # Each column's whole-schema parse (its row-unread field beside the columns); a number field's
    # second read, as text, has its one field and runs only for a row the first did not read whole.
    whole = [schema for schema in schemas if schema.count("StructField(") > 1]
    assert len(whole) >= len(ITEMS_COLUMNS), plan
    assert all(schema.count("StructField(") in (len(ITEMS_COLUMNS), len(ITEMS_COLUMNS) + 1) for schema in whole), plan
    assert sorted(row["id"] for row in spark.sql(compiled).collect()) == [1, 2]
