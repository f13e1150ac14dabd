"""How a stored history follows its model's columns (python_jobs/apply/history_columns.py)."""

from python_jobs.apply.history_columns import plan_history_columns


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
