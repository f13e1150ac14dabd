"""How a stored mirror follows its model's columns (python_jobs/apply/schema_plan.py): each
on_schema_change against each kind of difference; tests/test_schema_changes.py runs them on the engines."""

from __future__ import annotations

import pytest

from python_jobs.apply.schema_plan import contract_error, deletes_mode_error, history_deletes_mode, plan_schema, type_change

MIRROR = [("id", "int"), ("name", "string"), ("price", "decimal(10,2)"), ("old", "string")]
# name kept, price wider, old no longer selected, tier new.
MODEL = [("id", "bigint"), ("name", "string"), ("price", "decimal(12,2)"), ("tier", "string")]


def plan(mode, mirror=MIRROR, model=MODEL, kept_before=()):
    return plan_schema(mirror, model, mode, list(kept_before), "items", "mirror.items", "cdc_spark")


@pytest.mark.parametrize(
    "old, new, expected",
    [("int", "bigint", "widen"), ("tinyint", "int", "widen"), ("bigint", "int", "incompatible"), ("float", "double", "widen"),
     ("decimal(10,2)", "decimal(12,2)", "widen"), ("decimal(10,2)", "decimal(12,3)", "incompatible"),
     ("decimal(12,2)", "decimal(10,2)", "incompatible"), ("string", "int", "incompatible"), ("int", "string", "incompatible")],
)
def test_only_changes_every_old_value_fits_widen(old, new, expected):
    assert type_change(old, new) == expected


def test_append_new_columns_adds_widens_and_keeps_what_is_no_longer_selected():
    planned = plan("append_new_columns")
    assert [(step["change"], step["column"]) for step in planned["steps"]] == [
        ("add_pending", "tier"), ("widen_pending", "id"), ("widen_pending", "price"), ("kept", "old")]
    assert planned["to_backfill"] == ["tier", "id", "price"]
    assert planned["written"] == [*MODEL, ("old", "string")]
    assert planned["notes"] == ["id widened int -> bigint", "price widened decimal(10,2) -> decimal(12,2)",
                                "old kept, null in rows written from now on"]
    # A column kept earlier is recorded once.
    assert [step["column"] for step in plan("append_new_columns", kept_before=["old"])["steps"]] == ["tier", "id", "price"]
    # A kept column the model selects again is backfilled, as an added one (null in the rows written without it).
    again = plan("append_new_columns", model=[*MODEL, ("old", "string")], kept_before=["old"])
    assert again["steps"][-1] == {"change": "select_pending", "column": "old", "old_type": None, "new_type": "string"}
    assert again["to_backfill"] == ["tier", "id", "price", "old"]
    assert plan("ignore", model=MIRROR, kept_before=["old"])["steps"] == []


def test_sync_all_columns_drops_what_is_no_longer_selected():
    planned = plan("sync_all_columns")
    assert planned["steps"][-1] == {"change": "drop", "column": "old", "old_type": "string", "new_type": None}
    assert planned["written"] == MODEL and "old dropped" in planned["notes"]


def test_ignore_writes_the_mirror_s_columns_and_says_what_it_ignored():
    planned = plan("ignore", model=[("id", "string"), ("name", "string")])
    assert planned["steps"] == [] and planned["written"] == MIRROR and planned["notes"] == ["model's column changes ignored"]
    assert planned["ignored"] == ("column id int -> string; column price no longer selected; column old no longer selected")


def test_fail_and_a_type_no_engine_changes_in_place_say_what_to_do():
    assert "on_schema_change is 'fail'" in plan("fail")["error"]
    assert "dbt run --full-refresh --select items" in plan("fail")["error"]
    incompatible = plan("append_new_columns", model=[("id", "string")])["error"]
    assert incompatible.startswith("cdc_merge model 'items': column id is int in mirror.items and string in the model: cdc_spark cannot")
    assert "Cast the column in the model" in incompatible


def test_the_same_columns_change_nothing():
    planned = plan("fail", model=MIRROR)
    assert planned["error"] is None and not planned["changed"] and planned["steps"] == [] and planned["written"] == MIRROR


@pytest.mark.parametrize(
    "declared, produced, expected",
    [
        ([("id", "int"), ("Name", "string")], [("id", "int"), ("name", "string")], None),
        ([("id", "bigint"), ("name", "string")], [("id", "int"), ("name", "string")], ["id is int in the model but declared bigint"]),
        ([("id", "int")], [("id", "int"), ("name", "string")], ["name is selected but not declared"]),
        ([("id", "int"), ("gone", "int")], [("id", "int")], ["gone is declared but the model does not select it"]),
        ([("id", "")], [("id", "int")], ["id has no data_type"]),
    ],
)
def test_an_enforced_contract_names_each_difference_from_the_model_s_columns(declared, produced, expected):
    error = contract_error("products", declared, produced)
    if expected is None:
        assert error is None
    else:
        assert error.startswith("cdc_merge model 'products': its enforced contract differs") and all(e in error for e in expected)


@pytest.mark.parametrize(
    "deletes, columns, stored",
    [("hard", ["id", "_cdc_key"], None), ("soft", ["id", "_CDC_DELETED"], None),
     ("soft", ["id", "_cdc_key"], "hard"), ("hard", ["id", "_cdc_deleted"], "soft")],
)
def test_a_mirror_applies_only_in_the_deletes_mode_it_was_built_with(deletes, columns, stored):
    error = deletes_mode_error("products", "mirror.products", deletes, columns)
    if stored is None:
        assert error is None
    else:
        assert f"was built with deletes='{stored}'" in error and "--full-refresh --select products" in error


HISTORY_OWN = ["valid_from", "valid_to", "is_current", "is_deleted", "_cdc_key", "_cdc_seq", "_cdc_source_ts",
               "_cdc_updated_seq", "_cdc_unsent_columns"]


def test_a_history_s_contract_leaves_out_its_own_columns_and_names_the_history():
    # valid_from and is_current documented in YAML (as models/history/_history__models.yml does) are the history's.
    declared = [("id", "bigint"), ("name", "string"), ("valid_from", "timestamp"), ("Is_Current", ""), ("_cdc_seq", "")]
    assert contract_error("customers_history", declared, [("id", "bigint"), ("name", "string")], "cdc_history", HISTORY_OWN) is None
    error = contract_error("customers_history", declared, [("id", "int"), ("name", "string")], "cdc_history", HISTORY_OWN)
    assert error.startswith("cdc_history model 'customers_history': its enforced contract differs")
    assert "id is int in the model but declared bigint" in error and "valid_from" in error.split(". Change")[1]
    assert "valid_from" not in error.split(". Change")[0] and "Is_Current" not in error


@pytest.mark.parametrize(
    "deletes, stored, refused, record",
    [("hard", "hard", None, False), ("soft", "soft", None, False),
     ("soft", "hard", "hard", False), ("hard", "soft", "soft", False),
     # Built before the mode was recorded: applied as configured, and the mode recorded.
     ("hard", None, None, True), ("soft", None, None, True), ("soft", "", None, True)],
)
def test_a_history_applies_only_in_the_deletes_mode_it_recorded(deletes, stored, refused, record):
    mode = history_deletes_mode("customers_history", "shop.customers_history", deletes, stored)
    assert mode["record"] is record
    if refused is None:
        assert mode["error"] is None
    else:
        assert mode["error"] == (f"cdc_history model 'customers_history': shop.customers_history was built with deletes='{refused}'"
                                 f" and the model now says deletes='{deletes}'. Rebuild it from the raw log in the new mode with"
                                 " `dbt run --full-refresh --select customers_history`, or set deletes back to"
                                 f" '{refused}'.")


@pytest.mark.parametrize(
    "deletes, stored, in_comment, refused, record",
    [  # A Databend history built when the mode was its comment: known, and moved at its next run.
        ("soft", None, "soft", None, True), ("hard", None, "soft", "soft", False), ("soft", "", "hard", "hard", False),
        # Recorded where it belongs: a comment is the user's, whatever it holds.
        ("hard", "hard", "soft", None, False), ("soft", "hard", "soft", "hard", False)],
)
def test_a_databend_history_whose_mode_is_its_comment_keeps_it_and_moves_it(deletes, stored, in_comment, refused, record):
    mode = history_deletes_mode("customers_history", "shop.customers_history", deletes, stored, in_comment)
    assert (mode["record"], mode["clear_comment"]) == (record, record)
    assert (mode["error"] is None) is (refused is None)
    if refused:
        assert f"was built with deletes='{refused}' and the model now says deletes='{deletes}'" in mode["error"]
