"""A model's declared column types are checked when it compiles (declared_types.py)."""

from __future__ import annotations

import pytest

from python_jobs.apply.declared_types import declared_type_problem


@pytest.mark.parametrize("data_type", ["string", "BIGINT", "int", "decimal(20,0)", "decimal(38, 9)", "timestamp_ntz",
                                       "array<string>", "map<string, int>", "struct<a: int>", "varchar(20)", " double ",
                                       "int unsigned", "variant"])
def test_types_the_engines_know_pass(data_type):
    assert declared_type_problem("orders", "total", data_type) is None


def test_a_typo_names_the_model_the_column_the_type_and_the_closest_type():
    problem = declared_type_problem("orders", "id", "bigitn")
    assert problem is not None
    assert "model 'orders'" in problem and "column 'id'" in problem and "'bigitn'" in problem
    assert "did you mean 'bigint'?" in problem


@pytest.mark.parametrize("data_type", ["", None, "(10,2)", "strnig(5)"])
def test_no_type_or_an_unknown_word_is_refused(data_type):
    assert declared_type_problem("orders", "total", data_type) is not None
