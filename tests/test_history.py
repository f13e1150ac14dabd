"""cdc_history and cdc_changes against a plain-Python oracle built from the same events in true
source order (known to the generator, not taken from seq): late and replayed events, deletes,
re-inserts after delete and primary-key changes, on Spark + Iceberg and on embedded Databend.
Why over 300 lines: the oracles of histories and of change ranges its tests compare with are built here."""

from __future__ import annotations

import datetime as dt
import shutil
from decimal import Decimal

import pytest

from python_jobs.demo.generate import KEYS, build_waves, write_wave

CUSTOMERS = "shop.customers"
CUSTOMER_COLUMNS = ["id", "name", "email", "tier", "updated_at"]


def ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).replace(tzinfo=None)


def expected_history(delivered, table: str, columns: list[str], deletes: str) -> dict[tuple, list[tuple]]:
    """Per key, its versions in source order: (values..., valid_from, valid_to, is_current, is_deleted)."""
    chains: dict[tuple, list] = {}
    for event in sorted({e.index: e for e in delivered if e.table == table}.values(), key=lambda e: e.index):
        chain = chains.setdefault(event.key, [])
        is_delete = event.op == "d"
        if chain and is_delete and chain[-1]["is_deleted"]:
            continue  # a delete of a deleted key opens nothing
        image = event.before if is_delete else event.after
        valid_from = max([ts(event.ts_ms)] + [version["valid_from"] for version in chain])
        chain.append({"values": tuple((image or {}).get(column) for column in columns),
                      "valid_from": valid_from, "is_deleted": is_delete})
    result = {}
    for key, chain in chains.items():
        rows = []
        for number, version in enumerate(chain):
            following = chain[number + 1] if number + 1 < len(chain) else None
            if deletes == "hard" and version["is_deleted"]:
                continue
            rows.append((*version["values"], version["valid_from"], following and following["valid_from"],
                         following is None, version["is_deleted"]))
        if rows:
            result[key] = rows
    return result


def actual_history(project, model: str, columns: list[str], key_columns: tuple) -> dict[tuple, list[tuple]]:
    rows = project.query(
        f"select {', '.join(columns)}, valid_from, valid_to, is_current, is_deleted, _cdc_key, _cdc_seq "
        f"from {project.schema}.{model} order by _cdc_key, _cdc_seq")
    result: dict[tuple, list] = {}
    for row in rows:
        key = tuple(row[column] for column in key_columns)
        result.setdefault(key, []).append(tuple(row[c] for c in [*columns, "valid_from", "valid_to", "is_current", "is_deleted"]))
    return result


def assert_history_equals_oracle(project, delivered, model: str, deletes: str) -> None:
    expected = expected_history(delivered, CUSTOMERS, CUSTOMER_COLUMNS, deletes)
    actual = actual_history(project, model, CUSTOMER_COLUMNS, KEYS[CUSTOMERS])
    # A soft-deleted key's delete version carries the key from the before image: its other columns as sent.
    missing = expected.keys() - actual.keys()
    extra = actual.keys() - expected.keys()
    wrong = [key for key in expected.keys() & actual.keys() if expected[key] != actual[key]]
    assert not (missing or extra or wrong), (
        f"{len(missing)} keys missing, {len(extra)} unexpected, {len(wrong)} wrong chains; e.g. missing {sorted(missing)[:3]}, "
        f"unexpected {sorted(extra)[:3]}, wrong {[(key, expected[key], actual[key]) for key in wrong[:1]]}")


def write_history_model(project, name: str, config: str) -> None:
    sql = (project.project_dir / "models" / "history" / "customers_history.sql").read_text()
    start, end = sql.index("config("), sql.index("}}")
    sql = sql[:start] + f"config(materialized='cdc_history', unique_key='id', source_table='shop.customers', {config})\n" + sql[end:]
    (project.project_dir / "models" / "history" / f"{name}.sql").write_text(sql)


@pytest.mark.parametrize("deletes", ["hard", "soft"])
def test_history_equals_oracle_with_late_and_replayed_events(conformance_project, deletes):
    late_and_replayed_events_equal_oracle(conformance_project, deletes)


def test_a_history_whose_chain_is_one_statement_equals_oracle(dbt_project, history_chain_in_one_statement):
    # On Spark in this process a batch's chain is computed step by step (history_stages.py); here as a Thrift server's.
    late_and_replayed_events_equal_oracle(dbt_project, "hard")
    assert history_chain_in_one_statement


def late_and_replayed_events_equal_oracle(project, deletes: str) -> None:
    write_history_model(project, "customers_versions", f"deletes='{deletes}'")
    _, waves = build_waves(5, events=600, waves=3, connector="postgresql", snapshot_rows=20,
                           late_fraction=0.08, duplicate_fraction=0.05)
    delivered = []
    for wave in waves:
        write_wave(wave, project.inbox)
        delivered += wave.delivered
        project.land(KEYS)
        project.dbt("run", "--select", "customers_versions")
        assert_history_equals_oracle(project, delivered, "customers_versions", deletes)

    # Every file again under a new name: the history does not change, not even its snapshot.
    before = project.table_version(f"{project.schema}.customers_versions")
    for path in sorted(project.inbox.iterdir()):
        shutil.copy(path, path.with_name("again-" + path.name))
    project.land(KEYS)
    project.dbt("run", "--select", "customers_versions")
    assert_history_equals_oracle(project, delivered, "customers_versions", deletes)
    assert project.table_version(f"{project.schema}.customers_versions") == before


def comparable(value):
    """Images compared across engines: JSON parsed, scalars as text, timestamps as datetimes."""
    import json
    import re

    if isinstance(value, (str, bytes)) and str(value)[:1] in "{[":
        value = json.loads(value, parse_float=Decimal)
    if isinstance(value, dict):
        return {name: comparable(field) for name, field in value.items()}
    if value is None:
        return None
    text = value.isoformat() if isinstance(value, dt.datetime) else str(value)
    if re.match(r"^-?[0-9]+(\.[0-9]+)?$", text):
        return Decimal(text)  # 12.50 and 12.5: the mirror's decimal(18,2) shows the scale, the event the source text
    if re.match(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d", text):
        return dt.datetime.fromisoformat(text.rstrip("Z").replace(" ", "T")).replace(tzinfo=None)
    return text


def json_image(row):
    import json

    from python_jobs.demo.generate import _RAW_NUMBER, _json_row

    return None if row is None else comparable(_RAW_NUMBER.sub(r"\1", json.dumps(_json_row(row), ensure_ascii=False)))


def expected_changes(delivered, table: str, from_ms: int, to_ms: int, keys=None) -> list[dict]:
    """The oracle of cdc_changes(): per change in the range, in source order, its four images."""
    from python_jobs.demo.generate import replay

    latest = replay(delivered)[table]
    previous: dict[tuple, object] = {}
    result = []
    for event in sorted({e.index: e for e in delivered if e.table == table}.values(), key=lambda e: e.index):
        pre = event.before if event.before is not None else previous.get(event.key)
        previous[event.key] = None if event.op == "d" else event.after
        if not (from_ms <= event.ts_ms < to_ms) or (keys and event.key[0] not in keys):
            continue
        post = None if event.op == "d" else event.after
        pre_image, post_image = json_image(pre), json_image(post)
        change = None if post_image is None else {
            name: value for name, value in post_image.items() if pre_image is None or pre_image.get(name) != value}
        order = (event.position, not event.snapshot, "[" + ",".join(f'"{value}"' for value in event.key) + "]")
        result.append({"order": order, "key": event.key, "operation": {"c": "insert", "u": "update", "d": "delete", "r": "read"}[event.op],
                       "change_ts": ts(event.ts_ms), "pre_image": pre_image, "post_image": post_image,
                       "change_image": change, "latest_image": json_image(latest.get(event.key))})
    # Source order: seq, then the key's text (snapshot rows of many keys share one position).
    return [{name: value for name, value in row.items() if name != "order"} for row in sorted(result, key=lambda row: row["order"])]


def actual_changes(project, model: str) -> list[dict]:
    import json

    rows = project.query(f"select * from {project.schema}.{model} order by _cdc_seq, _cdc_key")
    return [{"key": tuple(int(value) for value in json.loads(row["_cdc_key"])), "operation": row["operation"],
             "change_ts": row["change_ts"], **{name: comparable(row.get(name)) for name in
                                               ("pre_image", "post_image", "change_image", "latest_image")}}
            for row in rows]


def assert_same_changes(actual: list[dict], expected: list[dict]) -> None:
    """Equal lists of changes; else the first change that differs, field by field."""
    for number, (got, want) in enumerate(zip(actual, expected)):
        wrong = {name: (got.get(name), want[name]) for name in want if got.get(name) != want[name]}
        assert not wrong, f"change {number} of key {want['key']}: (actual, expected) {wrong}"
    assert len(actual) == len(expected)


def write_changes_model(project, name: str, from_ts: str, to_ts: str, keys=None) -> None:
    """A table of the changes of shop.orders (updates without before images: pre images come from the log)."""
    keys_argument = f", keys={keys!r}" if keys else ""
    (project.project_dir / "models" / "history" / f"{name}.sql").write_text(
        "{{ config(materialized='table') }}\n"
        f"select * from ({{{{ cdc_merge.cdc_changes('shop.orders', '{from_ts}', '{to_ts}'{keys_argument}, "
        "mirror=ref('shop_orders')) }}) as changes\n")


def ms_text(ms: int) -> str:
    return ts(ms).isoformat(sep=" ", timespec="milliseconds")


def test_changes_in_a_time_range_equal_oracle_and_a_trimmed_log_fails(conformance_project):
    project = conformance_project
    write_history_model(project, "customers_versions", "deletes='hard'")
    source, waves = build_waves(9, events=500, waves=2, connector="postgresql", snapshot_rows=15,
                                late_fraction=0.08, duplicate_fraction=0.05)
    delivered = []
    for wave in waves:
        write_wave(wave, project.inbox)
        delivered += wave.delivered
        project.land(KEYS)
    first_ms = min(e.ts_ms for e in source.events)
    last_ms = max(e.ts_ms for e in source.events)
    from_ms, to_ms = first_ms + (last_ms - first_ms) // 3, first_ms + 2 * (last_ms - first_ms) // 3
    orders = "shop.orders"
    keys = sorted({e.key[0] for e in source.events if e.table == orders and e.op == "u" and from_ms <= e.ts_ms < to_ms})[:3]
    write_changes_model(project, "order_changes_range", ms_text(from_ms), ms_text(to_ms))
    write_changes_model(project, "order_changes_keys", ms_text(first_ms), ms_text(last_ms + 1), keys)
    project.dbt("run", "--select", "shop_orders", "customers_versions", "order_changes_range", "order_changes_keys")

    expected = expected_changes(delivered, orders, from_ms, to_ms)
    assert len(expected) > 20 and {row["operation"] for row in expected} >= {"insert", "update", "delete"}
    assert any(row["operation"] == "update" and row["pre_image"] for row in expected)
    assert_same_changes(actual_changes(project, "order_changes_range"), expected)
    by_key = expected_changes(delivered, orders, first_ms, last_ms + 1, keys)
    assert len({row["key"] for row in by_key}) == 3
    assert_same_changes(actual_changes(project, "order_changes_keys"), by_key)
    assert_history_equals_oracle(project, delivered, "customers_versions", "hard")
    project.dbt("test", "--select", "customers_versions")

    # Retention trims the raw log: events of the first third are gone.
    raw = f"{project.raw_schema}.raw_events"
    project.execute(f"delete from {raw} where source_ts < cast('{ms_text(from_ms)}' as timestamp)")
    error = str(project.dbt("run", "--select", "order_changes_keys", expect_success=False).result.results[0].message)
    assert "was trimmed by retention" in error and "Ask for a range that starts at or after" in error
    # From the oldest change the log still holds of the table the range is answered. A key's first
    # change in it whose previous event was trimmed has no pre image to rebuild: post images compared.
    (oldest,) = project.query(f"select min(source_ts) as oldest from {raw} where table_name = '{orders}'")
    oldest_ms = round(oldest["oldest"].replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
    write_changes_model(project, "order_changes_retained", ms_text(oldest_ms), ms_text(to_ms))
    project.dbt("run", "--select", "order_changes_retained")
    retained = expected_changes(delivered, orders, oldest_ms, to_ms)
    assert [(row["key"], row["operation"], row["post_image"]) for row in actual_changes(project, "order_changes_retained")] == [
        (row["key"], row["operation"], row["post_image"]) for row in retained]
    error = str(project.dbt("run", "--select", "customers_versions", "--full-refresh", expect_success=False).result.results[0].message)
    assert "was trimmed by retention" in error and "allow_trimmed_log=true" in error
    # The history built before the trim is kept whole.
    assert_history_equals_oracle(project, delivered, "customers_versions", "hard")


def test_track_columns_open_versions_only_when_they_change(conformance_project):
    """Only a change of status opens a version; a change of note alone updates the current
    version in place, also when it arrives late; deletes close, re-inserts open."""
    from test_materialization import postgres_line

    project = conformance_project
    (project.project_dir / "models" / "history" / "doc_status.sql").write_text("""
{{ config(materialized='cdc_history', unique_key='id', source_table='public.docs', track_columns=['status']) }}
select
    {{ cdc_merge.cdc_columns({'id': 'int', 'status': 'string', 'note': 'string'}) }},
    {{ cdc_merge.cdc_metadata_columns() }}
from {{ cdc_merge.cdc_events(ref('raw_events')) }}
""")
    docs = {"public.docs": ["id"]}

    def land_and_run(name: str, lines: list[str]) -> list[tuple]:
        (project.inbox / name).write_text("\n".join(lines) + "\n")
        project.land(docs)
        project.dbt("run", "--select", "doc_status")
        return [tuple(row.values()) for row in project.query(
            f"select id, status, note, valid_from, valid_to, is_current from {project.schema}.doc_status order by id, _cdc_seq")]

    def at(lsn):
        return ts(1_767_225_600_000 + lsn)

    assert land_and_run("1.json", [
        postgres_line("c", 100, {"id": 1, "status": "new", "note": "a"}),
        postgres_line("u", 200, {"id": 1, "status": "new", "note": "b"}),
        postgres_line("u", 300, {"id": 1, "status": "paid", "note": "b"}),
    ]) == [(1, "new", "b", at(100), at(300), False), (1, "paid", "b", at(300), None, True)]
    # Late: a note change between 200 and 300 updates the first version; one older than 200 changes nothing.
    assert land_and_run("2.json", [
        postgres_line("u", 250, {"id": 1, "status": "new", "note": "late"}),
        postgres_line("u", 150, {"id": 1, "status": "new", "note": "older"}),
    ]) == [(1, "new", "late", at(100), at(300), False), (1, "paid", "b", at(300), None, True)]
    # A late status change splits a version; delete and re-insert close and open.
    assert land_and_run("3.json", [
        postgres_line("u", 350, {"id": 1, "status": "held", "note": "h"}),
        postgres_line("d", 400, {"id": 1, "status": "held", "note": "h"}),
        postgres_line("c", 500, {"id": 1, "status": "paid", "note": "again"}),
    ]) == [(1, "new", "late", at(100), at(300), False), (1, "paid", "b", at(300), at(350), False),
           (1, "held", "h", at(350), at(400), False), (1, "paid", "again", at(500), None, True)]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("deletes='archive'", "deletes must be 'hard'"),
        ("track_columns=[]", "track_columns must be a non-empty list"),
        ("track_columns=['status; drop table x']", "is not a column name"),
        ("allow_trimmed_log='yes'", "allow_trimmed_log must be true or false"),
        ("max_events_per_chunk=0", "max_events_per_chunk must be a positive whole number"),
    ],
    ids=["bad-deletes", "empty-track-columns", "bad-track-column", "text-flag", "zero-chunk"],
)
def test_history_config_errors_fail_before_any_sql(dbt_project, spark, config, message):
    write_history_model(dbt_project, "bad_history", config)
    result = dbt_project.dbt("run", "--select", "bad_history", expect_success=False)
    error = str(result.result.results[0].message)
    assert message in error and "bad_history" in error
    assert not spark.catalog.tableExists(f"{dbt_project.schema}.cdc_merge_offsets")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("'shop.orders', '2026-01-02 00:00:00', '2026-01-01 00:00:00'", "is not before to_ts"),
        ("'shop.orders', 'yesterday'", "from_ts must be a UTC time"),
        ("'orders', '2026-01-01 00:00:00'", "source_table must be the schema-qualified"),
        ("'shop.orders', '2026-01-01 00:00:00', images=['pre', 'latest']", "pass mirror=ref("),
        ("'shop.orders', '2026-01-01 00:00:00', images=['before']", "before is not one"),
    ],
    ids=["empty-range", "bad-time", "unqualified-table", "latest-without-mirror", "unknown-image"],
)
def test_change_query_argument_errors_fail_at_compile_time(dbt_project, arguments, message):
    (dbt_project.project_dir / "models" / "history" / "bad_changes.sql").write_text(
        f"select * from ({{{{ cdc_merge.cdc_changes({arguments}) }}}}) as changes\n")
    result = dbt_project.dbt("compile", "--select", "bad_changes", expect_success=False)
    error = str(result.exception) if result.exception else str(result.result.results[0].message)
    assert message in error and "bad_changes" in error


def test_a_history_run_killed_between_its_removed_and_added_rows_is_healed_by_the_next(conformance_project, monkeypatch):
    """A batch's versions replaced are removed, then their new rows added: a run killed in between
    (at the add) must leave the history as the next run can rebuild. The removed rows are what the
    chains are rebuilt from."""
    import re

    from dbt.adapters.sql.connections import SQLConnectionManager

    project = conformance_project
    write_history_model(project, "customers_versions", "deletes='hard'")
    _, waves = build_waves(13, events=400, waves=2, connector="postgresql", snapshot_rows=20,
                           late_fraction=0.08, duplicate_fraction=0.0)
    write_wave(waves[0], project.inbox)
    project.land(KEYS)
    project.dbt("run", "--select", "customers_versions")
    write_wave(waves[1], project.inbox)
    project.land(KEYS)
    # On Spark the add writes to the batch's branch (customers_versions.branch_...); on Databend the
    # removes and adds are one MERGE: killed at the statement after it (the offset), once it committed.
    the_add = re.compile(rf"insert into {project.schema}\.(customers_versions(\.branch_\w+)? select|cdc_merge_offsets)")
    add_query, killed = SQLConnectionManager.add_query, []

    def dies_at_the_add(self, sql, *arguments, **options):
        if the_add.search(" ".join(sql.split())):
            killed.append(sql)
            raise RuntimeError("killed at the add")
        return add_query(self, sql, *arguments, **options)

    with monkeypatch.context() as patch:
        patch.setattr(SQLConnectionManager, "add_query", dies_at_the_add)
        assert not project.dbt("run", "--select", "customers_versions", expect_success=False).success
    assert killed
    project.dbt("run", "--select", "customers_versions")
    assert_history_equals_oracle(project, waves[0].delivered + waves[1].delivered, "customers_versions", "hard")
