"""When the compiled fold goes in and what it does to the session's excluded rules
(adapter/dbt/adapters/cdc_spark/compiled_fold.py); the session itself: tests/test_compiled_fold.py."""

from dbt.adapters.cdc_spark.compiled_fold import EXCLUDED_RULES, SPARK_FOLD_RULE, SWITCH_ENV, excluded_rules, wanted


def test_wanted_unless_switched_off_or_the_profile_sets_the_excluded_rules():
    assert wanted({}, {})
    assert wanted({SWITCH_ENV: "1"}, {"spark.sql.shuffle.partitions": "4"})
    for off in ("0", "false", "off", " no "):
        assert not wanted({SWITCH_ENV: off}, {})
    assert not wanted({}, {EXCLUDED_RULES: "org.apache.spark.sql.catalyst.optimizer.CollapseRepartition"})


def test_excluded_rules_gain_and_lose_spark_fold_rule_only():
    other = "org.apache.spark.sql.catalyst.optimizer.CollapseRepartition"
    assert excluded_rules(None, True) == SPARK_FOLD_RULE
    assert excluded_rules(None, False) == ""
    assert excluded_rules(f"{other}, ", True) == f"{other},{SPARK_FOLD_RULE}"
    assert excluded_rules(f"{SPARK_FOLD_RULE},{other}", True) == f"{other},{SPARK_FOLD_RULE}"
    assert excluded_rules(f"{SPARK_FOLD_RULE},{other}", False) == other
