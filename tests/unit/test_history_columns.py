"""How a stored history follows its model's columns (python_jobs/apply/history_columns.py)."""

from python_jobs.apply.history_columns import plan_history_columns, plan_history_retypes


def plan(stored, model, mode="append_new_columns", track=None):
    return plan_history_columns(stored, model, mode, track, "item_versions", "shop.item_versions")


def test_added_columns_go_to_their_places_in_the_models_order():
    assert plan(["id", "name"], ["id", "name"]) == {"error": None, "add": []}
    assert plan(["ID", "Name"], ["id", "name"])["add"] == []
    assert plan(["id", "name"], ["note", "id", "tier", "name", "extra"])["add"] == [
        {"column": "note", "after": None}, {"column": "tier", "after": "id"}, {"column": "extra", "after": "name"}]
    assert plan(["id"], ["id", "a", "b"], "sync_all_columns")["add"] == [{"column": "a", "after": "id"},
                                                                         {"column": "b", "after": "a"}]


def test_a_dropped_renamed_or_moved_column_asks_for_a_rebuild():
    for model in (["id"], ["id", "title"], ["name", "id"], ["name", "id", "note"]):
        result = plan(["id", "name"], model)
        assert result["add"] == [] and "a column dropped, renamed or moved needs it rebuilt" in result["error"]
        assert "dbt run --full-refresh --select item_versions" in result["error"]


def test_an_added_column_is_refused_under_fail_or_ignore_and_when_tracked():
    for mode in ("fail", "ignore"):
        error = plan(["id"], ["id", "tier"], mode)["error"]
        assert f"on_schema_change is '{mode}': set it to 'append_new_columns' to add tier in place" in error
    error = plan(["id"], ["id", "tier"], track=["Tier"])["error"]
    assert "tier is new and in track_columns" in error and "--full-refresh" in error


def test_a_retyped_column_is_widened_in_place_or_asks_for_a_rebuild():
    def retypes(stored, model, mode="append_new_columns"):
        return plan_history_retypes(stored, model, mode, "item_versions", "shop.item_versions", "spark")


    assert retypes([("id", "int"), ("price", "decimal(12,4)")], [("id", "int"), ("price", "decimal(12,4)")]) == {
        "error": None, "widen": []}
    assert retypes([("id", "int"), ("price", "decimal(12,4)")], [("id", "bigint"), ("price", "decimal(16,4)")])["widen"] == [
        {"column": "id", "old_type": "int", "new_type": "bigint"},
        {"column": "price", "old_type": "decimal(12,4)", "new_type": "decimal(16,4)"}]
    # A scale widened, a narrowing, another type: written into the stored column the values would be rounded or null.
    for old, new in (("decimal(12,4)", "decimal(14,6)"), ("bigint", "int"), ("int", "string")):
        result = retypes([("id", "int"), ("price", old)], [("id", "int"), ("price", new)])
        assert result["widen"] == [], (old, new)
        assert f"column price is {old} in shop.item_versions and {new} in the model" in result["error"]
        assert "dbt run --full-refresh --select item_versions" in result["error"]
    # Under fail or ignore a retype, even a widening, stops the run, as an added column does.
    for mode in ("fail", "ignore"):
        result = retypes([("id", "int")], [("id", "bigint")], mode)
        assert result["widen"] == [] and f"on_schema_change is '{mode}'" in result["error"] and "id int -> bigint" in result["error"]
