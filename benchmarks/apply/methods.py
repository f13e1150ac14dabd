"""SQL of the baselines and of the lever prototypes, run directly in PySpark.

Nothing here is product code: the product path is `dbt run` of a cdc_merge mirror
(run.py). These are the yardsticks it is compared with, and hand-written variants of its
statements that measure a lever before anyone changes the macros.
"""

from __future__ import annotations

import time

from pyspark.sql import functions as F

from benchmarks.common.datagen import COLUMNS, SOURCE_TABLE

MOR_PROPERTIES = (
    "'format-version' = '2', 'write.delete.mode' = 'merge-on-read', "
    "'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read'"
)
JSON_SCHEMA = ", ".join(f"{name} {dtype}" for name, dtype in COLUMNS)
NAMES = [name for name, _ in COLUMNS]
WRITTEN = NAMES + ["_cdc_key", "_cdc_seq", "_cdc_source_ts"]


def run(spark, sql: str):
    return spark.sql(sql).collect()


def key_scan_sql(target: str) -> str:
    """One scan of the target's key column; the hash sum cannot be answered from metadata."""
    return f"select sum(xxhash64(_cdc_key)) from {target}"


def fingerprint_sql(target: str) -> str:
    return f"select count(*) as n, sum(xxhash64({', '.join(WRITTEN)})) as h from {target}"


def batch_read(spark, raw_table: str, after_snapshot: str, through_snapshot: str, view: str, with_change_type: bool = False) -> None:
    """The events the snapshots after after_snapshot added (Iceberg incremental read); with_change_type: shaped
    like the product's raw-changes view (all tables, an `_change_type` column)."""
    events = (
        spark.read.format("iceberg")
        .option("start-snapshot-id", after_snapshot)
        .option("end-snapshot-id", through_snapshot)
        .load(raw_table)
    )
    if with_change_type:
        events.withColumn("_change_type", F.lit("INSERT")).createOrReplaceTempView(view)
    else:
        events.where(f"table_name = '{SOURCE_TABLE}'").createOrReplaceTempView(view)


def handwritten_merge_sql(target: str, events_view: str) -> str:
    """Baseline 1: what one writes by hand: ROW_NUMBER dedup, one from_json, one MERGE (MOR table)."""
    return f"""
    merge into {target} as t
    using (
        select
            parsed.*,
            key as _cdc_key,
            action,
            seq as _cdc_seq,
            source_ts as _cdc_source_ts
        from (
            select
                *,
                from_json(coalesce(raw_data, before_data), '{JSON_SCHEMA}') as parsed,
                row_number() over (partition by key order by seq desc) as rn
            from {events_view}
        )
        where rn = 1
    ) as s
        on t._cdc_key = s._cdc_key
    when matched and s._cdc_seq > t._cdc_seq and s.action = 'delete' then delete
    when matched and s._cdc_seq > t._cdc_seq then update set
        {', '.join(f't.{c} = s.{c}' for c in WRITTEN if c != '_cdc_key')}
    when not matched and s.action != 'delete' then insert ({', '.join(WRITTEN)})
        values ({', '.join('s.' + c for c in WRITTEN)})
    """


def rebuild_sql(target: str, raw_table: str) -> str:
    """Baseline 3: rebuild the mirror from the whole log in one CTAS (dedup + newest non-delete)."""
    return f"""
    create or replace table {target}
    using iceberg
    tblproperties ({MOR_PROPERTIES})
    as
    select
        parsed.*,
        key as _cdc_key,
        seq as _cdc_seq,
        source_ts as _cdc_source_ts
    from (
        select
            *,
            from_json(raw_data, '{JSON_SCHEMA}') as parsed,
            row_number() over (partition by key order by seq desc, landed_file desc, landed_line desc) as rn
        from {raw_table}
        where table_name = '{SOURCE_TABLE}'
    )
    where rn = 1 and action != 'delete'
    """


def _literal(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return str(value)
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"


def row_by_row(spark, target: str, events_view: str, sample: int, budget_s: float) -> dict:
    """Baseline 2: one UPDATE / DELETE / INSERT per changed key, sampled, seconds per statement."""
    rows = spark.sql(f"""
        select parsed.*, key, action, seq, cast(source_ts as string) as source_ts
        from (
            select *, from_json(coalesce(raw_data, before_data), '{JSON_SCHEMA}') as parsed,
                row_number() over (partition by key order by seq desc) as rn
            from {events_view}
        )
        where rn = 1
        order by xxhash64(key)
        limit {sample}
    """).collect()
    times, kinds = [], []
    started = time.perf_counter()
    for row in rows:
        values = {c: row[c] for c in NAMES}
        values["updated_at"] = None if values["updated_at"] is None else f"{values['updated_at']}"
        guard = f"_cdc_key = {_literal(row['key'])} and _cdc_seq < {_literal(row['seq'])}"
        if row["action"] == "delete":
            sql, kind = f"delete from {target} where {guard}", "delete"
        elif row["action"] == "insert":
            literals = [_literal(values[c]) for c in NAMES] + [_literal(row["key"]), _literal(row["seq"]), f"timestamp{_literal(row['source_ts'])}"]
            literals[NAMES.index("updated_at")] = f"timestamp{_literal(values['updated_at'])}"
            literals[NAMES.index("amount")] = f"cast({_literal(str(values['amount']))} as decimal(18,2))"
            sql, kind = f"insert into {target} values ({', '.join(literals)})", "insert"
        else:
            sets = [f"{c} = {_literal(values[c])}" for c in NAMES if c not in ("id", "updated_at", "amount")]
            sets += [f"updated_at = timestamp{_literal(values['updated_at'])}", f"amount = {values['amount']}",
                     f"_cdc_seq = {_literal(row['seq'])}", f"_cdc_source_ts = timestamp{_literal(row['source_ts'])}"]
            sql, kind = f"update {target} set {', '.join(sets)} where {guard}", "update"
        t0 = time.perf_counter()
        run(spark, sql)
        times.append(time.perf_counter() - t0)
        kinds.append(kind)
        if time.perf_counter() - started > budget_s and len(times) >= 3:
            break
    return {"statements": len(times), "seconds_per_statement": sum(times) / len(times),
            "kinds": {k: kinds.count(k) for k in set(kinds)}}


# --- lever prototypes ------------------------------------------------------------------------------
# Both start from the product's own batch view (<model>__cdc_batch, created by replaying the
# product's statements up to the batch view) and keep its seq guards and tombstones.

def _model_select(batch_view: str) -> str:
    """The mirror model's SELECT with one from_json per row instead of one per column."""
    return f"""
        select parsed.*, _cdc_key, _cdc_action, _cdc_seq, _cdc_source_ts, _cdc_unavailable
        from (select *, from_json(_cdc_row, '{JSON_SCHEMA}') as parsed from {batch_view})
    """


def _tombstone_merge_sql(tombstones: str, changes: str, where: str) -> str:
    """The product's tombstone MERGE over the rows of changes that match where."""
    return f"""merge into {tombstones} as tombstone
        using (select _cdc_key, _cdc_action, _cdc_seq, _cdc_source_ts from {changes} where {where}) as change
            on tombstone._cdc_key = change._cdc_key
        when matched and change._cdc_seq > tombstone._cdc_seq and change._cdc_action = 'delete' then update set
            _cdc_seq = change._cdc_seq, _cdc_source_ts = change._cdc_source_ts
        when matched and change._cdc_seq > tombstone._cdc_seq then delete
        when not matched and change._cdc_action = 'delete' then insert (_cdc_key, _cdc_seq, _cdc_source_ts)
            values (change._cdc_key, change._cdc_seq, change._cdc_source_ts)"""


def one_scan_statements(target: str, tombstones: str, batch_view: str) -> list[str]:
    """Lever: no classification join with the mirror (one target scan, in the MERGE);
    tombstones still guard inserts; counts would come from the MERGE's snapshot summary.
    The mirror MERGE goes first: writing the tombstones invalidates the cached changes (they
    read the tombstones), and a recomputed cache would see this batch's own tombstones."""
    changes = "bench_one_scan_changes"
    return [
        f"""cache table {changes} as
        select batch.*, tombstone._cdc_seq as _cdc_tombstone_seq
        from ({_model_select(batch_view)}) as batch
        left join {tombstones} as tombstone on batch._cdc_key = tombstone._cdc_key""",
        f"""merge into {target} as mirror
        using (select * from {changes} where _cdc_tombstone_seq is null or _cdc_seq > _cdc_tombstone_seq) as change
            on mirror._cdc_key = change._cdc_key
        when matched and change._cdc_seq > mirror._cdc_seq and change._cdc_action = 'delete' then delete
        when matched and change._cdc_seq > mirror._cdc_seq then update set
            {', '.join(f'{c} = change.{c}' for c in WRITTEN if c != '_cdc_key')}
        when not matched and change._cdc_action != 'delete' then insert ({', '.join(WRITTEN)})
            values ({', '.join('change.' + c for c in WRITTEN)})""",
        _tombstone_merge_sql(tombstones, changes, "_cdc_action = 'delete' or _cdc_tombstone_seq is not null"),
        f"uncache table if exists {changes}",
    ]


def key_only_merge_statements(target: str, tombstones: str, batch_view: str) -> list[str]:
    """Lever: classify against (_cdc_key, _cdc_seq) as the product does, then one MERGE that only
    deletes matched rows and inserts the new versions, so its target scan needs only the key and
    seq columns (an UPDATE reads every column of the target). Rows whose source omitted columns
    (_cdc_unavailable) would still need the product's UPDATE path; the benchmark has none."""
    changes = "bench_key_only_changes"
    return [
        f"""cache table {changes} as
        with batch as ({_model_select(batch_view)}),
        mirror_keys as (select _cdc_key, _cdc_seq from {target}),
        tombstone_keys as (select _cdc_key, _cdc_seq from {tombstones})
        select batch.*, tombstone_keys._cdc_seq as _cdc_tombstone_seq,
            case
                when mirror_keys._cdc_seq is not null and batch._cdc_seq <= mirror_keys._cdc_seq then 'skip'
                when mirror_keys._cdc_seq is not null and batch._cdc_action = 'delete' then 'delete'
                when mirror_keys._cdc_seq is not null then 'update'
                when batch._cdc_seq <= tombstone_keys._cdc_seq then 'skip'
                when batch._cdc_action = 'delete' then 'tombstone'
                else 'insert'
            end as _cdc_change
        from batch
        left join mirror_keys on batch._cdc_key = mirror_keys._cdc_key
        left join tombstone_keys on batch._cdc_key = tombstone_keys._cdc_key""",
        f"select count(*), count_if(_cdc_change = 'insert'), count_if(_cdc_change = 'update') from {changes}",
        _tombstone_merge_sql(tombstones, changes, "_cdc_change in ('delete', 'tombstone') or _cdc_tombstone_seq is not null"),
        f"""merge into {target} as mirror
        using (
            select _cdc_key, _cdc_seq, cast(null as string) as _cdc_new_key, {', '.join('cast(null as ' + t + ') as ' + c for c, t in COLUMNS)}, cast(null as timestamp) as _cdc_source_ts
            from {changes} where _cdc_change in ('update', 'delete')
            union all
            select _cdc_key, _cdc_seq, _cdc_key as _cdc_new_key, {', '.join(NAMES)}, _cdc_source_ts
            from {changes} where _cdc_change in ('update', 'insert')
        ) as change
            on mirror._cdc_key = change._cdc_key and change._cdc_new_key is null
        when matched and change._cdc_seq > mirror._cdc_seq then delete
        when not matched and change._cdc_new_key is not null then insert ({', '.join(WRITTEN)})
            values ({', '.join('change.' + c for c in NAMES)}, change._cdc_new_key, change._cdc_seq, change._cdc_source_ts)""",
        f"uncache table if exists {changes}",
    ]
