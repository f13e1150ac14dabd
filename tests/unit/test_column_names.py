"""keyword_column_problem: a model column Databend's SQL reads as a keyword is refused by name, with
what to change (a key column cannot be renamed)."""

from __future__ import annotations

from python_jobs.apply.column_names import keyword_column_problem


def test_a_keyword_column_is_told_its_new_name_and_a_keyword_key_its_choices():
    problem = keyword_column_problem(["id", "Order", "note"], ["id"], "items")
    assert problem is not None and "column Order is a word Databend reads as SQL" in problem
    assert "json_fields={'order_': 'Order'}" in problem
    key_problem = keyword_column_problem(["rows", "note"], ["ROWS"], "items")
    assert key_problem is not None and "unique_key column rows" in key_problem and "on Spark + Iceberg" in key_problem


def test_plain_names_and_names_with_an_underscore_pass():
    assert keyword_column_problem(["id", "order_", "ordered", "_cdc_key"], ["id"], "items") is None
