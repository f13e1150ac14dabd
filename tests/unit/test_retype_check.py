"""A column the source retyped beyond what its mirror column holds (python_jobs/apply/retype_check.py)."""

import json

from python_jobs.apply.retype_check import retype_problem


def event(seq: str, columns: dict[str, str], retyped: dict[str, str], ddl: str | None = None) -> tuple[str, str]:
    return seq, json.dumps({"ddl": ddl, "columns": [{"name": name, "type": type_name} for name, type_name in columns.items()],
                            "existing_rows": {}, "retyped_columns": retyped})


def test_a_decimal_or_integer_widened_beyond_the_mirror_column_is_named():
    events = [event("0002", {"id": "integer", "balance": "numeric(16,4)"}, {"balance": "numeric(12,2)"})]
    problem = retype_problem(events, {"id": "int", "balance": "decimal(12,2)"}, "shop.accounts", "accounts")
    assert problem.startswith("cdc_merge model 'accounts': shop.accounts.balance is numeric(16,4) at the source since "
                              "the schema change at seq 0002 (it was numeric(12,2)), and the mirror's column balance (decimal(12,2)) cannot hold")
    mysql = [event("0003", {"Qty": "bigint(20)"}, {"Qty": "int(11)"}, "alter table shop.t\n  modify Qty bigint")]
    assert ("shop.t.Qty is bigint(20) at the source since 'alter table shop.t modify Qty bigint' (seq 0003) (it was "
            "int(11))") in retype_problem(mysql, {"qty": "Nullable(Int32)"}, "shop.t", "t")


def test_a_history_is_told_that_a_widening_needs_no_rebuild():
    """Its columns are widened in place as a mirror's (history_columns.py): the message said to rebuild."""
    events = [event("0002", {"id": "integer", "balance": "numeric(16,4)"}, {"balance": "numeric(12,4)"})]
    problem = retype_problem(events, {"id": "int", "balance": "decimal(12,4)"}, "shop.accounts", "accounts_history", history=True)
    assert problem.startswith("cdc_history model 'accounts_history': shop.accounts.balance is numeric(16,4)")
    assert "a widening (int to bigint, a decimal's precision at its scale) is widened in place" in problem
    assert "dbt run --full-refresh --select accounts_history" in problem


def test_a_mirror_column_that_holds_the_new_type_or_is_not_a_number_is_left_alone():
    widened = [event("0002", {"balance": "numeric(16,4)", "ratio": "double precision", "note": "text"},
                     {"balance": "numeric(12,2)", "ratio": "real", "note": "character varying(10)"})]
    assert retype_problem(widened, {"balance": "decimal(18,4)", "ratio": "float", "note": "string"}, "s.t", "t") is None
    assert retype_problem(widened, {"balance": "Nullable(Decimal(20, 6))"}, "s.t", "t") is None
    assert retype_problem(widened, {"balance": "string"}, "s.t", "t") is None
    unbounded = [event("0002", {"n": "numeric"}, {"n": "numeric(10,2)"})]
    assert retype_problem(unbounded, {"n": "decimal(38,10)"}, "s.t", "t") is not None
    assert retype_problem([event("0002", {"n": "bigint"}, {})], {"n": "int"}, "s.t", "t") is None  # not retyped


def test_an_integer_made_unsigned_or_a_decimal_of_as_many_digits_is_not_taken_for_one_the_mirror_holds():
    """By digits alone, an int column held an int unsigned's values (up to 4,294,967,295) and a decimal(10,0)'s:
    the run went on until a value it could not hold came, and failed then."""
    unsigned = [event("0004", {"tier": "int(10) unsigned"}, {"tier": "int(11)"}, "alter table shop.c modify tier int unsigned")]
    assert "shop.c.tier is int(10) unsigned at the source" in retype_problem(unsigned, {"tier": "int"}, "shop.c", "c")
    assert retype_problem(unsigned, {"tier": "bigint"}, "shop.c", "c") is None
    assert retype_problem(unsigned, {"tier": "decimal(10,0)"}, "shop.c", "c") is None
    made_decimal = [event("0005", {"n": "numeric(10,0)"}, {"n": "integer"})]
    assert retype_problem(made_decimal, {"n": "int"}, "s.t", "t") is not None
    assert retype_problem([event("0005", {"n": "numeric(9,0)"}, {"n": "integer"})], {"n": "int"}, "s.t", "t") is None
    signed = [event("0006", {"q": "smallint"}, {"q": "tinyint unsigned"})]
    assert retype_problem(signed, {"q": "Nullable(UInt16)"}, "s.t", "t") is not None  # -32,768 is no UInt16
    assert retype_problem(signed, {"q": "Nullable(Int16)"}, "s.t", "t") is None
