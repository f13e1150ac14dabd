"""The optimizer's fold of driver rows by generated code (adapter/dbt/adapters/cdc_spark/compiled_fold.py,
jvm/iceberg/cdc_merge/iceberg/CompiledLocalProjection.java) in a real session: a batch-sized local
relation folded by it gives the rows Spark's own rule gives, for the kinds of columns a mirror model
computes from events; a small one is left to Spark's rule; switched off, Spark's rule is back."""

from __future__ import annotations

import pytest

from dbt.adapters.cdc_spark import compiled_fold

# The kinds of columns a mirror's model computes from an event: JSON fields, casts to its types,
# nulls, nested values, hashes, and a condition.
PROJECTION = """
    get_json_object(payload, '$.after.id') as id,
    cast(get_json_object(payload, '$.after.price') as decimal(12, 2)) as price,
    to_timestamp(get_json_object(payload, '$.ts')) as changed_at,
    from_json(payload, 'after struct<id: bigint, tags: array<string>, note: string>').after as after,
    case when get_json_object(payload, '$.op') = 'd' then true else false end as deleted,
    sha2(payload, 256) as payload_hash,
    named_struct('seq', seq, 'id', get_json_object(payload, '$.after.id')) as position,
    concat_ws('|', get_json_object(payload, '$.after.note'), cast(seq as string)) as joined
"""


def events(count: int) -> str:
    rows = []
    for seq in range(count):
        note = "null" if seq % 7 == 0 else f'"note {seq} \\\\u00e9"'
        op = "d" if seq % 5 == 0 else "u"
        payload = (f'{{"op": "{op}", "ts": "2026-12-0{1 + seq % 9} 10:{seq % 60:02d}:00", '
                   f'"after": {{"id": {seq}, "price": "{seq}.{seq % 100:02d}", "tags": ["a{seq}", null], "note": {note}}}}}')
        rows.append(f"({seq}, '{payload}')")
    return f"select {PROJECTION} from values {', '.join(rows)} as batch(seq, payload)"


def folded(spark, sql: str):
    frame = spark.sql(sql)
    plan = frame._jdf.queryExecution().optimizedPlan()
    return plan.getClass().getSimpleName(), sorted(map(tuple, frame.collect()), key=str)


@pytest.fixture()
def fold_switch(spark, monkeypatch):
    """Sets $CDC_MERGE_COMPILED_FOLD and applies it as the cursor does before a statement."""
    def switch(on: bool) -> None:
        monkeypatch.setenv(compiled_fold.SWITCH_ENV, "1" if on else "0")
        compiled_fold.ensure_compiled_fold(spark, {})

    yield switch
    monkeypatch.delenv(compiled_fold.SWITCH_ENV)
    compiled_fold.ensure_compiled_fold(spark, {})


def rules_in(spark) -> tuple[list[str], list[str]]:
    extra = spark._jvm.scala.collection.JavaConverters.seqAsJavaList(spark._jsparkSession.experimental().extraOptimizations())
    return [rule.getClass().getName() for rule in extra], (spark.conf.get(compiled_fold.EXCLUDED_RULES, "") or "").split(",")


def test_a_batch_folded_by_generated_code_gives_the_rows_of_spark_rule(spark, fold_switch):
    sql = events(3 * compiled_fold.MIN_ROWS)
    fold_switch(False)
    assert rules_in(spark)[0] == [] and compiled_fold.SPARK_FOLD_RULE not in rules_in(spark)[1]
    interpreted_plan, interpreted = folded(spark, sql)

    fold_switch(True)
    extra, excluded = rules_in(spark)
    assert extra == [compiled_fold.COMPILED_FOLD_CLASS] and compiled_fold.SPARK_FOLD_RULE in excluded
    compiled_plan, compiled = folded(spark, sql)

    # Spark's rule excluded, only the compiled fold can have made the projection a local relation.
    assert interpreted_plan == compiled_plan == "LocalRelation"
    assert len(compiled) == 3 * compiled_fold.MIN_ROWS
    assert compiled == interpreted
    deleted = [row for row in compiled if row[4]]
    assert len(deleted) == 3 * compiled_fold.MIN_ROWS // 5
    assert {row[3]["note"] for row in compiled if int(row[0]) % 7 == 0} == {None}


def test_a_small_batch_and_filters_are_spark_rule_own(spark, fold_switch):
    fold_switch(True)
    plan, rows = folded(spark, events(10))
    assert plan == "LocalRelation" and len(rows) == 10
    plan, rows = folded(spark, f"select * from ({events(compiled_fold.MIN_ROWS)}) where deleted limit 3")
    assert plan == "LocalRelation" and len(rows) == 3 and all(row[4] for row in rows)


def test_switched_off_spark_rule_is_back_and_other_exclusions_stay(spark, fold_switch):
    fold_switch(False)
    spark.conf.set(compiled_fold.EXCLUDED_RULES, "org.apache.spark.sql.catalyst.optimizer.CollapseRepartition")
    try:
        fold_switch(True)
        assert rules_in(spark)[1] == ["org.apache.spark.sql.catalyst.optimizer.CollapseRepartition", compiled_fold.SPARK_FOLD_RULE]
        fold_switch(False)
        assert rules_in(spark) == ([], ["org.apache.spark.sql.catalyst.optimizer.CollapseRepartition"])
        assert folded(spark, events(compiled_fold.MIN_ROWS))[0] == "LocalRelation"
    finally:
        spark.conf.unset(compiled_fold.EXCLUDED_RULES)
